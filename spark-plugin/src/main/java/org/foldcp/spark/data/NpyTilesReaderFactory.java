package org.foldcp.spark.data;

import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.util.SerializableConfiguration;
import org.foldcp.spark.tiles.RowBands;

/**
 * Ships what the executors need to read: the driver's Hadoop configuration (broadcast once, as
 * Spark's own file sources do, for the file systems' settings and credentials) and the band limit.
 */
final class NpyTilesReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;

  private final Broadcast<SerializableConfiguration> conf;
  private final RowBands bands;

  NpyTilesReaderFactory(Broadcast<SerializableConfiguration> conf, RowBands bands) {
    this.conf = conf;
    this.bands = bands;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    return new NpyTilesReader(conf.value().value(), bands, ((ComplexSplit) partition).complexes());
  }
}
