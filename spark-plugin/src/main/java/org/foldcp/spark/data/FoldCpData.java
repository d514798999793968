package org.foldcp.spark.data;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.tiles.RowBands;
import org.foldcp.spark.tiles.TileRecord;
import scala.Tuple2;

/**
 * Complexes from and to distributed storage, read and written on the executors: any Hadoop
 * file system path (file:, hdfs:, s3a: where its connector is on the class path; a path without
 * a scheme is on the default file system, fs.defaultFS).
 *
 * <pre>{@code
 * Dataset<Row> tiles = FoldCpData.tilesFromDirectory(spark, "hdfs:///complexes");  // <id>.npy [+ <id>.mask.npy]
 * Dataset<Row> out = FoldCp.apply(tiles, stack);
 * FoldCpData.writeNpyDirectory(out, "hdfs:///folded");                             // <id>.npy per complex
 * }</pre>
 */
public final class FoldCpData {
  private FoldCpData() {}

  /**
   * The pair tensors of {@code dir} as tile rows (PairTiles.SCHEMA), read on the executors by the
   * data source {@code foldcp-npy} ({@link NpyTilesSource}); the directory convention is
   * {@link NpyDirectory}'s. The names are listed and checked now, so a directory that breaks the
   * convention fails at this call; shapes are checked as the executors read.
   */
  public static Dataset<Row> tilesFromDirectory(SparkSession spark, String dir) {
    NpyDirectory.list(hadoopConf(spark), dir); // fail here, not at the first action
    return spark.read().format(NpyTilesSource.SHORT_NAME).load(dir);
  }

  /**
   * As {@link #tilesFromDirectory(SparkSession, String)} with complexes cut into row bands of at
   * most {@code maxTileBytes} pair bytes (1 GiB by default, RowBands.DEFAULT_MAX_TILE_BYTES).
   */
  public static Dataset<Row> tilesFromDirectory(SparkSession spark, String dir, long maxTileBytes) {
    new RowBands(maxTileBytes);
    NpyDirectory.list(hadoopConf(spark), dir);
    return spark.read().format(NpyTilesSource.SHORT_NAME).option(NpyTilesScan.MAX_TILE_BYTES, maxTileBytes).load(dir);
  }

  /** The output directory must not exist yet, and its parent must not be a file (checked on the driver). */
  private static void requireNewDirectory(SparkSession spark, String dir) {
    try {
      org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(dir);
      org.apache.hadoop.fs.FileSystem fs = p.getFileSystem(hadoopConf(spark));
      InvalidInputException.require(!fs.exists(p), "output directory", "'" + dir + "'",
          "exists already: name a new directory (Hadoop's rule for output directories; nothing is overwritten)");
      org.apache.hadoop.fs.Path parent = p.getParent();
      InvalidInputException.require(parent == null || !fs.exists(parent) || fs.getFileStatus(parent).isDirectory(),
          "output directory", "'" + dir + "'", "its parent " + parent + " is a file, not a directory");
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("checking the output directory " + dir, e);
    }
  }

  /** {@link #writeNpyDirectory(Dataset, String, int)} with rank 4: each file (1, N, N, D). */
  public static void writeNpyDirectory(Dataset<Row> tiles, String dir) {
    writeNpyDirectory(tiles, dir, 4);
  }

  /**
   * Writes every complex of {@code tiles} (rows of PairTiles.SCHEMA, e.g. FoldCp.apply's output)
   * as {@code <dir>/<id>.npy}, float32 of shape (1, N, N, D), or (N, N, D) for {@code rank} 3,
   * through Spark's commit protocol with Hadoop's output committer ({@link NpyOutputFormat}): only
   * committed tasks' files appear in {@code dir}, each whole, and {@code _SUCCESS} marks a job that
   * finished. One shuffle brings each complex's tiles into one task, sorted by position; a task
   * then holds one row band of tiles at a time. {@code dir} must not exist yet (Hadoop's rule for
   * output directories). Complex ids name the files: no '/' or ':', no leading '_' or '.'.
   */
  public static void writeNpyDirectory(Dataset<Row> tiles, String dir, int rank) {
    InvalidInputException.require(rank == 3 || rank == 4, "rank", rank,
        "must be 4 for (1, N, N, D) files or 3 for (N, N, D)");
    requireNewDirectory(tiles.sparkSession(), dir); // before the tiles are computed
    String id = PairTiles.SCHEMA.fields()[0].name();
    // the columns of the schema in its order, whatever else the tiles carry (TileRecord.fromRow reads by position)
    Dataset<Row> sorted = tiles.select(PairTiles.SCHEMA.fieldNames()[0], java.util.Arrays.copyOfRange(
            PairTiles.SCHEMA.fieldNames(), 1, PairTiles.SCHEMA.size()))
        .repartition(functions.col(id))
        .sortWithinPartitions(id, PairTiles.SCHEMA.fields()[2].name(), PairTiles.SCHEMA.fields()[3].name());
    JavaPairRDD<String, TileRecord> records = sorted.javaRDD().mapToPair(r -> {
      TileRecord t = TileRecord.fromRow(r);
      return new Tuple2<>(t.complexId, t);
    });
    save(records, dir, rank, hadoopConf(tiles.sparkSession()));
  }

  /** Writes (complex id, tile) records, each complex's consecutive and sorted, as {@code <dir>/<id>.npy}. */
  static void save(JavaPairRDD<String, TileRecord> records, String dir, int rank, Configuration conf) {
    Configuration c = new Configuration(conf);
    c.setInt(NpyOutputFormat.RANK, rank);
    records.saveAsNewAPIHadoopFile(dir, String.class, TileRecord.class, NpyOutputFormat.class, c);
  }

  /**
   * One TriMul layer's weights from a .safetensors file on any Hadoop file system, read on the
   * driver with positional reads (a few MB out of a multi-GB checkpoint), checked as
   * {@link SafeTensors#readLayer(java.nio.file.Path, String, int)} checks them.
   */
  public static LayerWeights readLayer(SparkSession spark, String file, String keyPrefix, int expectedDim) {
    try (HadoopChannel ch = HadoopChannel.open(hadoopConf(spark), new Path(file))) {
      return SafeTensors.readLayer(ch, file, keyPrefix, expectedDim);
    } catch (java.io.FileNotFoundException e) {
      throw InvalidInputException.of("weights file", "'" + file + "'", "does not exist");
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file, e);
    }
  }

  private static Configuration hadoopConf(SparkSession spark) {
    return ((org.apache.spark.sql.classic.SparkSession) spark).sessionState().newHadoopConf();
  }
}
