package org.foldcp.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * conf/getGpusResources.sh, the Spark GPU discovery script, without GPUs: CUDA_VISIBLE_DEVICES
 * stands in for the machine's GPUs. Every GPU by default; with FOLDCP_GPU_CLAIM_DIR (several
 * Workers on one host) each call gets a GPU of its own, also when the Workers run it at once.
 */
class GpuDiscoveryScriptTest {
  private static final Pattern ADDRESSES = Pattern.compile("\\{\"name\": \"gpu\", \"addresses\": \\[(.*)]}");

  static Path script() {
    for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
      Path s = d.resolve("conf/getGpusResources.sh");
      if (Files.isRegularFile(s)) {
        return s;
      }
    }
    throw new IllegalStateException("conf/getGpusResources.sh not found above " + Path.of("").toAbsolutePath());
  }

  /** The addresses the script reports, in order. */
  static List<String> run(Map<String, String> env) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder("bash", script().toString());
    pb.environment().remove("CUDA_VISIBLE_DEVICES");
    pb.environment().remove("FOLDCP_GPU_CLAIM_DIR");
    pb.environment().putAll(env);
    pb.redirectErrorStream(true);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertEquals(0, p.waitFor(), out);
    Matcher m = ADDRESSES.matcher(out);
    assertTrue(m.matches(), "not a Spark ResourceInformation JSON: " + out);
    List<String> a = new ArrayList<>();
    for (String s : m.group(1).split(",")) {
      if (!s.isBlank()) {
        a.add(s.trim().replace("\"", ""));
      }
    }
    return a;
  }

  @Test
  void reportsEveryVisibleGpuByDefault() throws Exception {
    assertEquals(List.of("0", "1", "2"), run(Map.of("CUDA_VISIBLE_DEVICES", "0,1,2")));
  }

  @Test
  void eachWorkerClaimsAGpuOfItsOwnThenNoneAreLeft(@TempDir Path dir) throws Exception {
    Map<String, String> env = Map.of("CUDA_VISIBLE_DEVICES", "0,1", "FOLDCP_GPU_CLAIM_DIR", dir.toString());
    assertEquals(List.of("0"), run(env));
    assertEquals(List.of("1"), run(env));
    assertEquals(List.of(), run(env), "a third Worker on a two-GPU host gets none");
  }

  @Test
  void workersStartingAtOnceNeverShareAGpu(@TempDir Path dir) throws Exception {
    Map<String, String> env = Map.of("CUDA_VISIBLE_DEVICES", "0,1,2,3", "FOLDCP_GPU_CLAIM_DIR", dir.toString());
    ExecutorService pool = Executors.newFixedThreadPool(6);
    try {
      List<Future<List<String>>> calls = new ArrayList<>();
      for (int k = 0; k < 6; k++) {
        calls.add(pool.submit(() -> run(env)));
      }
      Set<String> claimed = new HashSet<>();
      int empty = 0;
      for (Future<List<String>> f : calls) {
        List<String> a = f.get();
        if (a.isEmpty()) {
          empty++;
        } else {
          assertEquals(1, a.size(), "one GPU per Worker: " + a);
          assertTrue(claimed.add(a.get(0)), "GPU " + a.get(0) + " claimed twice");
        }
      }
      assertEquals(Set.of("0", "1", "2", "3"), claimed);
      assertEquals(2, empty, "six Workers, four GPUs");
    } finally {
      pool.shutdownNow();
    }
  }
}
