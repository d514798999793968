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
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.sql.FoldCpOptions;
import org.foldcp.spark.sql.TriMulExec;
import org.foldcp.spark.tiles.PairTiles;
import scala.collection.Iterator;

/**
 * The main example: a Spark job that folds pair tensors through a TriMul layer stack with the
 * fold-cp plugin. With no arguments it runs in local mode on synthetic complexes and generated
 * weights, on the CPU backend; it prints the route and why, the time of each stage, the
 * operator's metrics and an output checksum that does not depend on the route.
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
    SparkSession spark = SparkSession.builder().config(conf(o)).getOrCreate();
    try {
      run(spark, o);
    } catch (InvalidInputException e) {
      System.err.println("error: " + e.getMessage());
      System.exit(2);
    } finally {
      spark.stop();
    }
  }

  /** The plugin, the extensions and Kryo; spark-submit's settings win over these defaults. */
  static SparkConf conf(JobOptions o) {
    SparkConf conf = new SparkConf().setAppName("fold-cp TriMul job");
    if (o.master != null) {
      conf.setMaster(o.master);
    } else if (!conf.contains("spark.master")) {
      // Local mode: enough task slots for a barrier team of cp ranks even on a small machine.
      int slots = Math.max(Runtime.getRuntime().availableProcessors(), Math.max(1, o.cp));
      conf.setMaster("local[" + slots + "]");
    }
    conf.setIfMissing("spark.plugins", "org.foldcp.spark.plugin.FoldCpPlugin");
    conf.setIfMissing("spark.sql.extensions", "org.foldcp.spark.sql.FoldCpExtensions");
    conf.setIfMissing("spark.serializer", "org.apache.spark.serializer.KryoSerializer");
    conf.setIfMissing("spark.kryo.registrator", "org.foldcp.spark.plugin.FoldCpKryoRegistrator");
    conf.setIfMissing("spark.ui.enabled", "false");
    if (o.route != null) {
      conf.set("spark.foldcp.route", o.route);
    }
    if (o.cp > 0) {
      conf.set("spark.foldcp.cp", Integer.toString(o.cp));
    }
    if (o.grid != null) {
      conf.set("spark.foldcp.grid", o.grid);
    }
    if (o.threads > 0) {
      conf.set("spark.foldcp.cpu.threads", Integer.toString(o.threads));
    }
    return conf;
  }

  static void run(SparkSession spark, JobOptions o) {
    long t0 = System.nanoTime();
    Dataset<Row> tiles;
    int d;
    int n;
    int count;
    String firstId;
    if (o.input != null) {
      tiles = FoldCp.tilesFromNpy(spark, Path.of(o.input), o.inputMask == null ? null : Path.of(o.inputMask), "input");
      List<Row> head = tiles.select("complex_id", "n_tokens", "dim").collectAsList();
      count = head.size();
      firstId = head.get(0).getString(0);
      n = head.get(0).getInt(1);
      d = head.get(0).getInt(2);
    } else {
      tiles = synthetic(spark, o);
      d = o.dim;
      n = o.n;
      count = o.complexes;
      firstId = "synthetic-0";
    }
    LayerStack stack = loadStack(o, d);
    long t1 = System.nanoTime();
    Dataset<Row> out = FoldCp.apply(tiles, stack, FoldCpOptions.fromConf());
    List<Row> rows = out.collectAsList();
    long t2 = System.nanoTime();

    double checksum = 0;
    double absSum = 0;
    java.util.Set<String> complexes = new java.util.TreeSet<>();
    for (Row r : rows) {
      complexes.add(r.getString(0));
      for (float v : PairTiles.fromRow(r).toFloats()) {
        checksum += v;
        absSum += Math.abs(v);
      }
    }
    InvalidInputException.require(complexes.size() == count, "output complexes", complexes.size(),
        "must equal the " + count + " input complexes: no partial output");
    if (o.output != null) {
      Npy.writePair(Path.of(o.output), FoldCp.assemble(rows, firstId));
    }
    long t3 = System.nanoTime();

    TriMulExec exec = findTriMul(out.queryExecution().executedPlan());
    System.out.println("fold-cp TriMul job");
    System.out.println("  route       " + (exec == null ? "?" : exec.plan().toString()));
    System.out.printf(Locale.ROOT, "  complexes   %d x (N=%d, D=%d), layers %d: %s; master %s%n", count, n, d,
        stack.size(), describe(stack), spark.sparkContext().master());
    System.out.printf(Locale.ROOT, "  stage ms    prepare %.0f | forward incl. data generation (Spark job) %.0f"
        + " | checksum+write %.0f%n", ms(t0, t1), ms(t1, t2), ms(t2, t3));
    if (exec != null) {
      scala.collection.Map<String, SQLMetric> m = exec.metrics();
      System.out.printf(Locale.ROOT, "  metrics     tiles %d | bytes in %d | bytes out %d | compute ms %.1f | reshard ms %.1f%n",
          value(m, "numTiles"), value(m, "bytesIn"), value(m, "bytesOut"),
          value(m, "computeTime") / 1e6, value(m, "reshardTime") / 1e6);
    }
    System.out.printf(Locale.ROOT, "  checksum    sum %.6e  sum|.| %.6e%n", checksum, absSum);
    if (o.output != null) {
      System.out.println("  output      " + o.output + " (" + firstId + ")");
    }
  }

  /** Synthetic complexes are made where they are used, on the executors, from their seeds. */
  static Dataset<Row> synthetic(SparkSession spark, JobOptions o) {
    int nn = o.n;
    int dd = o.dim;
    long seed = o.seed;
    double masked = o.maskedFraction;
    return spark.range(0, o.complexes, 1, o.complexes).mapPartitions(
        (MapPartitionsFunction<Long, Row>) ids -> {
          List<Row> made = new ArrayList<>();
          while (ids.hasNext()) {
            long c = ids.next();
            made.add(PairTiles.toRow("synthetic-" + c, nn, 0, 0, PairTensor.random(1, nn, dd, seed + c, masked), 0));
          }
          return made.iterator();
        }, Encoders.row(PairTiles.SCHEMA));
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

  /** The fold-cp operator in an executed plan (under AQE too), or null. */
  static TriMulExec findTriMul(SparkPlan plan) {
    if (plan instanceof TriMulExec) {
      return (TriMulExec) plan;
    }
    if (plan instanceof AdaptiveSparkPlanExec) {
      return findTriMul(((AdaptiveSparkPlanExec) plan).executedPlan());
    }
    Iterator<SparkPlan> it = plan.children().iterator();
    while (it.hasNext()) {
      TriMulExec found = findTriMul(it.next());
      if (found != null) {
        return found;
      }
    }
    return null;
  }

  private static long value(scala.collection.Map<String, SQLMetric> m, String name) {
    return m.contains(name) ? m.apply(name).value() : 0L;
  }

  private static String describe(LayerStack s) {
    StringBuilder sb = new StringBuilder();
    for (TriMulLayer l : s.layers()) {
      sb.append(sb.length() == 0 ? "" : ", ").append(l.direction().label());
    }
    return sb.toString();
  }

  private static double ms(long a, long b) {
    return (b - a) / 1e6;
  }
}
