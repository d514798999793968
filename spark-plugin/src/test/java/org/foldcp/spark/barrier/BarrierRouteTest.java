package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The barrier route in Spark local mode, cp tasks on one machine meeting over loopback TCP: its
 * output, pasted back into whole tensors, must equal the operator library's cp = 1 forward bit
 * for bit, for whole-complex input and for an irregular tiling of the input.
 */
class BarrierRouteTest {
  private static final int D = 8;
  private static final LayerStack STACK = LayerStack.randomAlternating(2, D, 21, true);
  /** Two complexes of different N; 13 is a multiple of no grid dimension, so the layouts pad. */
  private static final Map<String, PairTensor> COMPLEXES = new LinkedHashMap<>();
  private static final Map<String, PairTensor> EXPECTED = new LinkedHashMap<>();

  private static SparkSession spark;
  private static JavaSparkContext jsc;

  @BeforeAll
  static void start() {
    COMPLEXES.put("complex-13", PairTensor.random(1, 13, D, 101, 0.15));
    COMPLEXES.put("complex-16", PairTensor.random(1, 16, D, 102, 0.15));
    EXPECTED.putAll(cp1(COMPLEXES, STACK));
    spark = SparkSessions.local("local[4]");
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
  }

  @AfterAll
  static void stop() {
    SparkSessions.stop(spark);
  }

  static Stream<Arguments> grids() {
    return Stream.of(
        Arguments.of(CpGrid.of(2, 1), false), Arguments.of(CpGrid.of(2, 1), true),
        Arguments.of(CpGrid.of(2, 2), false), Arguments.of(CpGrid.of(2, 2), true),
        Arguments.of(CpGrid.of(4, 1), false), Arguments.of(CpGrid.of(4, 1), true));
  }

  static RoutePlan plan(CpGrid grid) {
    return new RoutePlan(RoutePlan.Kind.BARRIER, grid, 1, 60_000, 10_000, "test");
  }

