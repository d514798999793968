package org.foldcp.examples;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.data.FoldCpData;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.tiles.PairTiles;

/**
 * The complexes of a {@link TriMulJob} run, as pair-tile rows: {@code count} of them, the first
 * one's id, its N and D. Also where the layer stack comes from (--weights, or generated).
 */
record TriMulInputs(Dataset<Row> tiles, int n, int d, int count, String firstId) {
  /**
   * The complexes of --input (N and D read from its first complex), or --complexes synthetic ones
   * (N and D from the options; made on the executors when the job runs).
   */
  static TriMulInputs prepare(SparkSession spark, JobOptions o) {
    if (o.input != null) {
      Dataset<Row> tiles = FoldCp.tilesFromNpy(spark, Path.of(o.input), o.inputMask == null ? null : Path.of(o.inputMask),
          "input");
      List<Row> head = tiles.select("complex_id", "n_tokens", "dim").collectAsList();
      int count = head.size();
      String firstId = head.get(0).getString(0);
      return new TriMulInputs(tiles, head.get(0).getInt(1), head.get(0).getInt(2), count, firstId);
    }
    return new TriMulInputs(synthetic(spark, o), o.n, o.dim, o.complexes, "synthetic-0");
  }

  /** Synthetic complexes are made where they are used, on the executors, from their seeds. */
  static Dataset<Row> synthetic(SparkSession spark, JobOptions o) {
    int[] ns = o.ns.clone();
    int dd = o.dim;
    long seed = o.seed;
    double masked = o.maskedFraction;
    return spark.range(0, o.complexes, 1, o.complexes).mapPartitions(
        (MapPartitionsFunction<Long, Row>) ids -> {
          List<Row> made = new ArrayList<>();
          while (ids.hasNext()) {
            long c = ids.next();
            int nn = ns[(int) (c % ns.length)];
            made.add(PairTiles.toRow("synthetic-" + c, nn, 0, 0, PairTensor.random(1, nn, dd, seed + c, masked), 0));
          }
          return made.iterator();
        }, Encoders.row(PairTiles.SCHEMA));
  }

  /** The synthetic complexes' N: one number, or the list of --n. */
  static String nText(JobOptions o) {
    if (o.ns.length == 1) {
      return Integer.toString(o.n);
    }
    StringBuilder sb = new StringBuilder();
    for (int v : o.ns) {
      sb.append(sb.length() == 0 ? "" : ",").append(v);
    }
    return sb.toString();
  }

  /**
   * The layer stack: one layer per --prefix of --weights (a local file, or a URI read through
   * Hadoop), or --layers generated layers of alternating direction.
   */
  static LayerStack loadStack(JobOptions o, int d) {
    InvalidInputException.require(o.weights == null || o.hidden == 0, "--hidden", o.hidden,
        "applies to generated layers only: with --weights the file's shapes decide H");
    if (o.weights == null) {
      return LayerStack.randomAlternating(o.layers, d, o.hidden > 0 ? o.hidden : d, o.seed ^ 0x5eedL, true);
    }
    List<TriMulLayer> layers = new ArrayList<>();
    for (String prefix : o.prefixes) {
      Direction dir = JobOptions.incoming(prefix) ? Direction.INCOMING : Direction.OUTGOING;
      // a URI with a scheme (hdfs://, s3a://) is read through Hadoop; a plain path stays a local file
      LayerWeights w = o.weights.matches("[A-Za-z][A-Za-z0-9+.-]*://.*")
          ? FoldCpData.readLayer(SparkSession.active(), o.weights, prefix, d)
          : SafeTensors.readLayer(Path.of(o.weights), prefix, d);
      layers.add(new TriMulLayer(TriMulSpec.of(dir, true), w));
    }
    return new LayerStack(layers);
  }
}
