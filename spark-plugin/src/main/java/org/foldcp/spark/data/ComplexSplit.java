package org.foldcp.spark.data;

import java.util.List;
import org.apache.spark.sql.connector.read.InputPartition;

/** The complexes one read task reads, in order. */
record ComplexSplit(List<ComplexFiles> complexes) implements InputPartition {}
