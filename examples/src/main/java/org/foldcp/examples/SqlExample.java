package org.foldcp.examples;

import static org.apache.spark.sql.functions.col;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.CRC32;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.tensor.Bf16;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.udf.FoldCpFunctions;

/**
 * The SQL example: TriMul layers applied to whole complexes from Spark SQL with the
 * {@code foldcp_trimul} function, and the same through the DataFrame API.
 *
 * <p>In local mode with no arguments, it writes a small weights file (one Pairformer block's
 * two TriMul layers, as a model checkpoint names them) and a few synthetic complexes (pair-tile
 * rows, padded with masked tokens as batched inputs are) to a temporary folder, queries them with
 * SQL and prints a checksum per complex. Run it, after {@code mvn -DskipTests package}, with
 *
 * <pre>
 * java @conf/spark-jvm.opts -cp "examples/target/classes:$(cat examples/target/runtime-classpath.txt)" \
 *   org.foldcp.examples.SqlExample
 * </pre>
 */
public final class SqlExample {
  static final int D = 16;
  /** Tokens per complex (N) and how many of them are padding. */
  private static final int[][] COMPLEXES = {{16, 0}, {24, 3}, {40, 8}};
  static final String OUT_PREFIX = "trunk.blocks.0.tri_mul_out.";
  static final String IN_PREFIX = "trunk.blocks.0.tri_mul_in.";
  /** Applied in order; the direction of each layer follows from its name. */
  static final String LAYERS = OUT_PREFIX + ", " + IN_PREFIX;

  private SqlExample() {}

  public static void main(String[] args) throws IOException {
    SparkConf conf = new SparkConf().setAppName("fold-cp SQL example");
    conf.setIfMissing("spark.master", "local[2]");
    conf.setIfMissing("spark.ui.enabled", "false");
    conf.setIfMissing("spark.sql.shuffle.partitions", "2");
    Path dir = Files.createTempDirectory("foldcp-sql-example-");
    SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
    try {
      run(spark, dir, System.out);
    } finally {
      spark.stop();
      deleteTree(dir);
    }
  }

  static void run(SparkSession spark, Path dir, PrintStream out) {
    Path weights = dir.resolve("trunk.safetensors");
    Map<String, LayerWeights> layers = new LinkedHashMap<>();
    layers.put(OUT_PREFIX, LayerWeights.random(D, 11, true));
    layers.put(IN_PREFIX, LayerWeights.random(D, 12, true));
    SafeTensors.writeLayers(weights, layers, "BF16");

    Path table = dir.resolve("complexes.parquet");
    spark.createDataFrame(syntheticComplexes(), PairTiles.SCHEMA).write().parquet(table.toString());

    FoldCpFunctions.register(spark);
    spark.read().parquet(table.toString()).createOrReplaceTempView("complexes");
    // Parameters rather than literals pasted into the text: a path may hold quotes.
    List<Row> viaSql = spark.sql(
        "SELECT complex_id, n_tokens, foldcp_trimul(pair, n_tokens, dim, mask, :weights, :layers) AS folded"
            + " FROM complexes ORDER BY complex_id",
        Map.<String, Object>of("weights", weights.toString(), "layers", LAYERS)).collectAsList();

    out.printf(Locale.ROOT, "fold-cp SQL example: foldcp_trimul over %d complexes (D = %d), layers %s%n",
        viaSql.size(), D, LAYERS);
    out.println("  weights  " + weights);
    for (Row r : viaSql) {
      out.println("  " + checksumLine(r.getString(0), r.getInt(1), (byte[]) r.get(2)));
    }

    List<Row> viaColumns = spark.table("complexes")
        .select(col("complex_id"), FoldCpFunctions.trimul(col("pair"), col("n_tokens"), col("dim"), col("mask"),
            weights.toString(), LAYERS))
        .orderBy("complex_id").collectAsList();
    boolean same = viaColumns.size() == viaSql.size();
    for (int q = 0; same && q < viaSql.size(); q++) {
      same = Arrays.equals((byte[]) viaSql.get(q).get(2), (byte[]) viaColumns.get(q).get(1));
    }
    if (!same) {
      throw new IllegalStateException("the DataFrame API and SQL gave different outputs for one weights file");
    }
    out.printf(Locale.ROOT, "  DataFrame API (FoldCpFunctions.trimul): same bytes as SQL for all %d complexes%n",
        viaColumns.size());
  }

  /** Whole complexes as pair-tile rows, the last tokens of each masked out as padding. */
  private static List<Row> syntheticComplexes() {
    List<Row> rows = new ArrayList<>();
    for (int c = 0; c < COMPLEXES.length; c++) {
      int n = COMPLEXES[c][0];
      int valid = n - COMPLEXES[c][1];
      PairTensor x = PairTensor.random(1, n, D, 1000 + c, 0.0);
      if (valid < n) {
        byte[][] mask = new byte[n][n];
        for (int i = 0; i < valid; i++) {
          Arrays.fill(mask[i], 0, valid, (byte) 1);
        }
        x.setMask(mask);
      }
      rows.add(PairTiles.toRow("complex-" + c, n, 0, 0, x, 0));
    }
    return rows;
  }

  /** Sum, sum of magnitudes and CRC-32 of the bf16 output bytes (the last changes with any bit). */
  static String checksumLine(String id, int n, byte[] folded) {
    ByteBuffer buf = ByteBuffer.wrap(folded).order(ByteOrder.LITTLE_ENDIAN);
    double sum = 0;
    double abs = 0;
    while (buf.hasRemaining()) {
      float v = Bf16.toFloat(buf.getShort());
      sum += v;
      abs += Math.abs(v);
    }
    CRC32 crc = new CRC32();
    crc.update(folded);
    return String.format(Locale.ROOT, "%-10s N=%-3d sum %+.6e  sum|.| %.6e  crc32 %08x", id, n, sum, abs, crc.getValue());
  }

  private static void deleteTree(Path dir) {
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) paths.sorted(Comparator.reverseOrder())::iterator) {
        Files.delete(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("removing " + dir, e);
    }
  }
}
