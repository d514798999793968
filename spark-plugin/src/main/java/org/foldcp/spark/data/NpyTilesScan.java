package org.foldcp.spark.data;

import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.util.SerializableConfiguration;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.tiles.RowBands;

/**
 * The scan of a directory of complexes: the options are checked and the names listed on the
 * driver when the scan is built; complexes are packed into read tasks by bytes, as Spark packs
 * files ({@code spark.sql.files.maxPartitionBytes}, {@code spark.sql.files.openCostInBytes}, and
 * no more bytes per task than spreads the input over the default parallelism).
 */
final class NpyTilesScan implements ScanBuilder, Scan, Batch {
  static final String PATH = "path";
  static final String MAX_TILE_BYTES = "maxTileBytes";

  private final String dir;
  private final RowBands bands;
  private final SparkSession spark;
  private final Configuration hadoopConf;
  private final List<ComplexFiles> complexes;

  NpyTilesScan(CaseInsensitiveStringMap options) {
    dir = options.get(PATH);
    InvalidInputException.require(dir != null && !dir.isBlank(), "option '" + PATH + "' of " + NpyTilesSource.SHORT_NAME,
        String.valueOf(dir), "names the directory of complexes: spark.read().format(\"" + NpyTilesSource.SHORT_NAME
            + "\").load(dir)");
    bands = options.containsKey(MAX_TILE_BYTES) ? new RowBands(maxTileBytes(options.get(MAX_TILE_BYTES)))
        : RowBands.BINARY;
    spark = (SparkSession) org.apache.spark.sql.SparkSession.active();
    hadoopConf = spark.sessionState().newHadoopConf();
    complexes = NpyDirectory.list(hadoopConf, dir);
  }

  private static long maxTileBytes(String value) {
    try {
      return Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      throw InvalidInputException.of("option '" + MAX_TILE_BYTES + "' of " + NpyTilesSource.SHORT_NAME, "'" + value + "'",
          "must be an integer byte count");
    }
  }

  @Override
  public Scan build() {
    return this;
  }

  @Override
  public StructType readSchema() {
    return PairTiles.SCHEMA;
  }

  @Override
  public String description() {
    return NpyTilesSource.SHORT_NAME + " " + dir + " (" + complexes.size() + " pair tensors)";
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    long maxBytes = spark.sessionState().conf().filesMaxPartitionBytes();
    long openCost = spark.sessionState().conf().filesOpenCostInBytes();
    return pack(complexes, maxBytes, openCost, spark.sparkContext().defaultParallelism()).toArray(new InputPartition[0]);
  }

  /** Complexes in order, cut into splits of at most {@code split} bytes each (a complex never splits). */
  static List<ComplexSplit> pack(List<ComplexFiles> complexes, long maxPartitionBytes, long openCost, int parallelism) {
    long total = 0;
    for (ComplexFiles c : complexes) {
      total += c.pairBytes() + openCost;
    }
    long split = Math.min(maxPartitionBytes, Math.max(openCost, total / Math.max(1, parallelism)));
    List<ComplexSplit> out = new ArrayList<>();
    List<ComplexFiles> current = new ArrayList<>();
    long bytes = 0;
    for (ComplexFiles c : complexes) {
      long cost = c.pairBytes() + openCost;
      if (!current.isEmpty() && bytes + cost > split) {
        out.add(new ComplexSplit(List.copyOf(current)));
        current.clear();
        bytes = 0;
      }
      current.add(c);
      bytes += cost;
    }
    if (!current.isEmpty()) {
      out.add(new ComplexSplit(List.copyOf(current)));
    }
    return out;
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new NpyTilesReaderFactory(SerializableConfiguration.broadcast(spark.sparkContext(), hadoopConf), bands);
  }
}
