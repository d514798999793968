package org.foldcp.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job's stderr as a user sees it, in a JVM of its own started as bin/run-example starts it
 * (conf/spark-jvm.opts, conf/log4j2.properties): a job that fails on its input shows its own lines
 * and the one error line, none of Spark's warnings (they are in the log file); --verbose shows them
 * again. The JVM's own incubator-module notice is dropped by bin/run-example (a shell filter).
 */
class QuietStderrTest {
  private static List<String> stderrOf(Path dir, String... jobArgs) throws IOException, InterruptedException {
    Path root = Path.of(System.getProperty("basedir", ".")).resolve("..").normalize();
    List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
        "@" + root.resolve("conf/spark-jvm.opts"), "-Xmx1g",
        "-Dlog4j2.configurationFile=" + root.resolve("conf/log4j2.properties"),
        "-Djava.io.tmpdir=" + dir, "-cp", System.getProperty("java.class.path"), TriMulJob.class.getName()));
    cmd.addAll(List.of(jobArgs));
    Path err = dir.resolve("stderr.txt");
    Process p = new ProcessBuilder(cmd).redirectOutput(dir.resolve("stdout.txt").toFile()).redirectError(err.toFile())
        .start();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the job ends");
    assertEquals(2, p.exitValue(), Files.readString(err));
    return Files.readAllLines(err);
  }

  @Test
  void aFailedJobShowsItsOwnLinesAndSparksWarningsGoToTheLog(@TempDir Path dir) throws Exception {
    String missing = dir.resolve("absent.npy").toString();
    List<String> lines = stderrOf(dir, "--input", missing, "--master", "local[1]");
    assertTrue(lines.contains("error: file = " + missing + ": does not exist"), String.join("\n", lines));
    for (String line : lines) {
      assertTrue(line.startsWith("error: ") || line.startsWith("WARNING: Using incubator modules")
          || line.matches("\\d\\d:\\d\\d:\\d\\d INFO (FoldCp|JobProgress|TaskBackends|GpuOwners|ExecutorGpu)\\w*: .*"),
          "only fold-cp's own lines on the screen, not: " + line);
    }
    List<String> log;
    try (var files = Files.list(dir)) {
      Path file = files.filter(f -> f.getFileName().toString().matches("fold-cp-.*\\.log")).findFirst().orElseThrow();
      log = Files.readAllLines(file);
    }
    assertTrue(log.stream().anyMatch(l -> l.contains(" WARN ")), "Spark's warnings are in the log file: " + log);

    List<String> verbose = stderrOf(dir, "--input", missing, "--master", "local[1]", "--verbose");
    assertTrue(verbose.stream().anyMatch(l -> l.contains(" WARN ")), "--verbose shows Spark's warnings again");
  }
}
