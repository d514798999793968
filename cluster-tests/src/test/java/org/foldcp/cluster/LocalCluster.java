package org.foldcp.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaFutureAction;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.serializer.KryoSerializer;
import org.foldcp.spark.plugin.FoldCpKryoRegistrator;

/**
 * A Spark cluster of separate processes on this machine. Spark's {@code local-cluster} master
 * runs a standalone Master and {@link #EXECUTORS} Workers inside this JVM; each Worker launches
 * one executor JVM the way a standalone cluster does, with {@code SPARK_HOME/jars/*} as its class
 * path. So the executors see fold-cp only through the assembled Spark home, and every tile that a
 * route moves between tasks is really serialized across processes.
 *
 * <p>The application serializes with Kryo and fold-cp's registrator, as the templates
 * conf/spark-defaults.{cpu,gpu}.conf.template configure a cluster. It does not load the fold-cp
 * plugin: the routes take their plan explicitly and need nothing from it.
 *
 * <p>A broken executor (one that dies at start, or a task that hangs) fails the tests within
 * bounded time with the first error the executors logged, instead of Spark relaunching
 * executors or waiting for them forever.
 */
final class LocalCluster implements AutoCloseable {
  /** Executor JVMs, one per Worker, one core each. */
  static final int EXECUTORS = 2;
  /** MiB per Worker by default, all of it for its executor (Spark's default executor memory is 1g). */
  private static final int WORKER_MEMORY_MB = 1024;
  /** A setting of {@link #start(Map)} that is not Spark's: MiB per Worker and its executor (default 1024). */
  static final String WORKER_MEMORY = "foldcp.test.workerMemoryMb";
  /**
   * A setting of {@link #start(Map)} that is not Spark's: the task slots of each Worker (default 1),
   * for tests that need more than {@link #EXECUTORS} slots at once (several CP teams).
   */
  static final String WORKER_CORES = "foldcp.test.workerCores";
  /** Executor JVMs start with a few hundred jars on a machine shared with other builds. */
  private static final Duration EXECUTOR_START = Duration.ofSeconds(120);
  /** Far more than any job here needs (seconds); a job still running then is stuck. */
  private static final Duration JOB_LIMIT = Duration.ofSeconds(150);

  private final JavaSparkContext context;
  private final Path sparkHome;

  private LocalCluster(JavaSparkContext context, Path sparkHome) {
    this.context = context;
    this.sparkHome = sparkHome;
  }

  /** Starts the cluster and returns once every executor has registered and run a task. */
  static LocalCluster start() {
    return start(Map.of());
  }

  /**
   * As {@link #start()}, with further Spark settings. local-cluster starts its Master and Workers
   * with the driver's SparkConf and the executors take the driver's settings, so settings that
   * every process must share (spark.authenticate and its secret) go here.
   */
  static LocalCluster start(Map<String, String> settings) {
    Path sparkHome = assembledSparkHome();
    Path confDir = Path.of(System.getProperty("foldcp.conf.dir", "../conf")).toAbsolutePath().normalize();
    SparkConf conf = new SparkConf()
        .setMaster("local-cluster[" + EXECUTORS + "," + settings.getOrDefault(WORKER_CORES, "1") + ","
            + settings.getOrDefault(WORKER_MEMORY, Integer.toString(WORKER_MEMORY_MB)) + "]")
        .setAppName("fold-cp cluster tests")
        .set("spark.plugins", "org.foldcp.spark.plugin.FoldCpPlugin")
        // so that a SparkSession on this context plans FoldCp.apply (ClusterDataTest)
        .set("spark.sql.extensions", "org.foldcp.spark.sql.FoldCpExtensions")
        .set("spark.serializer", KryoSerializer.class.getName())
        .set("spark.kryo.registrator", FoldCpKryoRegistrator.class.getName())
        // Executors are launched by the Worker, not by the java launcher of this JVM: they need
        // Spark's add-opens (the same @argfile as the test JVM) and the quiet log4j2 config.
        .set("spark.executor.extraJavaOptions", quoted("@" + confDir.resolve("spark-jvm.opts"))
            + " " + quoted("-Dlog4j2.configurationFile=" + confDir.resolve("log4j2.properties")))
        // fold-cp itself comes from SPARK_HOME/jars; only the test's own task code (the lambdas
        // that report where a task ran) is added, as an application jar would be.
        .set("spark.executor.extraClassPath", testClassesLocation().toString())
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.ui.enabled", "false");
    settings.forEach((k, v) -> {
      if (k.equals(WORKER_MEMORY)) {
        conf.set("spark.executor.memory", v + "m");
      } else if (!k.equals(WORKER_CORES)) {
        conf.set(k, v);
      }
    });
    LocalCluster cluster = new LocalCluster(new JavaSparkContext(conf), sparkHome);
    try {
      cluster.awaitExecutors();
    } catch (RuntimeException | Error e) {
      cluster.close();
      throw e;
    }
    return cluster;
  }

  JavaSparkContext context() {
    return context;
  }

