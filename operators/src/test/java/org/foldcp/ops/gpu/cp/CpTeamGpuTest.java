package org.foldcp.ops.gpu.cp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.Sharding;
import org.foldcp.ops.gpu.GpuTriMul;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.ops.testing.Reference64;
import org.foldcp.ops.testing.Tensors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CP TriMul on a real NVSHMEM team: every rank is its own JVM ({@link CpTeamRank}), all
 * sharing GPU 0 (NVSHMEM runs several PEs on one GPU, peer pointers and signals included; their
 * kernels time-slice, so nothing here is about speed). Each case's output tiles are assembled
 * and compared with our cp = 1 GPU result and, at N = 100, with the float64 reference, within the
 * accuracy contract (||out - ref|| / ||ref|| <= 1e-2, no NaN); cases whose layers have a hidden
 * width H of their own must equal cp = 1 bit for bit. The fault tests check that a rank
 * that never joins, or dies in the middle of the forwards, is named by its peer within the team's
 * timeout, and that the peer's process then ends by itself.
 *
 * <p>Skips (with the reason) without a usable sm_90 GPU or without the CP library and NVSHMEM.
 * The rank processes need the test class path: {@code -Dfoldcp.test.classpath=...} (bin/gpu-run
 * passes it; under Surefire java.class.path is used). {@code -Dfoldcp.test.rankPrefix="cmd args"}
 * runs every rank under a wrapper, e.g. compute-sanitizer.
 */
