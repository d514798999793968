package org.foldcp.examples;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;
import org.foldcp.spark.config.FoldCpConf;

/**
 * The main example: a Spark job that folds pair tensors through a TriMul layer stack with the
 * fold-cp plugin. With no arguments it runs in local mode on synthetic complexes and generated
 * weights, on the CPU backend; it prints the route and why, the time of each stage, the
 * operator's metrics and an output checksum that does not depend on the route.
 *
 * <p>This class is the entry point: the Spark settings the job runs with and its exit codes. The
 * run itself: {@link JobOptions} (the command line), {@link TriMulInputs} (the complexes and the
 * layer stack), {@link TriMulRun} (the stages), {@link TriMulReport} (what it prints),
 * {@link TriMulExecs} (the fold-cp operators of the plans and their metrics).
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

  /** The run ({@link TriMulRun}) under a progress bar of its steps; the report goes to {@code out}. */
  static void run(SparkSession spark, JobOptions o, PrintStream out) {
    int layerCount = o.weights == null ? o.layers : o.prefixes.size();
    int steps = o.perLayer ? 3 + layerCount + (o.plots != null ? 1 : 0) : 3;
    String summary = (o.input != null ? o.input
        : o.complexes + " synthetic complexes (N=" + TriMulInputs.nText(o) + ", D=" + o.dim + ")")
        + ", " + layerCount + " layers" + (o.perLayer ? ", one Spark job per layer" : "");
    try (JobProgress progress = JobProgress.start(spark, summary, steps)) {
      TriMulRun.run(spark, o, progress, out);
    }
  }
}