  /**
   * Collects an RDD, giving up after {@link #JOB_LIMIT}: on a cluster, a job whose executors keep
   * dying is not an error to Spark, which relaunches them and waits.
   */
  <T> List<T> collect(JavaRDD<T> rdd) {
    JavaFutureAction<List<T>> job = rdd.collectAsync();
    try {
      return job.get(JOB_LIMIT.toSeconds(), TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      job.cancel(true);
      throw new IllegalStateException("job still running after " + JOB_LIMIT.toSeconds() + " s; "
          + executorErrors(), e);
    } catch (InterruptedException e) {
      job.cancel(true);
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for a job", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("job failed: " + e.getCause().getMessage(), e.getCause());
    }
  }

  @Override
  public void close() {
    context.stop();
  }

  /**
   * The Spark home the Workers launch executors from. It is assembled by this module's package
   * phase, and the Worker reads it from the SPARK_HOME environment variable (failsafe sets it), so
   * a run without it would only fail later, inside a Worker, with a message about Spark's build.
   */
  private static Path assembledSparkHome() {
    String home = System.getenv("SPARK_HOME");
    if (home == null || home.isBlank()) {
      throw new IllegalStateException("SPARK_HOME is not set: run the cluster tests with 'mvn verify', which"
          + " assembles cluster-tests/target/spark-home and points SPARK_HOME (and SPARK_SCALA_VERSION) at it");
    }
    Path jars = Path.of(home, "jars");
    if (!containsJar(jars, "spark-core_") || !containsJar(jars, "fold-cp-spark-plugin-")) {
      throw new IllegalStateException("SPARK_HOME = " + home + " has no jars/ with Spark and fold-cp in it:"
          + " the cluster-tests module's package phase assembles it (mvn verify)");
    }
    if (System.getenv("SPARK_SCALA_VERSION") == null) {
      throw new IllegalStateException("SPARK_SCALA_VERSION is not set: Spark's launcher needs it to find"
          + " SPARK_HOME/jars (Spark's own scripts export it; failsafe sets it for these tests)");
    }
    return Path.of(home);
  }

  private static boolean containsJar(Path dir, String prefix) {
    if (!Files.isDirectory(dir)) {
      return false;
    }
    try (DirectoryStream<Path> jars = Files.newDirectoryStream(dir, prefix + "*.jar")) {
      return jars.iterator().hasNext();
    } catch (IOException e) {
      throw new IllegalStateException("cannot list " + dir, e);
    }
  }

  private static Path testClassesLocation() {
    try {
      return Path.of(LocalCluster.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException("cannot locate the test classes", e);
    }
  }

  /**
   * Waits until every executor has registered, then runs one task per executor: an executor
   * registers before it builds its Executor (plugins, serializer), so only a task proves it works.
   * Also after a test killed an executor, until the Worker's replacement works.
   */
  void awaitExecutors() {
    long deadline = System.nanoTime() + EXECUTOR_START.toNanos();
    int registered;
    while ((registered = context.sc().getExecutorIds().size()) < EXECUTORS) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(registered + " of " + EXECUTORS + " executors registered within "
            + EXECUTOR_START.toSeconds() + " s; " + executorErrors());
      }
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for executors", e);
      }
    }
    // The probe runs test code, so it also checks that the executors load the test classes.
    List<Integer> probes = IntStream.range(0, EXECUTORS).boxed().collect(Collectors.toList());
    collect(context.parallelize(probes, EXECUTORS).map(i -> PlacedTile.currentJvm()));
  }

  /**
   * The log files (stdout and stderr) of this application's executors, which their Workers write
   * under SPARK_HOME/work/APP/EXECUTOR/: what fold-cp logs on the executors (log4j2 writes to
   * stderr) can be read back here. Empty before any executor started.
   */
  List<Path> executorLogs() {
    Path appDir = sparkHome.resolve("work").resolve(context.sc().applicationId());
    if (!Files.isDirectory(appDir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.walk(appDir, 2)) {
      return files.filter(f -> Files.isRegularFile(f)
          && (f.getFileName().toString().equals("stderr") || f.getFileName().toString().equals("stdout")))
          .sorted().collect(Collectors.toList());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The first error line of each executor's stderr (SPARK_HOME/work/APP/EXECUTOR/stderr). */
  private String executorErrors() {
    Path appDir = sparkHome.resolve("work").resolve(context.sc().applicationId());
    if (!Files.isDirectory(appDir)) {
      return "no executor logs under " + appDir;
    }
    try (Stream<Path> executors = Files.list(appDir)) {
      String errors = executors.sorted().limit(4)
          .map(dir -> dir.getFileName() + ": " + firstErrorLine(dir.resolve("stderr")))
          .collect(Collectors.joining("; "));
      return "executor logs under " + appDir + " (" + errors + ")";
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The first line of a log that reports an error: Spark's ERROR lines, exceptions, the job's "error:" lines. */
  static String firstErrorLine(Path stderr) {
    if (!Files.isRegularFile(stderr)) {
      return "no stderr";
    }
    try (Stream<String> lines = Files.lines(stderr)) {
      return lines.filter(l -> l.contains("ERROR") || l.contains("Exception") || l.startsWith("error:"))
          .findFirst().orElse("no error logged");
    } catch (IOException e) {
      return "unreadable stderr: " + e.getMessage();
    }
  }

  /** One argument for Spark's option splitting, whatever the path holds. */
  private static String quoted(String arg) {
    return "\"" + arg.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }
}