  /** The operator library's cp = 1 forward of each complex: what every route must give bit for bit. */
  static Map<String, PairTensor> cp1(Map<String, PairTensor> complexes, LayerStack stack) {
    Map<String, PairTensor> out = new LinkedHashMap<>();
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      complexes.forEach((id, x) -> out.put(id, cpu.forward(x, stack)));
    }
    return out;
  }

  /** Each complex whole, as one tile. */
  static List<TileRecord> whole(Map<String, PairTensor> complexes) {
    List<TileRecord> out = new ArrayList<>();
    complexes.forEach((id, x) -> out.add(new TileRecord(id, x.n(), 0, 0, x)));
    return out;
  }

  /** Each complex cut along rows {0, 5, 6, N} and columns {0, 9, N}: tiles of unequal shapes, unrelated to any grid. */
  static List<TileRecord> irregular(Map<String, PairTensor> complexes) {
    List<TileRecord> out = new ArrayList<>();
    complexes.forEach((id, x) -> {
      int n = x.n();
      int[] rows = {0, 5, 6, n};
      int[] cols = {0, 9, n};
      for (int a = 0; a + 1 < rows.length; a++) {
        for (int b = 0; b + 1 < cols.length; b++) {
          out.add(new TileRecord(id, n, rows[a], cols[b],
              x.window(rows[a], cols[b], rows[a + 1] - rows[a], cols[b + 1] - cols[b])));
        }
      }
    });
    return out;
  }

  /** Output tiles the route gives: one per (complex, rank) whose layout tile holds real positions. */
  static int realTiles(Map<String, PairTensor> complexes, CpGrid grid) {
    int count = 0;
    for (PairTensor x : complexes.values()) {
      for (int rank = 0; rank < grid.size(); rank++) {
        if (new ComplexShape("c", x.n(), x.dim()).hasRealPositions(grid, rank)) {
          count++;
        }
      }
    }
    return count;
  }

  /** Pastes output tiles into whole (1, N, N, D) tensors; every position must come exactly once. */
  static Map<String, PairTensor> reassemble(List<TileRecord> tiles) {
    Map<String, PairTensor> out = new LinkedHashMap<>();
    Map<String, int[][]> cover = new LinkedHashMap<>();
    for (TileRecord t : tiles) {
      PairTensor whole = out.computeIfAbsent(t.complexId, id -> PairTensor.zeros(1, t.nTokens, t.nTokens, t.dim()));
      int[][] c = cover.computeIfAbsent(t.complexId, id -> new int[t.nTokens][t.nTokens]);
      whole.paste(t.tile, t.row0, t.col0);
      for (int i = 0; i < t.tile.rows(); i++) {
        for (int j = 0; j < t.tile.cols(); j++) {
          c[t.row0 + i][t.col0 + j]++;
        }
      }
    }
    cover.forEach((id, c) -> {
      for (int i = 0; i < c.length; i++) {
        for (int j = 0; j < c.length; j++) {
          assertEquals(1, c[i][j], "output position (" + i + ", " + j + ") of " + id + " given " + c[i][j] + " times");
        }
      }
    });
    return out;
  }

  @ParameterizedTest(name = "grid {0}, irregular input tiles: {1}")
  @MethodSource("grids")
  void equalsTheSingleRankBackendBitForBit(CpGrid grid, boolean irregular) {
    List<TileRecord> in = irregular ? irregular(COMPLEXES) : whole(COMPLEXES);
    RecordingMetrics metrics = new RecordingMetrics("grid-" + grid + "-" + irregular);
    JavaRDD<TileRecord> out = new BarrierRoute().run(jsc.parallelize(in, 3), STACK, plan(grid), metrics);
    List<TileRecord> tiles = out.collect();
    assertEquals(realTiles(COMPLEXES, grid), tiles.size(), "one output tile per (complex, rank) with real positions");
    Map<String, PairTensor> got = reassemble(tiles);
    assertEquals(EXPECTED.keySet(), got.keySet());
    EXPECTED.forEach((id, want) -> assertTrue(got.get(id).sameAs(want),
        id + " on grid " + grid + " must equal the cp = 1 result bit for bit"));

    long pairBytes = 0;
    for (PairTensor x : COMPLEXES.values()) {
      pairBytes += 2L * x.n() * x.n() * D;
    }
    assertEquals(tiles.size(), metrics.get("tiles"));
    assertEquals(pairBytes, metrics.get("bytesIn"), "bytes in: the real positions of every rank's tile");
    assertEquals(pairBytes, metrics.get("bytesOut"));
    assertTrue(metrics.get("computeNanos") > 0 && metrics.get("reshardNanos") > 0,
        "compute " + metrics.get("computeNanos") + " ns, reshard " + metrics.get("reshardNanos") + " ns");
  }

  @Test
  void aComplexSmallerThanTheGridRunsWithPaddingOnlyRanks() {
    // N = 2 on 4x1: padded to 32 tokens (tiles of 8 rows), ranks 1 to 3 hold only padding
    Map<String, PairTensor> tiny = new LinkedHashMap<>();
    tiny.put("tiny", PairTensor.random(1, 2, D, 7, 0));
    tiny.put("complex-13", COMPLEXES.get("complex-13"));
    List<TileRecord> tiles = new BarrierRoute()
        .run(jsc.parallelize(whole(tiny), 2), STACK, plan(CpGrid.oneD(4)), RouteMetrics.NONE).collect();
    Map<String, PairTensor> got = reassemble(tiles);
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      assertTrue(got.get("tiny").sameAs(cpu.forward(tiny.get("tiny"), STACK)));
    }
    assertTrue(got.get("complex-13").sameAs(EXPECTED.get("complex-13")));
    assertEquals(1 + realTiles(Map.of("complex-13", COMPLEXES.get("complex-13")), CpGrid.oneD(4)), tiles.size(),
        "no output tiles for the padding-only ranks of 'tiny'");
  }

  @Test
  void noInputGivesNoOutput() {
    assertEquals(0, new BarrierRoute().run(jsc.parallelize(new ArrayList<TileRecord>(), 2), STACK,
        plan(CpGrid.oneD(2)), RouteMetrics.NONE).count());
  }

  @Test
  void aRankThatFailsFailsTheStageAtOnceNamingIt() {
    // a read timeout of two minutes: only the failed rank's abort can end its peers' wait this soon
    RoutePlan patient = new RoutePlan(RoutePlan.Kind.BARRIER, CpGrid.of(2, 2), 1, 120_000, 10_000, "test");
    long t0 = System.nanoTime();
    Exception e = assertThrows(Exception.class, () -> new BarrierRoute()
        .run(jsc.parallelize(whole(COMPLEXES), 2), STACK, patient, new FailOnRank(1)).collect());
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertTrue(seconds < 30, "the stage took " + seconds + " s to fail");
    assertTrue(e.getMessage().contains("rank 1") && e.getMessage().contains("injected failure on rank 1"), e.getMessage());
  }

  /** Metrics that throw on one rank, just before it starts its first complex. */
  private static final class FailOnRank implements RouteMetrics {
    private static final long serialVersionUID = 1L;
    private final int rank;

    FailOnRank(int rank) {
      this.rank = rank;
    }

    @Override
    public void bytesIn(long bytes) {
      if (org.apache.spark.TaskContext.getPartitionId() == rank) {
        throw new IllegalStateException("injected failure on rank " + rank);
      }
    }
  }

  @Test
  void channelsNotDivisibleByCpAreRefusedOnTheDriver() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> new BarrierRoute().run(jsc.parallelize(whole(COMPLEXES), 1), STACK, plan(CpGrid.oneD(3)), RouteMetrics.NONE));
    assertTrue(e.getMessage().startsWith("D = 8: must be divisible by cp = 3"), e.getMessage());
  }

  @Test
  void aPlanOfAnotherKindIsRefused() {
    RoutePlan shuffle = new RoutePlan(RoutePlan.Kind.SHUFFLE, CpGrid.oneD(2), 1, 60_000, 10_000, "test");
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> new BarrierRoute().run(jsc.parallelize(whole(COMPLEXES), 1), STACK, shuffle, RouteMetrics.NONE));
    assertTrue(e.getMessage().startsWith("route plan kind = SHUFFLE: the barrier route runs barrier plans only"),
        e.getMessage());
  }

  @Test
  void anIncompleteComplexFailsTheStageNamingTheGap() {
    // the tiles of complex-16 leave out its bottom-right corner: rank 3 of 2x2 gets no piece at all
    List<TileRecord> in = new ArrayList<>(whole(Map.of("complex-13", COMPLEXES.get("complex-13"))));
    PairTensor x = COMPLEXES.get("complex-16");
    in.add(new TileRecord("complex-16", 16, 0, 0, x.window(0, 0, 8, 16)));
    in.add(new TileRecord("complex-16", 16, 8, 0, x.window(8, 0, 8, 8)));
    Exception e = assertThrows(Exception.class, () -> new BarrierRoute()
        .run(jsc.parallelize(in, 2), STACK, plan(CpGrid.of(2, 2)), RouteMetrics.NONE).collect());
    assertTrue(e.getMessage().contains("complex set of rank 3 = no tile of complex 'complex-16' (N = 16, D = 8)")
        && e.getMessage().contains("must cover the whole N x N grid"), e.getMessage());
  }
}
