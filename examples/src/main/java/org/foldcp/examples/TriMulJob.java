package org.foldcp.examples;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.functions;
import org.foldcp.examples.plots.Charts;
import org.foldcp.examples.plots.PairHeatmaps;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.data.FoldCpData;
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
    int rc = execute(args, System.out, System.err);
    if (rc != 0) {
      System.exit(rc);
    }
  }

  /**
   * Runs the job and returns its exit code: 0, or {@link JobErrors#USER_ERROR} after one line on
   * {@code err} for a failure the user can fix (options, spark.foldcp.* settings, inputs, task
   * slots); other failures propagate. The job's report goes to {@code out}.
   */
  static int execute(String[] args, PrintStream out, PrintStream err) {
    boolean verbose = java.util.Arrays.asList(args).contains("--verbose"); // also when the other options are bad
    JobOptions o;
    try {
      o = JobOptions.parse(args);
    } catch (RuntimeException e) {
      if (JobErrors.report(e, verbose, err)) {
        return JobErrors.USER_ERROR;
      }
      throw e;
    }
    if (o.help) {
      out.println(JobOptions.USAGE);
      return 0;
    }
    Runnable restoreLog = verbose ? () -> { } : JobErrors.quietStackTraces();
    SparkSession spark = null;
    try {
      // The spark.foldcp.* settings are checked before anything of Spark runs (even a SparkConf
      // logs Spark's hostname warnings), so that a bad one is the only line the user sees.
      FoldCpConf.from(foldcpSettings(o));
      spark = SparkSession.builder().config(conf(o)).getOrCreate();
      run(spark, o, out);
      return 0;
    } catch (Exception e) { // Spark throws its checked SparkException undeclared
      if (JobErrors.report(e, verbose, err)) {
        return JobErrors.USER_ERROR;
      }
      throw e;
    } finally {
      if (spark != null) {
        spark.stop();
      }
      restoreLog.run();
    }
  }

  /**
   * The plugin, the extensions and Kryo; spark-submit's settings win over these defaults, the
   * job's --conf settings over both, and its own options (--master, --cp, ...) over all.
   */
  static SparkConf conf(JobOptions o) {
    SparkConf conf = new SparkConf().setAppName("fold-cp TriMul job");
    // --conf settings first: the job's own options (--master, --cp, ...) win over them.
    o.conf.forEach(conf::set);
    if (o.master != null) {
      conf.setMaster(o.master);
    } else if (!conf.contains("spark.master")) {
      // Local mode on the machine's cores, as asked: a barrier team larger than that fails its
      // preflight with the slot count rather than running on slots that do not exist.
      conf.setMaster("local[*]");
    }
    conf.setIfMissing("spark.plugins", "org.foldcp.spark.plugin.FoldCpPlugin");
    conf.setIfMissing("spark.sql.extensions", "org.foldcp.spark.sql.FoldCpExtensions");
    conf.setIfMissing("spark.serializer", "org.apache.spark.serializer.KryoSerializer");
    conf.setIfMissing("spark.kryo.registrator", "org.foldcp.spark.plugin.FoldCpKryoRegistrator");
    conf.setIfMissing("spark.ui.enabled", "false");
    localGpu(conf);
    foldcpSettings(o).forEach(conf::set);
    return conf;
  }

  /**
   * The spark.foldcp.* settings the job will run with, as a SparkConf would see them, without
   * making one: spark-submit's (system properties), then --conf, then the job's own options.
   */
  static Map<String, String> foldcpSettings(JobOptions o) {
    Map<String, String> m = new LinkedHashMap<>();
    for (String k : System.getProperties().stringPropertyNames()) {
      if (k.startsWith(FoldCpConf.PREFIX)) {
        m.put(k, System.getProperty(k));
      }
    }
    o.conf.forEach((k, v) -> {
      if (k.startsWith(FoldCpConf.PREFIX)) {
        m.put(k, v);
      }
    });
    if (o.route != null) {
      m.put("spark.foldcp.route", o.route);
    }
    if (o.cpAuto) {
      m.put("spark.foldcp.cp", "auto");
    } else if (o.cp > 0) {
      m.put("spark.foldcp.cp", Integer.toString(o.cp));
    }
    if (o.grid != null) {
      m.put("spark.foldcp.grid", o.grid);
    }
    if (o.transport != null) {
      m.put("spark.foldcp.cp.transport", o.transport);
    }
    if (o.threads > 0) {
      m.put("spark.foldcp.cpu.threads", Integer.toString(o.threads));
    }
    // The report prints the per-stage times and bytes moved, which the essential level omits.
    m.putIfAbsent(FoldCpConf.METRICS_LEVEL.name(), FoldCpConf.MetricsLevel.DEBUG.label());
    return m;
  }

  /**
   * Local mode on a machine with a usable GPU: give it to the driver (Spark hands local tasks no
   * resources of their own), so that the cp = 1 route computes on it. Found by the discovery
   * script, which honours CUDA_VISIBLE_DEVICES; never device 0 by assumption.
   */
  static void localGpu(SparkConf conf) {
    Path script = Path.of("conf", "getGpusResources.sh").toAbsolutePath();
    if (conf.get("spark.master", "").startsWith("local") && !conf.contains("spark.driver.resource.gpu.amount")
        && conf.getBoolean("spark.foldcp.gpu.enabled", true) && java.nio.file.Files.isExecutable(script)
        && org.foldcp.ops.gpu.GpuAvailability.availability() == null) {
      conf.set("spark.driver.resource.gpu.amount", "1");
      conf.set("spark.driver.resource.gpu.discoveryScript", script.toString());
    }
  }

  static void run(SparkSession spark, JobOptions o) {
    run(spark, o, System.out);
  }

  static void run(SparkSession spark, JobOptions o, PrintStream out) {
    int layerCount = o.weights == null ? o.layers : o.prefixes.size();
    int steps = o.perLayer ? 3 + layerCount + (o.plots != null ? 1 : 0) : 3;
    String summary = (o.input != null ? o.input : o.complexes + " synthetic complexes (N=" + nText(o) + ", D=" + o.dim + ")")
        + ", " + layerCount + " layers" + (o.perLayer ? ", one Spark job per layer" : "");
    try (JobProgress progress = JobProgress.start(spark, summary, steps)) {
      run(spark, o, progress, out);
    }
  }

  private static void run(SparkSession spark, JobOptions o, JobProgress progress, PrintStream report) {
    long t0 = System.nanoTime();
    progress.begin("prepare", "inputs and layer weights");
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
    progress.end();
    long t1 = System.nanoTime();
    FoldCpOptions options = FoldCpOptions.fromConf();
    Dataset<Row> out;
    List<Row> rows;
    List<TriMulExec> layerExecs = new ArrayList<>();
    double[] layerMs = new double[stack.size()];
    PairTensor firstInput = null;
    if (!o.perLayer) {
      out = FoldCp.apply(tiles, stack, options);
      progress.begin("forward", stack.size() + " layers (" + describe(stack) + ") on " + count + " complexes"
          + routeOf(out));
      rows = out.collectAsList();
      progress.end();
    } else {
      // One Spark job per layer, each layer's output checkpointed on the executors: the UI, the log
      // and the bar show each layer, and each layer gets its own time.
      progress.begin("inputs", count + " complexes" + (o.input == null ? ", generated on the executors" : ""));
      tiles = tiles.localCheckpoint(true);
      if (o.plots != null) {
        firstInput = FoldCp.assemble(tiles.filter(functions.col(FoldCp.COMPLEX_ID).equalTo(firstId)).collectAsList(), firstId);
      }
      progress.end();
      Dataset<Row> cur = tiles;
      out = null;
      rows = null;
      for (int l = 0; l < stack.size(); l++) {
        Dataset<Row> applied = FoldCp.apply(cur, LayerStack.of(stack.get(l)), options);
        progress.begin("layer " + (l + 1) + "/" + stack.size() + " " + stack.get(l).direction().label(),
            count + " complexes" + routeOf(applied));
        if (l == stack.size() - 1) {
          rows = applied.collectAsList();
        } else {
          cur = applied.localCheckpoint(true);
        }
        layerMs[l] = progress.end();
        out = applied;
        findTriMuls(applied.queryExecution().executedPlan(), layerExecs);
      }
    }
    long t2 = System.nanoTime();

    progress.begin("checksum", o.output == null ? "of every output value" : "and write " + o.output);
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
    String digest = OutputDigest.of(rows, complexes);
    if (o.output != null) {
      // In the input's rank: an (N, N, D) input gives an (N, N, D) output.
      int rank = o.input == null ? 4 : Npy.pairRank(Path.of(o.input));
      Npy.writePair(Path.of(o.output), FoldCp.assemble(rows, firstId), rank);
    }
    progress.end();
    long t3 = System.nanoTime();

    List<TriMulExec> finalExecs = findTriMuls(out.queryExecution().executedPlan(), new ArrayList<>());
    TriMulExec exec = finalExecs.isEmpty() ? null : finalExecs.get(0);
    List<TriMulExec> execs = o.perLayer ? layerExecs : finalExecs;
    List<String> plotFiles = new ArrayList<>();
    if (o.plots != null) {
      progress.begin("plots", "PNGs of " + firstId + " to " + o.plots);
      plotFiles = writePlots(Path.of(o.plots), firstId, firstInput, FoldCp.assemble(rows, firstId), stack,
          layerMs, layerExecs, exec == null ? "?" : exec.plan().toString(), count);
      progress.end();
    }
    progress.finish();
    report.println("fold-cp TriMul job");
    report.println("  route       " + (exec == null ? "?" : exec.plan().toString()));
    for (TriMulExec other : finalExecs.subList(Math.min(1, finalExecs.size()), finalExecs.size())) {
      report.println("  route       " + other.plan()); // cp auto: one node per cp
    }
    if (finalExecs.size() > 1) { // cp auto: what each node's complexes took, beside the plan's prediction
      for (TriMulExec e : finalExecs) {
        report.printf(Locale.ROOT, "  measured    cp = %d: %d tiles, compute %.1f ms, reshard %.1f ms (summed over its"
            + " tasks)%n", e.plan().grid.size(), value(e.metrics(), "numTiles"), value(e.metrics(), "computeTime") / 1e6,
            value(e.metrics(), "reshardTime") / 1e6);
      }
    }
    report.printf(Locale.ROOT, "  complexes   %d x (N=%s, D=%d), layers %d: %s; master %s%n", count,
        o.input == null ? nText(o) : Integer.toString(n), d,
        stack.size(), describe(stack), spark.sparkContext().master());
    report.printf(Locale.ROOT, "  stage ms    prepare %.0f | forward incl. data generation (Spark job) %.0f"
        + " | checksum+write %.0f%n", ms(t0, t1), ms(t1, t2), ms(t2, t3));
    if (o.perLayer) {
      StringBuilder sb = new StringBuilder();
      for (int l = 0; l < stack.size(); l++) {
        sb.append(l == 0 ? "" : " | ").append(String.format(Locale.ROOT, "%d %s %.0f", l + 1,
            stack.get(l).direction().label(), layerMs[l]));
      }
      report.println("  layer ms    " + sb + " (one Spark job each)");
    }
    if (!execs.isEmpty()) {
      report.printf(Locale.ROOT, "  metrics     tiles %d | bytes in %d | bytes out %d | compute ms %.1f | reshard ms %.1f%n",
          sum(execs, "numTiles"), sum(execs, "bytesIn"), sum(execs, "bytesOut"),
          sum(execs, "computeTime") / 1e6, sum(execs, "reshardTime") / 1e6);
      long gpu = sum(execs, "gpuTiles");
      long all = sum(execs, "numTiles");
      report.printf(Locale.ROOT, "  ran on      %s (%d of %d tile forwards on a GPU)%n",
          gpu == 0 ? "cpu" : gpu == all ? "gpu" : "gpu and cpu", gpu, all);
      long[] gpuStages = {sum(execs, "gpuStage1Time"), sum(execs, "gpuStage2Time"), sum(execs, "gpuStage3Time")};
      if (gpuStages[0] + gpuStages[1] + gpuStages[2] > 0) {
        report.printf(Locale.ROOT, "  gpu stages  LN_in+projections+gates %.1f ms | triangle GEMM %.1f ms"
            + " | LN_out+output projection %.1f ms (kernel time, summed over tasks and layers)%n",
            gpuStages[0] / 1e6, gpuStages[1] / 1e6, gpuStages[2] / 1e6);
      }
      long toChannels = sum(execs, "reshardToChannelsBytes");
      long toTokens = sum(execs, "reshardToTokensBytes");
      if (toChannels + toTokens > 0) {
        report.printf(Locale.ROOT, "  reshards    fused into the GPU kernels' stores: %d B token->channel,"
            + " %d B channel->token between ranks%n", toChannels, toTokens);
      }
    }
    report.printf(Locale.ROOT, "  checksum    sum %.6e  sum|.| %.6e%n", checksum, absSum);
    report.println("  digest      " + digest + " (SHA-256 of every complex's bf16 output, complexes by id: equal"
        + " digests, equal bits)");
    if (o.sql) {
      report.println("  sql         " + SqlCheck.compare(spark, tiles, stack, rows));
    }
    if (o.output != null) {
      report.println("  output      " + o.output + " (" + firstId + ")");
    }
    if (!plotFiles.isEmpty()) {
      report.println("  plots       " + String.join(", ", plotFiles));
    }
  }

  /** The route the planner picked for {@code applied}, as ", route ...", or "" when it cannot tell yet. */
  private static String routeOf(Dataset<Row> applied) {
    try {
      List<TriMulExec> found = findTriMuls(applied.queryExecution().executedPlan(), new ArrayList<>());
      if (found.isEmpty()) {
        return "";
      }
      String route = found.get(0).plan().toString();
      int why = route.indexOf(" (");
      return ", route " + (why > 0 ? route.substring(0, why) : route)
          + (found.size() > 1 ? " and " + (found.size() - 1) + " more (cp auto)" : "");
    } catch (RuntimeException ex) {
      return "";
    }
  }

  /** pair-heatmap.png and layer-times.png of the first complex; returns their paths. */
  static List<String> writePlots(Path dir, String id, PairTensor before, PairTensor after, LayerStack stack,
      double[] layerMs, List<TriMulExec> layerExecs, String route, int complexes) {
    int d = after.dim();
    int[] channels = d >= 3 ? new int[] {0, d / 2, d - 1} : d == 2 ? new int[] {0, 1} : new int[] {0};
    Path heat = Charts.writePng(PairHeatmaps.beforeAfter(before, after, 0, channels,
        String.format(Locale.ROOT, "fold-cp: pair channels of %s before and after %d TriMul layers (N=%d, D=%d)",
            id, stack.size(), after.rows(), d)), dir.resolve("pair-heatmap.png"));
    List<String> labels = new ArrayList<>();
    double[] compute = new double[stack.size()];
    java.util.Arrays.fill(compute, Double.NaN);
    for (int l = 0; l < stack.size(); l++) {
      labels.add((l + 1) + " " + stack.get(l).direction().label());
      if (l < layerExecs.size()) {
        compute[l] = value(layerExecs.get(l).metrics(), "computeTime") / 1e6;
      }
    }
    int why = route.indexOf(" (");
    Path times = Charts.writePng(Charts.layerTimes("fold-cp: time per TriMul layer",
        "route " + (why > 0 ? route.substring(0, why) : route) + "; " + complexes + (complexes == 1 ? " complex" : " complexes")
            + " of N=" + after.rows() + ", D=" + d + " per layer", labels,
        List.of("Spark job wall time", "TriMul compute (SQL metric, summed over tasks)"),
        new double[][] {layerMs, compute}), dir.resolve("layer-times.png"));
    return List.of(heat.toString(), times.toString());
  }

  private static long sum(List<TriMulExec> execs, String name) {
    long s = 0;
    for (TriMulExec e : execs) {
      s += value(e.metrics(), name);
    }
    return s;
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
  private static String nText(JobOptions o) {
    if (o.ns.length == 1) {
      return Integer.toString(o.n);
    }
    StringBuilder sb = new StringBuilder();
    for (int v : o.ns) {
      sb.append(sb.length() == 0 ? "" : ",").append(v);
    }
    return sb.toString();
  }

  static LayerStack loadStack(JobOptions o, int d) {
    if (o.weights == null) {
      return LayerStack.randomAlternating(o.layers, d, o.seed ^ 0x5eedL, true);
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

  /** The fold-cp operators of an executed plan (under AQE too; several with cp auto), added to {@code found}. */
  static List<TriMulExec> findTriMuls(SparkPlan plan, List<TriMulExec> found) {
    if (plan instanceof TriMulExec) {
      found.add((TriMulExec) plan);
      return found;
    }
    if (plan instanceof AdaptiveSparkPlanExec) {
      return findTriMuls(((AdaptiveSparkPlanExec) plan).executedPlan(), found);
    }
    Iterator<SparkPlan> it = plan.children().iterator();
    while (it.hasNext()) {
      findTriMuls(it.next(), found);
    }
    return found;
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
