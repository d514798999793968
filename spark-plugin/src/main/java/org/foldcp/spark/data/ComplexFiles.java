package org.foldcp.spark.data;

import java.io.Serializable;

/**
 * The files of one pair tensor in a directory of complexes ({@link NpyDirectory}): its .npy,
 * its mask's .npy or null, and the pair file's length (what a task will read, for packing
 * complexes into partitions). Paths are Hadoop path strings with their scheme.
 */
record ComplexFiles(String id, String pair, String mask, long pairBytes) implements Serializable {}
