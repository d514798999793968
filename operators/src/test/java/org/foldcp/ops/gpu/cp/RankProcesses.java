package org.foldcp.ops.gpu.cp;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.foldcp.ops.gpu.GpuAvailability;
import org.foldcp.ops.gpu.GpuTests;
import org.junit.jupiter.api.Assumptions;

/**
 * Starts the rank processes of a team test (one JVM per NVSHMEM PE, all on GPU 0), waits for
 * them, and collects what they reported: every err-KEY.txt file in the directory, keyed KEY
 * ("case-rank" or "team-rank"), and the halt-RANK.txt of a rank that died on purpose
 * ({@link RankMain#haltAfter}). A rank that neither finished (done-RANK.txt), reported a team
 * failure (err-team-RANK.txt, or a case's TeamException, after which it exits
 * {@link RankMain#TEAM_BROKEN}) nor halted on purpose fails the test with the ranks' logs.
 */
final class RankProcesses {
  private RankProcesses() {}

  /**
   * What the ranks left: their errors (see the class comment), their halt reports by rank
   * ("EPOCH_MS what"), and per started rank its exit status and when (epoch ms) its process ended.
   */
  record Outcome(Map<String, String> errors, Map<Integer, String> halts, Map<Integer, Integer> exitStatus,
      Map<Integer, Long> endedAtMillis) {}

  /**
   * Skips the calling test class, with the reason, unless this machine can run a team: a usable
   * sm_90 GPU, and the CP library with NVSHMEM.
   */
  static void assumeTeamRuns() {
    String why = GpuAvailability.availability();
    Assumptions.assumeTrue(why == null, why);
    String cp = NativeCp.unavailableReason(null);
    Assumptions.assumeTrue(cp == null, cp);
  }

  /**
   * Runs {@code main} as ranks 0..size-1 (all but {@code absent}) with arguments
   * {@code DIR RANK SIZE TIMEOUT_MS HEAP_BYTES}, each under {@code prefix} (a wrapper such as
   * compute-sanitizer; may be empty), for at most {@code wallSeconds}: a rank process still
   * running then is killed and the test fails, so a rank that hangs can never pass.
   */
  static Outcome run(Path dir, int size, Class<?> main, Set<Integer> absent, List<String> prefix,
      long timeoutMs, long heapBytes, int wallSeconds) throws Exception {
    Map<Integer, Process> ps = new LinkedHashMap<>();
    Map<Integer, CompletableFuture<Long>> ended = new LinkedHashMap<>();
    for (int r = 0; r < size; r++) {
      if (absent.contains(r)) {
        continue;
      }
      ProcessBuilder pb = GpuTests.testJvm(prefix, List.of("-Xmx6g"), main, List.of(dir.toString(), "" + r, "" + size,
          "" + timeoutMs, "" + heapBytes), dir.resolve("rank-" + r + ".log"));
      pb.environment().put("NVSHMEM_DISABLE_NVLS", "1");
      Process p = pb.start();
      ps.put(r, p);
      ended.put(r, p.onExit().thenApply(x -> System.currentTimeMillis()));
    }
    long t0 = System.nanoTime();
    long deadline = t0 + TimeUnit.SECONDS.toNanos(wallSeconds);
    for (Process p : ps.values()) {
      long left = deadline - System.nanoTime();
      if (!p.waitFor(Math.max(1, left), TimeUnit.NANOSECONDS)) {
        ps.values().forEach(Process::destroyForcibly);
        fail("team of " + size + " did not finish in " + wallSeconds + " s; logs: " + logs(dir, size));
      }
    }
    Map<String, String> errors = reports(dir, "err-");
    Map<Integer, String> halts = new TreeMap<>();
    reports(dir, "halt-").forEach((rank, text) -> halts.put(Integer.parseInt(rank), text.trim()));
    Map<Integer, Integer> status = new TreeMap<>();
    Map<Integer, Long> endedAt = new TreeMap<>();
    ps.forEach((r, p) -> {
      status.put(r, p.exitValue());
      endedAt.put(r, ended.get(r).join());
    });
    System.out.println("team of " + size + " (" + main.getSimpleName() + ") ran in "
        + (System.nanoTime() - t0) / 1_000_000 + " ms; errors reported by the ranks: " + errors.keySet()
        + (halts.isEmpty() ? "" : "; halted on purpose: " + halts) + "; exit status " + status);
    for (int r : ps.keySet()) {
      boolean teamFailed = errors.containsKey("team-" + r) || status.get(r) == RankMain.TEAM_BROKEN;
      if (!teamFailed && !halts.containsKey(r) && !Files.exists(dir.resolve("done-" + r + ".txt"))) {
        fail("rank " + r + " did not finish its cases; " + errors + "; logs: " + logs(dir, size));
      }
    }
    return new Outcome(errors, halts, status, endedAt);
  }

  /** The text of every PREFIX-KEY.txt in {@code dir}, by KEY, in name order. */
  private static Map<String, String> reports(Path dir, String prefix) throws IOException {
    Map<String, String> found = new LinkedHashMap<>();
    try (var files = Files.list(dir)) {
      for (Path f : files.filter(f -> f.getFileName().toString().startsWith(prefix)
          && f.getFileName().toString().endsWith(".txt")).sorted().toList()) {
        String key = f.getFileName().toString().substring(prefix.length()).replaceFirst("\\.txt$", "");
        found.put(key, Files.readString(f));
      }
    }
    return found;
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
