package org.foldcp.examples;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.SingleRankRoute;
import org.foldcp.spark.tiles.PairTiles;

/**
 * The main example: a Spark job that folds pair tensors through a TriMul layer stack. With no
 * arguments it runs in local mode on synthetic complexes and generated weights, on the CPU
 * backend; it prints the route, the time of each stage and an output checksum.
 */
public final class TriMulJob {
  private TriMulJob() {}

  public static void main(String[] args) {
    JobOptions o;
    try {
      o = JobOptions.parse(args);
    } catch (InvalidInputException e) {
      System.err.println("error: " + e.getMessage());
      System.exit(2);
      return;
    }
    if (o.help) {
      System.out.println(JobOptions.USAGE);
      return;
    }
    SparkConf conf = new SparkConf().setAppName("fold-cp TriMul job");
    if (o.master != null) {
      conf.setMaster(o.master);
    } else if (!conf.contains("spark.master")) {
      conf.setMaster("local[*]");
    }
    conf.setIfMissing("spark.ui.enabled", "false");
    conf.setIfMissing("spark.sql.shuffle.partitions", "4");
    SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
    try {
      run(spark, o);
    } finally {
      spark.stop();
    }
  }

  static void run(SparkSession spark, JobOptions o) {
    long t0 = System.nanoTime();
    Dataset<Row> df;
    int d;
    int n;
    int count;
    String firstId;
    if (o.input != null) {
      // A file on the driver: read it there and ship its complexes as rows.
      PairTensor x = o.inputMask == null ? Npy.readPair(Path.of(o.input)) : Npy.readPair(Path.of(o.input), Path.of(o.inputMask));
      List<Row> rows = new ArrayList<>();
      for (int b = 0; b < x.batch(); b++) {
        rows.add(PairTiles.toRow(Path.of(o.input).getFileName() + "#" + b, x.rows(), 0, 0, x, b));
      }
      df = spark.createDataFrame(rows, PairTiles.SCHEMA).repartition(rows.size());
      d = x.dim();
      n = x.rows();
      count = rows.size();
      firstId = rows.get(0).getString(0);
    } else {
      // Synthetic complexes are made where they are used, on the executors, from their seeds.
      int nn = o.n;
      int dd = o.dim;
      long seed = o.seed;
      double masked = o.maskedFraction;
      df = spark.range(0, o.complexes, 1, o.complexes).mapPartitions(
          (MapPartitionsFunction<Long, Row>) ids -> {
            List<Row> rows = new ArrayList<>();
            while (ids.hasNext()) {
              long c = ids.next();
              rows.add(PairTiles.toRow("synthetic-" + c, nn, 0, 0, PairTensor.random(1, nn, dd, seed + c, masked), 0));
            }
            return rows.iterator();
          }, Encoders.row(PairTiles.SCHEMA));
      d = o.dim;
      n = o.n;
      count = o.complexes;
      firstId = "synthetic-0";
    }
    LayerStack stack = loadStack(o, d);
    long t1 = System.nanoTime();
    int threads = o.threads > 0 ? o.threads : taskThreads(spark);
    long t2 = System.nanoTime();
    List<Row> out = SingleRankRoute.apply(df, stack, threads).collectAsList();
    long t3 = System.nanoTime();

    double checksum = 0;
    double absSum = 0;
    PairTensor first = null;
    for (Row r : out) {
      PairTensor y = PairTiles.fromRow(r);
      if (r.getString(0).equals(firstId)) {
        first = y;
      }
      for (float v : y.toFloats()) {
        checksum += v;
        absSum += Math.abs(v);
      }
    }
    if (o.output != null && first != null) {
      Npy.writePair(Path.of(o.output), first);
    }
    long t4 = System.nanoTime();
    System.out.println("fold-cp TriMul job");
    System.out.printf(Locale.ROOT, "  route       cpu, cp=1 (one complex per task, %d threads per task), master %s%n",
        threads, spark.sparkContext().master());
    InvalidInputException.require(out.size() == count, "output complexes", out.size(),
        "must equal the " + count + " input complexes: no partial output");
    System.out.printf(Locale.ROOT, "  complexes   %d x (N=%d, D=%d), layers %d: %s%n", out.size(), n, d,
        stack.size(), describe(stack));
    System.out.printf(Locale.ROOT, "  stage ms    load weights %.0f | forward incl. data generation (Spark job) %.0f | checksum+write %.0f%n",
        ms(t0, t2), ms(t2, t3), ms(t3, t4));
    System.out.printf(Locale.ROOT, "  checksum    sum %.6e  sum|.| %.6e%n", checksum, absSum);
    if (o.output != null) {
      System.out.println("  output      " + o.output);
    }
  }

  static LayerStack loadStack(JobOptions o, int d) {
    if (o.weights == null) {
      return LayerStack.randomAlternating(o.layers, d, o.seed ^ 0x5eedL, true);
    }
    List<TriMulLayer> layers = new ArrayList<>();
    for (String prefix : o.prefixes) {
      Direction dir = JobOptions.incoming(prefix) ? Direction.INCOMING : Direction.OUTGOING;
      layers.add(new TriMulLayer(TriMulSpec.of(dir, true), SafeTensors.readLayer(Path.of(o.weights), prefix, d)));
    }
    return new LayerStack(layers);
  }

  private static String describe(LayerStack s) {
    StringBuilder sb = new StringBuilder();
    for (TriMulLayer l : s.layers()) {
      sb.append(sb.length() == 0 ? "" : ", ").append(l.direction().label());
    }
    return sb.toString();
  }

  private static int taskThreads(SparkSession spark) {
    String master = spark.sparkContext().master();
    if (master.startsWith("local")) {
      return Math.max(1, Runtime.getRuntime().availableProcessors() / Math.max(1, spark.sparkContext().defaultParallelism()));
    }
    return Integer.parseInt(spark.conf().get("spark.task.cpus", "1"));
  }

  private static double ms(long a, long b) {
    return (b - a) / 1e6;
  }
}
