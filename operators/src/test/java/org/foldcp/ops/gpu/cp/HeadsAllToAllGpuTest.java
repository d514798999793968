package org.foldcp.ops.gpu.cp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The heads all-to-all on a real NVSHMEM team: every rank is its own JVM ({@link HeadsRank}), all
 * sharing GPU 0. Every dtype, both routes, B > 1, odd S_local and Dh, world 2, 4, 6 and 8: the scatter
 * equals the all-gathered and sliced inputs bit for bit (NaN payloads and infinities included),
 * gather undoes it bit for bit, the zero-copy path on device addresses agrees, 1,000 calls in a
 * row leave device memory and the heap where they started, and ranks that ask for different
 * shapes all fail naming each other. Skips (with the reason) without a usable sm_90 GPU or
 * without the CP library and NVSHMEM.
 */
@Tag("gpu")
@Tag("cp")
class HeadsAllToAllGpuTest {
  static final long HEAP = 1L << 30;
  static final long TIMEOUT_MS = 60_000;

  @BeforeAll
  static void start() {
    RankProcesses.assumeTeamRuns();
  }

  static List<HeadsCase> cases(int world, boolean withRepeats) {
    List<HeadsCase> cases = new ArrayList<>();
    long seed = 1;
    for (HeadsDtype d : HeadsDtype.values()) {
      for (StoreRoute r : new StoreRoute[] {StoreRoute.PEER, StoreRoute.PUT}) {
        String tag = d.label() + "-" + r.label();
        cases.add(new HeadsCase("odd-" + tag, 2, 5, 2 * world, 7, d, r, seed++, -1, 1));
        cases.add(new HeadsCase("big-" + tag, 1, 512, 4 * world, 64, d, r, seed++, -1, 1));
      }
    }
    cases.add(new HeadsCase("one-head-each", 3, 1, world, 1, HeadsDtype.BF16, StoreRoute.AUTO, seed++, -1, 1));
    if (withRepeats) {
      cases.add(new HeadsCase("leak-peer", 2, 3, 2 * world, 5, HeadsDtype.F16, StoreRoute.PEER, seed++, -1, 500));
      cases.add(new HeadsCase("leak-put", 2, 3, 2 * world, 5, HeadsDtype.F32, StoreRoute.PUT, seed++, -1, 500));
    }
    // Last: ranks that disagree must all fail at construction, and nothing after may depend on it.
    cases.add(new HeadsCase("skew", 1, 4, world, 8, HeadsDtype.BF16, StoreRoute.AUTO, seed++, world - 1, 1));
    return cases;
  }

  @Test
  void world2() throws Exception {
    check(2, cases(2, true));
  }

  @Test
  void world4() throws Exception {
    check(4, cases(4, false));
  }

  /** World 6: a team size that is not a power of two (heads 2 W, 4 W: 12, 24). */
  @Test
  void world6() throws Exception {
    check(6, cases(6, false));
  }

  @Test
  void world8() throws Exception {
    check(8, cases(8, false));
  }

  private void check(int world, List<HeadsCase> cases) throws Exception {
    Path dir = Files.createTempDirectory("foldcp-heads-" + world + "-");
    Files.write(dir.resolve("heads-cases.txt"), cases.stream().map(HeadsCase::line).toList(), StandardCharsets.UTF_8);
    Map<String, String> errors = RankProcesses.run(dir, world, HeadsRank.class, Set.of(), List.of(), TIMEOUT_MS, HEAP,
        420).errors();
    for (HeadsCase c : cases) {
      for (int r = 0; r < world; r++) {
        String key = c.name() + "-" + r;
        if (c.skewRank() >= 0) {
          String e = errors.get(key);
          assertTrue(e != null && e.contains("InvalidInputException") && e.contains("another shape"),
              key + ": ranks that ask for different shapes must all fail naming the others: " + e);
          continue;
        }
        assertFalse(errors.containsKey(key), key + ": " + errors.get(key));
        String res = Files.readString(dir.resolve("res-" + key + ".txt")).trim();
        assertFalse(res.startsWith("FAIL"), key + ": " + res);
        String want = c.route() == StoreRoute.PUT ? "put" : "peer";  // AUTO on one GPU: every peer has a pointer
        assertTrue(res.startsWith(want + " "), key + ": route " + res);
        long sent = Long.parseLong(res.split(" ")[1]);
        long block = (long) c.batch() * c.seqLocal() * c.heads() * c.headDim() * c.dtype().bytes() / world;
        assertEquals(block * (world - 1), sent, key + ": bytes sent per call");
        if (c.repeats() > 1) {
          String[] m = Files.readString(dir.resolve("mem-" + key + ".txt")).trim().split(" ");
          assertEquals(m[0], m[2], key + ": free device memory after " + 2 * c.repeats() + " calls and close must equal"
              + " the value before");
          assertEquals("0", m[3], key + ": Java handles left open after close");
          assertTrue(Long.parseLong(m[4]) < (1 << 20), key + ": the team still holds " + m[4] + " heap bytes");
        }
      }
      System.out.printf("ok %-16s W=%d %s%n", c.name(), world, c.skewRank() >= 0 ? errors.get(c.name() + "-0").trim()
          : Files.readString(dir.resolve("res-" + c.name() + "-0.txt")).trim());
    }
    System.out.println("PASS heads all-to-all W=" + world + ": " + cases.size() + " cases");
  }
}
