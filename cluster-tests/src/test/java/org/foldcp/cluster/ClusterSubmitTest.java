package org.foldcp.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The README's spark-submit line, run as a user runs it: against a standalone Master and Worker
 * (separate JVMs on 127.0.0.1, started here from their main classes the way Spark's sbin scripts
 * do) through Spark's own SparkSubmit, with the CPU template as the properties file. The Spark
 * home they run from holds Spark only (the assembled one without fold-cp's jars), so fold-cp
 * reaches the driver and the executors only through the line's --jars and application jar. The
 * checksum it prints must equal that of the same job in local mode.
 *
 * <p>The README's N is sized for a real cluster; the test runs the line at {@link #TEST_N} tokens
 * (system property foldcp.submit.n: another N) to stay quick, with everything else as written.
 */
class ClusterSubmitTest {
  static final int TEST_N = Integer.getInteger("foldcp.submit.n", 256);
  private static final Duration DAEMON_START = Duration.ofSeconds(90);
  private static final Duration JOB_LIMIT = Duration.ofSeconds(Integer.getInteger("foldcp.submit.limitSeconds", 300));
  private static final Pattern CHECKSUM = Pattern.compile("^\\s*checksum\\s+sum (\\S+)\\s+sum\\|\\.\\| (\\S+)\\s*$");
  private static final Pattern MASTER_URL = Pattern.compile("Starting Spark master at (spark://\\S+)");

  private final List<Process> daemons = new ArrayList<>();

  @Test
  void readmeSparkSubmitLineRunsOnAStandaloneClusterAndPrintsTheLocalChecksum() throws Exception {
    Path repo = Path.of("").toAbsolutePath().getParent(); // failsafe runs in cluster-tests/
    Path runs = Files.createDirectories(repo.resolve("cluster-tests/target/submit-test"));
    Path work = Files.createTempDirectory(runs, "run-"); // a folder per run: builds may share this tree
    Path sparkHome = sparkOnlyHome(work);
    List<String> line = readmeSubmitLine(repo.resolve("README.md"));
    String propertiesFile = valueOf(line, "--properties-file");
    assertEquals("conf/spark-defaults.cpu.conf.template", propertiesFile,
        "the README's spark-submit line should use the CPU template (it runs on any cluster)");
    Properties template = new Properties();
    try (Reader r = Files.newBufferedReader(repo.resolve(propertiesFile))) {
      template.load(r);
    }
    int cp = Integer.parseInt(valueOf(line, "--cp"));
    // A measurement knob (not used by CI): -Dfoldcp.submit.executorMemory=3g overrides the
    // template's executor memory (with -Dfoldcp.submit.n=1024, the README's own N) to measure
    // where the example stops fitting (README "On a cluster").
    String executorMemory = System.getProperty("foldcp.submit.executorMemory",
        template.getProperty("spark.executor.memory", "1g"));
    try {
      Path masterLog = work.resolve("master.log");
      daemons.add(start(sparkHome, repo, masterLog, List.of("org.apache.spark.deploy.master.Master",
          "--host", "127.0.0.1", "--port", "0", "--webui-port", "0")));
      String master = awaitLog(masterLog, MASTER_URL, "the Master did not start").group(1);
      Path workerLog = work.resolve("worker.log");
      Path workerDir = Files.createDirectories(work.resolve("work"));
      // One Worker with a core per rank and the executor memory the template asks for.
      daemons.add(start(sparkHome, repo, workerLog, List.of("org.apache.spark.deploy.worker.Worker",
          "--host", "127.0.0.1", "--webui-port", "0", "--cores", Integer.toString(Math.max(2, cp)),
          "--memory", executorMemory, "--work-dir", workerDir.toString(),
          master)));
      awaitLog(workerLog, Pattern.compile("Successfully registered with master"), "the Worker did not register");

      // In client mode the driver is the spark-submit JVM: spark-submit gives it spark.driver.memory.
      List<String> submit = new ArrayList<>(javaCommand(sparkHome, repo));
      submit.set(submit.indexOf("-Xmx1g"), "-Xmx" + template.getProperty("spark.driver.memory", "1g"));
      submit.add("org.apache.spark.deploy.SparkSubmit");
      List<String> args = new ArrayList<>(line.subList(1, line.size()));
      args.set(args.indexOf("--master") + 1, master);
      args.set(args.indexOf("--n") + 1, Integer.toString(TEST_N));
      args.add(args.indexOf("--class"), "--conf");  // the Worker may have been given other memory than the template
      args.add(args.indexOf("--class"), "spark.executor.memory=" + executorMemory);
      submit.addAll(args);
      Run cluster = run(submit, repo, sparkHome, work.resolve("submit"));
      String diagnosis = "spark-submit " + String.join(" ", args) + "\n" + cluster.describe()
          + "\nworker: " + LocalCluster.firstErrorLine(workerLog) + "\nexecutors: " + executorErrors(workerDir);
      assertEquals(0, cluster.code, "the README's spark-submit line failed on the cluster: " + diagnosis);
      assertTrue(cluster.stdout.contains("master " + master), "the job did not run on " + master + ": " + diagnosis);

      // The same job in local mode, from the build's own class path.
      List<String> local = new ArrayList<>(javaCommand(sparkHome, repo));
      // Local mode runs the executors' work in this one JVM: it gets the executors' memory.
      local.set(local.indexOf("-Xmx1g"), "-Xmx" + executorMemory);
      int jarAt = args.indexOf("--jars") + 2; // the application jar, then its arguments
      local.set(local.indexOf("-cp") + 1, args.get(jarAt) + File.pathSeparator
          + args.get(args.indexOf("--jars") + 1).replace(",", File.pathSeparator)
          + File.pathSeparator + sparkHome.resolve("jars") + "/*");
      local.add(valueOf(line, "--class"));
      local.addAll(args.subList(jarAt + 1, args.size()));
      local.addAll(List.of("--master", "local[" + Math.max(2, cp) + "]"));
      Run reference = run(local, repo, sparkHome, work.resolve("local"));
      assertEquals(0, reference.code, "the job in local mode failed: " + reference.describe());
      assertEquals(checksum(reference), checksum(cluster), "checksums: local mode (expected) and the cluster\n"
          + diagnosis);
    } finally {
      stopDaemons();
    }
  }

  /** The README's spark-submit command (from the "On a cluster" section), split into words. */
  static List<String> readmeSubmitLine(Path readme) throws IOException {
    String text = Files.readString(readme, StandardCharsets.UTF_8);
    int section = text.indexOf("## On a cluster");
    assertTrue(section >= 0, "README.md has no '## On a cluster' section");
    int start = text.indexOf("\nspark-submit ", section);
    assertTrue(start >= 0, "README.md's cluster section has no line starting with spark-submit");
    StringBuilder command = new StringBuilder();
    for (String l : text.substring(start + 1).split("\n")) {
      command.append(' ').append(l.endsWith("\\") ? l.substring(0, l.length() - 1) : l);
      if (!l.endsWith("\\")) {
        break;
      }
    }
    List<String> words = Arrays.stream(command.toString().trim().split("\\s+")).collect(Collectors.toList());
    for (String option : List.of("--master", "--class", "--properties-file", "--jars", "--n", "--cp")) {
      valueOf(words, option);
    }
    return words;
  }

  private static String valueOf(List<String> words, String option) {
    int at = words.indexOf(option);
    assertTrue(at >= 0 && at + 1 < words.size(), "the README's spark-submit line has no " + option + ": " + words);
    return words.get(at + 1);
  }

  /**
   * A Spark home with Spark's jars only: the assembled one minus fold-cp (links, not copies), as
   * a user's Spark install is.
   */
  private static Path sparkOnlyHome(Path work) throws IOException {
    String assembled = System.getenv("SPARK_HOME");
    assertTrue(assembled != null && Files.isDirectory(Path.of(assembled, "jars")),
        "SPARK_HOME is not the assembled Spark home: run the cluster tests with 'mvn verify'");
    Path jars = Files.createDirectories(work.resolve("spark-home").resolve("jars"));
    try (DirectoryStream<Path> all = Files.newDirectoryStream(Path.of(assembled, "jars"), "*.jar")) {
      for (Path jar : all) {
        if (!jar.getFileName().toString().startsWith("fold-cp-")) {
          Files.createSymbolicLink(jars.resolve(jar.getFileName()), jar.toAbsolutePath());
        }
      }
    }
    return jars.getParent();
  }

  /** What Spark's launch scripts run: java with Spark's add-opens and SPARK_HOME/jars/*. */
  private static List<String> javaCommand(Path sparkHome, Path repo) {
    return new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx1g",
        "@" + repo.resolve("conf/spark-jvm.opts"), "-cp", sparkHome.resolve("jars") + "/*"));
  }

  private static ProcessBuilder environment(ProcessBuilder pb, Path sparkHome) {
    pb.environment().put("SPARK_HOME", sparkHome.toString());
    // A Spark home assembled by Maven has no RELEASE file: the Worker's launcher needs the Scala
    // version to find SPARK_HOME/jars when it starts executors (README: On a cluster).
    pb.environment().put("SPARK_SCALA_VERSION", "2.13");
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    return pb;
  }

  private static Process start(Path sparkHome, Path repo, Path log, List<String> mainAndArgs) throws IOException {
    List<String> cmd = javaCommand(sparkHome, repo);
    cmd.addAll(mainAndArgs);
    return environment(new ProcessBuilder(cmd), sparkHome).directory(repo.toFile()).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
  }

  private Matcher awaitLog(Path log, Pattern pattern, String what) throws IOException, InterruptedException {
    long deadline = System.nanoTime() + DAEMON_START.toNanos();
    while (System.nanoTime() < deadline) {
      String text = Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
      Matcher m = pattern.matcher(text);
      if (m.find()) {
        return m;
      }
      if (daemons.stream().anyMatch(p -> !p.isAlive())) {
        break;
      }
      Thread.sleep(200);
    }
    throw new AssertionError(what + " within " + DAEMON_START.toSeconds() + " s; " + log + ": "
        + LocalCluster.firstErrorLine(log));
  }

  record Run(int code, String stdout, Path stderr) {
    String describe() {
      return "exit " + code + "; stdout:\n" + stdout + "\nstderr " + stderr + ": "
          + LocalCluster.firstErrorLine(stderr);
    }
  }

  private static Run run(List<String> cmd, Path dir, Path sparkHome, Path logs)
      throws IOException, InterruptedException {
    Path out = Path.of(logs + ".out");
    Path err = Path.of(logs + ".err");
    Process p = environment(new ProcessBuilder(cmd), sparkHome).directory(dir.toFile())
        .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    p.getOutputStream().close();
    int code;
    if (p.waitFor(JOB_LIMIT.toSeconds(), TimeUnit.SECONDS)) {
      code = p.exitValue();
    } else {
      kill(p);
      code = -1;
      Files.writeString(err, "\n(killed after " + JOB_LIMIT.toSeconds() + " s)\n", StandardCharsets.UTF_8,
          StandardOpenOption.APPEND);
    }
    return new Run(code, Files.readString(out, StandardCharsets.UTF_8), err);
  }

  private static String checksum(Run run) {
    for (String l : run.stdout.split("\n")) {
      Matcher m = CHECKSUM.matcher(l);
      if (m.matches()) {
        return l.strip();
      }
    }
    throw new AssertionError("no checksum line in the output: " + run.describe());
  }

  /** The first error line of each executor's stderr (WORK_DIR/APP/EXECUTOR/stderr). */
  private static String executorErrors(Path workDir) throws IOException {
    try (Stream<Path> files = Files.walk(workDir, 3)) {
      List<String> errors = files.filter(f -> f.getFileName().toString().equals("stderr")).sorted()
          .map(f -> workDir.relativize(f) + ": " + LocalCluster.firstErrorLine(f)).collect(Collectors.toList());
      return errors.isEmpty() ? "none started (no stderr under " + workDir + ")" : String.join("; ", errors);
    }
  }

  private void stopDaemons() throws InterruptedException {
    // The Worker first, so that it ends its executors; then the Master.
    for (int q = daemons.size() - 1; q >= 0; q--) {
      kill(daemons.get(q));
    }
  }

  private static void kill(Process p) throws InterruptedException {
    List<ProcessHandle> children = p.descendants().collect(Collectors.toList());
    p.destroy();
    if (!p.waitFor(15, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
    for (ProcessHandle child : children) {
      child.destroyForcibly();
    }
  }
}