@Tag("gpu")
@Tag("cp")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class CpTeamGpuTest {
  static final long HEAP = 6L << 30;
  static final long TIMEOUT_MS = 60_000;
  private static GpuTriMul gpu;

  @BeforeAll
  static void start() {
    RankProcesses.assumeTeamRuns();
    gpu = new GpuTriMul(0);
  }

  @BeforeEach
  void forgetInputs() {
    INPUTS.clear();
    REFERENCES.clear();
  }

  @AfterAll
  static void stop() {
    if (gpu != null) {
      gpu.close();
    }
  }

  /** Every grid x direction x N, each with both store routes on the same input and weights. */
  static List<CpCase> grid(List<String> grids, int[] ns, int dim, long seed0) {
    List<CpCase> cases = new ArrayList<>();
    for (String g : grids) {
      long seed = seed0;  // the same weights on every grid: one cp = 1 reference per direction and N
      for (Direction d : Direction.values()) {
        for (int n : ns) {
          for (StoreRoute r : new StoreRoute[] {StoreRoute.PEER, StoreRoute.PUT}) {
            String name = "g" + g + "-" + d.name().toLowerCase().charAt(0) + n + "-" + r.label();
            cases.add(new CpCase(name, g, d, n, dim, 1, true, seed % 2 == 0, 1, r, seed, -1, 1));
          }
          seed++;
        }
      }
    }
    return cases;
  }

  @Test
  @Order(4)
  void cp2GridsDirectionsSizesAndRoutes(@TempDir Path dir) throws Exception {
    List<CpCase> cases = grid(List.of("2x1", "1x2"), new int[] {100, 1000, 2050}, 64, 11);
    cases.add(new CpCase("stack3", "2x1", Direction.OUTGOING, 100, 64, 2, true, true, 3, StoreRoute.AUTO, 5, -1, 1));
    cases.add(new CpCase("stack3put", "1x2", Direction.OUTGOING, 100, 64, 2, true, true, 3, StoreRoute.PUT, 6, -1, 1));
    cases.add(new CpCase("d128", "2x1", Direction.INCOMING, 300, 128, 1, true, true, 1, StoreRoute.PEER, 7, -1, 1));
    cases.add(new CpCase("skew", "2x1", Direction.OUTGOING, 100, 64, 1, true, false, 1, StoreRoute.AUTO, 8, 1, 1));
    cases.add(new CpCase("heap", "2x1", Direction.OUTGOING, 8192, 256, 1, true, false, 1, StoreRoute.AUTO, 9, -1, 1));
    cases.add(new CpCase("dcp", "3x1", Direction.OUTGOING, 100, 64, 1, true, false, 1, StoreRoute.AUTO, 10, -1, 1));
    cases.add(new CpCase("leak", "2x1", Direction.INCOMING, 256, 64, 1, true, true, 1, StoreRoute.PEER, 12, -1, 100));
    // N = 120: a shape no other case has, so its poisoned tiles (the tile files are per input shape)
    // are not read by another case
    CpCase nan = new CpCase("nan", "2x1", Direction.OUTGOING, 120, 64, 1, true, false, 1, StoreRoute.AUTO, 14, -1, 1);
    cases.add(nan);
    cases.add(new CpCase("after", "1x2", Direction.OUTGOING, 128, 32, 1, false, false, 1, StoreRoute.AUTO, 13, -1, 1));
    // a hidden width of its own (D = 256, H = 128): the ranks split H, the reshards carry H channels
    cases.add(new CpCase("h128", "2x1", Direction.INCOMING, 200, 256, 1, true, true, 1, StoreRoute.PEER, 15, -1, 1)
        .withHidden(128));
    cases.add(new CpCase("h128stack", "1x2", Direction.OUTGOING, 100, 256, 1, true, true, 2, StoreRoute.PUT, 16, -1, 1)
        .withHidden(128));
    // D = 384, H = 256 (cuEquivariance's pair): stage 1 above D = 256 and the wide stage 3 on the ranks
    cases.add(new CpCase("w384", "2x1", Direction.INCOMING, 130, 384, 1, true, true, 1, StoreRoute.AUTO, 18, -1, 1)
        .withHidden(256));
    // D = 448, H = 512: stage 3 as two kernels with p in the plan's own section; two layers, so that
    // a peer stores layer 2's a and b while this rank's stage 3 of layer 1 may still run, put route
    cases.add(new CpCase("w448", "1x2", Direction.OUTGOING, 130, 448, 1, true, true, 2, StoreRoute.PUT, 19, -1, 1)
        .withHidden(512));
    List<String[]> unfused = addUnfused(cases, List.of("g2x1-o1000-peer", "g1x2-i2050-peer", "g2x1-i100-put",
        "stack3", "h128stack", "w384", "w448"));
    writeNonFiniteTiles(dir, nan);
    Map<String, String> errors = runTeam(dir, 2, cases, Set.of(), List.of());

    for (CpCase c : cases) {
      switch (c.name()) {
        case "skew" -> {
          for (int r = 0; r < 2; r++) {
            String e = errors.get("skew-" + r);
            assertTrue(e != null && e.contains("InvalidInputException") && e.contains("weights differ")
                && e.contains("rank(s) 1"), "rank " + r + ": weights that differ on rank 1 must fail naming it: " + e);
          }
        }
        case "heap" -> {
          for (int r = 0; r < 2; r++) {
            String e = errors.get("heap-" + r);
            assertTrue(e != null && e.contains("symmetric heap is too small") && e.contains("needs ")
                && e.contains(" bytes"), "rank " + r + ": a plan larger than the heap must fail with the bytes needed: " + e);
          }
        }
        case "nan" -> {
          // the device's scan of each rank's tile, before any rank enters the collective kernels
          // (so the team goes on: "after" runs on it); rank r's NaN sits at (0, 3 + r, 5, 7)
          for (int r = 0; r < 2; r++) {
            String e = errors.get("nan-" + r);
            assertTrue(e != null && e.contains("NonFiniteInputException") && e.contains("the pair tile of rank " + r)
                && e.contains("= 2 (NaN or Inf") && e.contains("(b, i, j, c) = (0, " + (3 + r) + ", 5, 7)"),
                "rank " + r + ": a tile holding a NaN and an Inf must fail naming the count and the first: " + e);
          }
        }
        case "dcp" -> {
          for (int r = 0; r < 2; r++) {
            String e = errors.get("dcp-" + r);
            assertTrue(e != null && e.contains("InvalidInputException") && e.contains("64") && e.contains("cp = 3"),
                "rank " + r + ": D % cp != 0 must fail naming D and cp: " + e);
          }
        }
        default -> checkCase(dir, c, 2, errors);
      }
    }
    for (int r = 0; r < 2; r++) {
      String[] m = Files.readString(dir.resolve("mem-leak-" + r + ".txt")).trim().split(" ");
      long before = Long.parseLong(m[0]);
      long afterClose = Long.parseLong(m[2]);
      assertEquals(before, afterClose, "rank " + r + ": free device memory after 100 forwards and close ("
          + afterClose + ") must equal the value before the stack (" + before + ")");
      assertEquals("0", m[3], "rank " + r + ": Java handles left open after close");
      assertTrue(Long.parseLong(m[4]) < (1 << 20), "rank " + r + ": the team still holds " + m[4]
          + " heap bytes after the plan closed (only its control block may stay)");
    }
    assertUnfusedEqualsFused(dir, 2, unfused);
    System.out.println("PASS cp2GridsDirectionsSizesAndRoutes: " + cases.size() + " cases; free device memory after 100"
        + " forwards and close equals the value before on both ranks; unfused == fused bit for bit in "
        + unfused.size() + " cases");
  }

  @Test
  @Order(3)
  void cp4GridsDirectionsSizesAndRoutes(@TempDir Path dir) throws Exception {
    List<CpCase> cases = grid(List.of("4x1", "2x2", "1x4"), new int[] {100, 1000, 2050}, 64, 101);
    cases.add(new CpCase("stack3", "2x2", Direction.OUTGOING, 100, 128, 2, true, true, 3, StoreRoute.AUTO, 5, -1, 1));
    // D = 256, H = 128: H / cp = 32 channels per rank
    cases.add(new CpCase("h128", "2x2", Direction.OUTGOING, 200, 256, 1, true, true, 2, StoreRoute.AUTO, 15, -1, 1)
        .withHidden(128));
    cases.add(new CpCase("h128in", "4x1", Direction.INCOMING, 100, 256, 1, true, false, 1, StoreRoute.PEER, 16, -1, 1)
        .withHidden(128));
    // D = 384, H = 256: 64 channels per rank, the wide stage 3 on 65 x 65 tiles
    cases.add(new CpCase("w384", "2x2", Direction.OUTGOING, 130, 384, 1, true, true, 1, StoreRoute.AUTO, 19, -1, 1)
        .withHidden(256));
    // D = 416, H = 32: stage 1's 16-channel chunks above D = 384, each spanning two ranks' 8
    // channels (the owner walk within a chunk), checked against float64 too
    cases.add(new CpCase("w416", "4x1", Direction.INCOMING, 100, 416, 1, true, true, 1, StoreRoute.AUTO, 21, -1, 1)
        .withHidden(32));
    runGrids(dir, 4, cases, List.of("g2x2-o1000-peer", "g4x1-i2050-peer", "g1x4-o100-peer", "stack3", "h128", "w384",
        "w416"),
        "cp4GridsDirectionsSizesAndRoutes");
  }

  /**
   * cp = 8 on the grids 8x1, 2x4 and 4x2: eight rank processes on the one GPU, both directions,
   * both store routes, N = 100 (checked against float64 too) and 1000 (the 2x4 and 4x2 tiles are
   * not square, so the row and column owners of a z value differ). Last in the order: it is the
   * slowest team to start.
   */
  @Test
  @Order(7)
  void cp8GridsDirectionsSizesAndRoutes(@TempDir Path dir) throws Exception {
    List<CpCase> cases = grid(List.of("8x1", "2x4", "4x2"), new int[] {100, 1000}, 64, 301);
    cases.add(new CpCase("stack2", "2x4", Direction.INCOMING, 100, 128, 2, true, true, 2, StoreRoute.AUTO, 7, -1, 1));
    // a hidden width above D (64 / 128): z's planes of a tile outnumber x's channels, and each rank
    // owns H / cp = 16 channels, half of stage 1's 32-channel chunk
    cases.add(new CpCase("h128", "4x2", Direction.OUTGOING, 100, 64, 1, true, true, 1, StoreRoute.AUTO, 17, -1, 1)
        .withHidden(128));
    runGrids(dir, 8, cases, List.of("g4x2-o1000-peer", "g8x1-i100-peer", "stack2"),
        "cp8GridsDirectionsSizesAndRoutes");
  }

  /**
   * Runs `cases` (plus unfused twins of the named ones) on a team of `size`, checks every case
   * and that each unfused twin equals its fused case bit for bit.
   */
  private void runGrids(Path dir, int size, List<CpCase> cases, List<String> unfusedOf, String test)
      throws Exception {
    List<String[]> unfused = addUnfused(cases, unfusedOf);
    Map<String, String> errors = runTeam(dir, size, cases, Set.of(), List.of());
    // every case is checked before the test fails: one device run then tells all that is wrong
    List<String> failed = new ArrayList<>();
    for (CpCase c : cases) {
      try {
        checkCase(dir, c, size, errors);
      } catch (AssertionError e) {
        failed.add(e.getMessage());
      }
    }
    assertTrue(failed.isEmpty(), failed.size() + " of " + cases.size() + " cases failed:\n" + String.join("\n", failed));
    assertUnfusedEqualsFused(dir, size, unfused);
    System.out.println("PASS " + test + ": " + cases.size() + " cases; unfused == fused bit for bit in "
        + unfused.size() + " cases");
  }

  @Test
  @Order(1)
  void aRankThatNeverJoinsIsNamed(@TempDir Path dir) throws Exception {
    List<CpCase> cases = List.of(new CpCase("x", "2x1", Direction.OUTGOING, 64, 32, 1, false, false, 1,
        StoreRoute.AUTO, 1, -1, 1));
    Map<String, String> errors = runTeam(dir, 2, cases, Set.of(1), List.of(), 5_000, 120).errors();
    String e = errors.get("team-0");
    assertTrue(e != null && e.contains("TeamException") && e.contains("rank(s) [1]") && e.contains("5000 ms"),
        "rank 0 must fail within the timeout naming rank 1: " + e);
    System.out.println("PASS aRankThatNeverJoinsIsNamed: " + e.trim());
  }

  /**
   * The team timeout of the fault tests: how long a rank waits for a dead peer before it names it.
   * It bounds the team's forming too (NVSHMEM init of two PEs with their heaps), hence not less.
   */
  static final long FAULT_TIMEOUT_MS = 10_000;
  /**
   * How much later than the timeout after a peer's death the surviving rank may end: the rest of
   * its forward (the waits after the failed one return at once), closing its stack, JVM exit.
   * Seconds are plenty; a hang (e.g. an NVSHMEM finalize waiting for the dead peer) is not.
   */
  static final long FAULT_SLACK_MS = 20_000;

  /** Rank 1 dies 1 s into 10000 forwards (a few ms each): wherever its kernels and signal waits are. */
  @Test
  @Order(5)
  void aRankKilledWhileTheForwardsRunIsNamed(@TempDir Path dir) throws Exception {
    assertThePeerOfADeadRankNamesIt(dir, "aRankKilledWhileTheForwardsRunIsNamed",
        faultCase("killed-midway", 10_000).halting(new CpCase.Halt(1, 1, 1_000)));
  }

  /** Rank 1 dies after forward 2 of 5: rank 0 enters forward 3 alone. */
  @Test
  @Order(6)
  void aRankKilledBetweenTwoForwardsIsNamed(@TempDir Path dir) throws Exception {
    assertThePeerOfADeadRankNamesIt(dir, "aRankKilledBetweenTwoForwardsIsNamed",
        faultCase("killed-between", 5).halting(new CpCase.Halt(1, 2, 0)));
  }

  /** cp = 2 along the rows at N = 1024, D = 64: a forward of a few ms, so a death lands inside one. */
  private static CpCase faultCase(String name, int repeats) {
    return new CpCase(name, "2x1", Direction.OUTGOING, 1024, 64, 1, true, false, 1, StoreRoute.AUTO, 21, -1, repeats);
  }

  /**
   * Runs {@code c}, in which rank 1 halts, and checks that rank 0 fails its forward with a
   * TeamException naming rank 1 and the timeout, and then ends by itself (RankMain's exit 4 after
   * a TeamException) within the timeout plus slack of rank 1's death; the rank processes' wall
   * limit (90 s) fails the test should either process hang.
   */
  private void assertThePeerOfADeadRankNamesIt(Path dir, String test, CpCase c) throws Exception {
    RankProcesses.Outcome o = runTeam(dir, 2, List.of(c), Set.of(), List.of(), FAULT_TIMEOUT_MS, 90);
    String halt = o.halts().get(1);
    // Its halt file is the proof; its exit status is not asserted: Runtime.halt still runs the native
    // atexit handlers (CUDA runtime, NVSHMEM), which may fail in a process killed mid-call.
    assertTrue(halt != null, "rank 1 must have halted as the case says (" + c.halt().text() + "): " + o.halts());
    String e = o.errors().get(c.name() + "-0");
    // cp_team.cu check_waits: the ranks the wait kernels flagged, the timeout and the phase.
    String named = "rank(s) 1 of the NVSHMEM team did not arrive within " + FAULT_TIMEOUT_MS
        + " ms during a CP forward (this is rank 0 of 2)";
    assertTrue(e != null && e.startsWith(TeamException.class.getName() + ": ") && e.contains(named),
        "rank 0 must fail with a TeamException saying \"" + named + "\": " + e);
    assertEquals(Set.of(c.name() + "-0"), o.errors().keySet(), "only rank 0's TeamException is reported");
    assertEquals(RankMain.TEAM_BROKEN, o.exitStatus().get(0), "rank 0 must end by itself through RankMain's exit"
        + " after a TeamException, not finish the case: " + RankProcesses.logs(dir, 2));
    long haltedAt = Long.parseLong(halt.substring(0, halt.indexOf(' ')));
    long endedAfter = o.endedAtMillis().get(0) - haltedAt;
    assertTrue(endedAfter <= FAULT_TIMEOUT_MS + FAULT_SLACK_MS, "rank 0 ended " + endedAfter + " ms after rank 1"
        + " died: it must end within the timeout (" + FAULT_TIMEOUT_MS + " ms) plus " + FAULT_SLACK_MS + " ms");
    System.out.println("PASS " + test + ": rank 1 halted " + halt.substring(halt.indexOf(' ') + 1) + " (exit status "
        + o.exitStatus().get(1) + "); rank 0 ended " + endedAfter + " ms later with status " + RankMain.TEAM_BROKEN
        + ": " + e.trim());
  }

  /** A cp = 2 case under compute-sanitizer memcheck, when -Dfoldcp.test.sanitizer names the tool. */
  @Test
  @Order(2)
  void memcheckCp2(@TempDir Path dir) throws Exception {
    String tool = System.getProperty("foldcp.test.sanitizer", "");
    Assumptions.assumeTrue(!tool.isBlank(), "no -Dfoldcp.test.sanitizer=PATH (bin/gpu-run passes compute-sanitizer)");
    List<CpCase> cases = List.of(
        new CpCase("mc-peer", "2x1", Direction.OUTGOING, 100, 64, 1, true, true, 1, StoreRoute.PEER, 3, -1, 1),
        new CpCase("mc-put", "1x2", Direction.INCOMING, 100, 64, 1, true, true, 1, StoreRoute.PUT, 4, -1, 1),
        // stage 3 as two kernels (D above 384), p in the plan's section
        new CpCase("mc-split", "2x1", Direction.OUTGOING, 66, 416, 1, true, true, 2, StoreRoute.PEER, 20, -1, 1)
            .withHidden(480));
    Map<String, String> errors = runTeam(dir, 2, cases, Set.of(),
        List.of(tool, "--tool", "memcheck", "--error-exitcode", "99", "--print-limit", "20"), TIMEOUT_MS, 150).errors();
    for (CpCase c : cases) {
      checkCase(dir, c, 2, errors);
    }
    for (int r = 0; r < 2; r++) {
      String log = Files.readString(dir.resolve("rank-" + r + ".log"));
      assertTrue(log.contains("ERROR SUMMARY: 0 errors"), "rank " + r + " under memcheck: " + RankProcesses.tail(log));
    }
    System.out.println("PASS memcheckCp2: compute-sanitizer memcheck, ERROR SUMMARY: 0 errors on both ranks, peer, put and a split stage 3");
  }

  /** Adds an unfused twin of each named case; returns the pairs {fused name, unfused name}. */
  private static List<String[]> addUnfused(List<CpCase> cases, List<String> names) {
    List<String[]> pairs = new ArrayList<>();
    for (String name : names) {
      CpCase c = cases.stream().filter(x -> x.name().equals(name)).findFirst()
          .orElseThrow(() -> new IllegalArgumentException("no case " + name));
      cases.add(c.unfused("unf-" + name));
      pairs.add(new String[] {name, "unf-" + name});
    }
    return pairs;
  }

  /** The reshards move values, never compute on them: unfused and fused outputs are the same bits. */
  private static void assertUnfusedEqualsFused(Path dir, int size, List<String[]> pairs) throws IOException {
    for (String[] p : pairs) {
      for (int r = 0; r < size; r++) {
        byte[] fused = Files.readAllBytes(dir.resolve("out-" + p[0] + "-" + r + ".bin"));
        byte[] unf = Files.readAllBytes(dir.resolve("out-" + p[1] + "-" + r + ".bin"));
        assertTrue(java.util.Arrays.equals(fused, unf), p[1] + " rank " + r + ": the unfused output must equal the"
            + " fused one bit for bit");
      }
    }
  }

  private void checkCase(Path dir, CpCase c, int size, Map<String, String> errors) throws IOException {
    for (int r = 0; r < size; r++) {
      assertFalse(errors.containsKey(c.name() + "-" + r), c.name() + " rank " + r + ": " + errors.get(c.name() + "-" + r));
    }
    ShardLayout layout = ShardLayout.forGpu(c.cpGrid(), c.n(), c.dim(), c.hidden());
    PairTensor[] tiles = new PairTensor[size];
    PairTensor[] again = new PairTensor[size];
    boolean twice = true;
    for (int r = 0; r < size; r++) {
      var t = layout.tile(r);
      tiles[r] = TileFiles.read(dir.resolve("out-" + c.name() + "-" + r + ".bin"), c.batch(), t.rows, t.cols, c.dim());
      Path second = dir.resolve("again-" + c.name() + "-" + r + ".bin");
      twice &= Files.exists(second);
      again[r] = twice ? TileFiles.read(second, c.batch(), t.rows, t.cols, c.dim()) : null;
      String[] route = Files.readString(dir.resolve("route-" + c.name() + "-" + r + ".txt")).trim().split(" ");
      String want = c.route() == StoreRoute.PUT ? "put" : "peer";  // AUTO on one GPU: every peer has a pointer
      assertEquals(want, route[0], c.name() + " rank " + r + ": store route");
      assertTrue(Long.parseLong(route[1]) > 0 && Long.parseLong(route[2]) > 0, c.name() + ": reshard bytes counted");
    }
    PairTensor cp = Sharding.unshard(tiles, layout, false);
    PairTensor one = reference(c);
    double err = Tensors.relativeError(cp, one);
    // where CP and cp = 1 differ (every route on one GPU has given cp = 1's bits so far): the
    // tiles and blocks name the stage to suspect
    String where = err == 0 ? "" : TileDiff.where(cp, one, layout);
    if (!where.isEmpty()) {
      System.out.printf("differs %-18s cp=%d rel.err vs cp=1 GPU %.3e:%s%n", c.name(), size, err, where);
    }
    // the second forward of the same tile in the same plan (cases of one forward): checked before
    // the first's assertion, so that a failing case says whether the difference repeated
    String repeat = "";
    PairTensor cp2 = twice ? Sharding.unshard(again, layout, false) : null;
    if (cp2 != null && !cp2.sameAs(cp)) {
      double err2 = Tensors.relativeError(cp2, one);
      String where2 = err2 == 0 ? "" : TileDiff.where(cp2, one, layout);
      repeat = String.format("%n  forward 2 in the same plan differs from forward 1; vs cp = 1: %.3e%s", err2,
          where2.isEmpty() ? " (equal)" : where2);
      System.out.printf("differs %-18s cp=%d forward 2 vs forward 1 of the same plan; forward 2 vs cp=1 GPU %.3e:%s%n",
          c.name(), size, err2, where2.isEmpty() ? " equal" : where2);
    }
    assertTrue(!Double.isNaN(err) && err <= 1e-2, c.name() + ": CP vs our cp = 1 GPU result: ||cp - one|| / ||one|| = "
        + err + " must be <= 1e-2 (NaN never passes)" + where + repeat);
    assertTrue(repeat.isEmpty(), c.name() + ": a second forward of the same tile in the same plan must give the first's"
        + " bits" + repeat);
    if (c.hidden() != c.dim()) {
      // each rank runs its H / cp channels with the arithmetic of cp = 1, and the reshards move
      // values without computing on them: the bits of cp = 1 (the assembled tiles carry no mask)
      PairTensor values = cp.copy();
      values.setMask(one.maskCopy());
      assertTrue(values.sameAs(one), c.name() + ": CP at H = " + c.hidden() + ", D = " + c.dim() + " must equal our"
          + " cp = 1 GPU result bit for bit (||cp - one|| / ||one|| = " + err + ")");
    }
    String f64 = "";
    if (c.n() <= 128) {
      f64 = String.format(", vs float64 %.3e",
          Tensors.assertWithinContract(cp, Reference64.forward(x(c), c.stack(0)), c.name() + ": CP vs float64"));
    }
    System.out.printf("ok %-22s cp=%d rel.err vs cp=1 GPU %.3e%s%n", c.name(), size, err, f64);
  }

  private static final Map<String, PairTensor> INPUTS = new LinkedHashMap<>();
  private static final Map<String, PairTensor> REFERENCES = new LinkedHashMap<>();

  /** The case's input, made once per shape (cases of one shape share it). */
  private static PairTensor x(CpCase c) {
    return INPUTS.computeIfAbsent(c.inputKey(), k -> c.input());
  }

  /** Our cp = 1 GPU result of the case, made once per input and layer stack. */
  private static PairTensor reference(CpCase c) {
    String key = c.inputKey() + "|" + c.direction() + c.biases() + c.layers() + c.seed() + "h" + c.hidden();
    return REFERENCES.computeIfAbsent(key, k -> gpu.forward(x(c), c.stack(0)));
  }

  /**
   * The tiles of {@code c} with, on rank r, a NaN at (0, 3 + r, 5, 7) and an Inf after it at
   * (0, 9, 1, 0): written first, so {@link #writeTiles} leaves them.
   */
  private static void writeNonFiniteTiles(Path dir, CpCase c) throws IOException {
    ShardLayout layout = ShardLayout.forGpu(c.cpGrid(), c.n(), c.dim(), c.hidden());
    for (int r = 0; r < c.cpGrid().size(); r++) {
      PairTensor t = Sharding.tile(x(c), layout.tile(r), c.n(), true);
      t.row(0, 3 + r)[5 * c.dim() + 7] = (short) 0x7FC0;
      t.row(0, 9)[c.dim()] = (short) 0x7F80;
      TileFiles.write(dir.resolve(c.tileFile(r)), t);
    }
  }

  /** Writes every rank's input tile of every case the test can make an input for. */
  private static void writeTiles(Path dir, int size, List<CpCase> cases) throws IOException {
    for (CpCase c : cases) {
      if (c.n() > 4096 || size != c.cpGrid().size()) {
        continue;  // cases that must fail before they need an input
      }
      ShardLayout layout = ShardLayout.forGpu(c.cpGrid(), c.n(), c.dim(), c.hidden());
      for (int r = 0; r < size; r++) {
        Path f = dir.resolve(c.tileFile(r));
        if (!Files.exists(f)) {
          TileFiles.write(f, Sharding.tile(x(c), layout.tile(r), c.n(), true));
        }
      }
    }
  }

  static Map<String, String> runTeam(Path dir, int size, List<CpCase> cases, Set<Integer> absent, List<String> prefix)
      throws Exception {
    return runTeam(dir, size, cases, absent, prefix, TIMEOUT_MS, 420).errors();
  }

  /**
   * Starts the rank processes (all but {@code absent}), waits for them and returns what they left:
   * every error they wrote, keyed "case-rank" (or "team-rank"), halts, exit status and times.
   */
  static RankProcesses.Outcome runTeam(Path dir, int size, List<CpCase> cases, Set<Integer> absent,
      List<String> prefix, long timeoutMs, int wallSeconds) throws Exception {
    Files.write(dir.resolve("cases.txt"), cases.stream().map(CpCase::line).toList(), StandardCharsets.UTF_8);
    writeTiles(dir, size, cases);
    return RankProcesses.run(dir, size, CpTeamRank.class, absent, prefix, timeoutMs, HEAP, wallSeconds);
  }
}
