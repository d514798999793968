package org.foldcp.ops.gpu.cp;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.foldcp.ops.gpu.GpuTriMul;
import org.junit.jupiter.api.Assumptions;

/**
 * Starts the rank processes of a team test (one JVM per NVSHMEM PE, all on GPU 0), waits for
 * them, and collects what they reported: every err-KEY.txt file in the directory, keyed KEY
 * ("case-rank" or "team-rank"). A rank that neither finished (done-RANK.txt) nor reported a team
 * failure fails the test with the ranks' logs.
 */
final class RankProcesses {
  private RankProcesses() {}

  /**
   * Skips the calling test class, with the reason, unless this machine can run a team: a usable
   * sm_90 GPU, and the CP library with NVSHMEM.
   */
  static void assumeTeamRuns() {
    String why = GpuTriMul.availability();
    Assumptions.assumeTrue(why == null, why);
    String cp = NativeCp.unavailableReason(null);
    Assumptions.assumeTrue(cp == null, cp);
  }

  /**
   * Runs {@code main} as ranks 0..size-1 (all but {@code absent}) with arguments
   * {@code DIR RANK SIZE TIMEOUT_MS HEAP_BYTES}, each under {@code prefix} (a wrapper such as
   * compute-sanitizer; may be empty), for at most {@code wallSeconds}.
   */
  static Map<String, String> run(Path dir, int size, Class<?> main, Set<Integer> absent, List<String> prefix,
      long timeoutMs, long heapBytes, int wallSeconds) throws Exception {
    String java = ProcessHandle.current().info().command().orElse("java");
    String cp = System.getProperty("foldcp.test.classpath", System.getProperty("java.class.path"));
    List<Process> ps = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      if (absent.contains(r)) {
        continue;
      }
      List<String> cmd = new ArrayList<>(prefix);
      cmd.addAll(List.of(java, "-Xmx6g", "-cp", cp, main.getName(), dir.toString(), "" + r, "" + size,
          "" + timeoutMs, "" + heapBytes));
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
          .redirectOutput(dir.resolve("rank-" + r + ".log").toFile());
      pb.environment().put("NVSHMEM_DISABLE_NVLS", "1");
      ps.add(pb.start());
    }
    long t0 = System.nanoTime();
    long deadline = t0 + TimeUnit.SECONDS.toNanos(wallSeconds);
    for (Process p : ps) {
      long left = deadline - System.nanoTime();
      if (!p.waitFor(Math.max(1, left), TimeUnit.NANOSECONDS)) {
        ps.forEach(Process::destroyForcibly);
        fail("team of " + size + " did not finish in " + wallSeconds + " s; logs: " + logs(dir, size));
      }
    }
    Map<String, String> errors = new LinkedHashMap<>();
    try (var files = Files.list(dir)) {
      for (Path f : files.filter(f -> f.getFileName().toString().startsWith("err-")).sorted().toList()) {
        String key = f.getFileName().toString().replaceFirst("^err-", "").replaceFirst("\\.txt$", "");
        errors.put(key, Files.readString(f));
      }
    }
    System.out.println("team of " + size + " (" + main.getSimpleName() + ") ran in "
        + (System.nanoTime() - t0) / 1_000_000 + " ms; errors reported by the ranks: " + errors.keySet());
    for (int r = 0; r < size; r++) {
      if (!absent.contains(r) && !errors.containsKey("team-" + r) && !Files.exists(dir.resolve("done-" + r + ".txt"))) {
        fail("rank " + r + " did not finish its cases; " + errors + "; logs: " + logs(dir, size));
      }
    }
    return errors;
  }

  static String logs(Path dir, int size) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int r = 0; r < size; r++) {
      Path p = dir.resolve("rank-" + r + ".log");
      if (Files.exists(p)) {
        sb.append("\n--- rank ").append(r).append(":\n").append(tail(Files.readString(p)));
      }
    }
    return sb.toString();
  }

  static String tail(String s) {
    return s.length() <= 4000 ? s : s.substring(s.length() - 4000);
  }
}
