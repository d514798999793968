package org.foldcp.spark.shuffle;

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
import org.apache.spark.util.LongAccumulator;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;
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

class ShuffleRouteTest {
  static final int D = 8;
  static final LayerStack STACK = LayerStack.randomAlternating(2, D, 23, true);
  /** Two complexes of different N, both masked; 13 is a multiple of no grid dimension, so every grid pads it. */
  static final Map<String, PairTensor> COMPLEXES = new LinkedHashMap<>();

  static {
    COMPLEXES.put("a", PairTensor.random(1, 13, D, 101, 0.15));
    COMPLEXES.put("b", PairTensor.random(1, 16, D, 102, 0.15));
  }

  static SparkSession spark;
  static JavaSparkContext jsc;

  @BeforeAll
  static void start() {
    spark = LocalSpark.start();
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  enum Tiling { WHOLE, IRREGULAR }

  static Stream<Arguments> gridsAndTilings() {
    List<Arguments> out = new ArrayList<>();
    for (CpGrid g : List.of(CpGrid.oneD(2), CpGrid.of(2, 2), CpGrid.oneD(4), CpGrid.of(1, 4))) {
      for (Tiling t : Tiling.values()) {
        out.add(Arguments.of(g, t));
      }
    }
    return out.stream();
  }

  @ParameterizedTest(name = "grid {0}, input {1}")
  @MethodSource("gridsAndTilings")
  void equalsCpuBackendBitForBit(CpGrid grid, Tiling tiling) {
    List<TileRecord> in = new ArrayList<>();
    long seed = 7;
    for (Map.Entry<String, PairTensor> e : COMPLEXES.entrySet()) {
      in.addAll(tiling == Tiling.WHOLE ? Complexes.whole(e.getKey(), e.getValue())
          : Complexes.irregular(e.getKey(), e.getValue(), seed++));
    }
    List<TileRecord> out = run(in, STACK, grid);

    for (TileRecord t : out) {
      ShardLayout layout = new ShardLayout(grid, t.nTokens, D);
      TileBounds window = layout.tile(layout.tokenOwner(t.row0, t.col0));
      assertTrue(t.row0 == window.row0 && t.col0 == window.col0
              && t.tile.rows() == Math.min(window.rows, t.nTokens - window.row0)
              && t.tile.cols() == Math.min(window.cols, t.nTokens - window.col0),
          "output tiles must be the layout's tiles cropped to N: " + t + " vs window " + window);
    }
    Map<String, PairTensor> whole = Complexes.reassemble(out, nTokens(COMPLEXES), D);
    for (Map.Entry<String, PairTensor> e : COMPLEXES.entrySet()) {
      assertTrue(whole.get(e.getKey()).sameAs(reference(e.getValue(), STACK)),
          "complex '" + e.getKey() + "' on grid " + grid + " must equal the CPU backend bit for bit");
    }
  }

  /**
   * Small N leaves whole ranks in the padding (N = 1 on 2x2: ranks 1, 2, 3); they still own
   * channels and must still take part in both shuffles.
   */
  @ParameterizedTest(name = "grid {0}")
  @MethodSource("tinyGrids")
  void ranksWhollyInThePaddingStillTakePart(CpGrid grid) {
    Map<String, PairTensor> tiny = new LinkedHashMap<>();
    for (int n = 1; n <= 3; n++) {
      tiny.put("n" + n, PairTensor.random(1, n, D, 200 + n, 0.0));
    }
    List<TileRecord> in = new ArrayList<>();
    tiny.forEach((id, x) -> in.addAll(Complexes.whole(id, x)));
    Map<String, PairTensor> whole = Complexes.reassemble(run(in, STACK, grid), nTokens(tiny), D);
    tiny.forEach((id, x) -> assertTrue(whole.get(id).sameAs(reference(x, STACK)),
        "complex '" + id + "' on grid " + grid + " must equal the CPU backend bit for bit"));
  }

  static Stream<Arguments> tinyGrids() {
    return Stream.of(Arguments.of(CpGrid.oneD(4)), Arguments.of(CpGrid.of(2, 2)), Arguments.of(CpGrid.of(1, 4)));
  }

  /**
   * Every step of every layer runs once per rank tile: the layers chain through shuffle files,
   * not through recomputation. A second action reruns only the last output step.
   */
  @Test
  void eachStepRunsOncePerTileAndLayer() {
    CpGrid grid = CpGrid.of(2, 2);
    List<TileRecord> in = new ArrayList<>();
    COMPLEXES.forEach((id, x) -> in.addAll(Complexes.whole(id, x)));
    CountingMetrics m = new CountingMetrics(jsc);
    JavaRDD<TileRecord> result = new ShuffleRoute().run(jsc.parallelize(in, 2), STACK, ShuffleRoute.plan(grid, 1, "test"), m);
    List<TileRecord> out = result.collect();

    long rankTiles = COMPLEXES.size() * grid.size(); // N = 13 and 16 leave no rank wholly in the padding
    long pairBytes = 0;
    for (PairTensor x : COMPLEXES.values()) {
      pairBytes += 2L * x.rows() * x.cols() * x.dim();
    }
    assertEquals(rankTiles, out.size());
    assertEquals(rankTiles, m.tiles.value());
    assertEquals(pairBytes, m.bytesIn.value(), "bytesIn: the input's bf16 pair data");
    assertEquals(pairBytes, m.bytesOut.value(), "bytesOut: the output's bf16 pair data, padding cropped");
    assertEquals(3 * STACK.size() * rankTiles, m.computeSteps.value(), "project, triangle, output per tile per layer");
    assertTrue(m.computeNanos.value() > 0);

    assertEquals(rankTiles, result.count());
    assertEquals((3 * STACK.size() + 1) * rankTiles, m.computeSteps.value(),
        "a second action must rerun only the last output step, from the last shuffle's files");
  }

  @Test
  void channelCountNotDivisibleByCpIsRefusedOnTheDriver() {
    int d = 6;
    PairTensor x = PairTensor.random(1, 8, d, 1, 0);
    JavaRDD<TileRecord> in = jsc.parallelize(Complexes.whole("x", x));
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> new ShuffleRoute()
        .run(in, LayerStack.randomAlternating(1, d, 1, false), ShuffleRoute.plan(CpGrid.oneD(4), 1, "test"),
            RouteMetrics.NONE));
    assertTrue(e.getMessage().contains("D = 6") && e.getMessage().contains("cp = 4"), e.getMessage());
  }

  @Test
  void tileOfAnotherChannelCountIsRefused() {
    PairTensor x = PairTensor.random(1, 8, 2 * D, 1, 0);
    InvalidInputException e = invalidInputOf(() -> run(Complexes.whole("wide", x), STACK, CpGrid.oneD(2)));
    assertTrue(e.getMessage().contains("'wide'") && e.getMessage().contains("= 16")
        && e.getMessage().contains("D = 8"), e.getMessage());
  }

  @Test
  void rankWithoutAnyInputTileIsNamed() {
    PairTensor x = COMPLEXES.get("b");
    // Only the top half of N = 16: rank 1 of grid 2x1 (rows 8..15) gets nothing.
    List<TileRecord> topHalf = List.of(new TileRecord("b", 16, 0, 0, x.window(0, 0, 8, 16)));
    InvalidInputException e = invalidInputOf(() -> run(topHalf, STACK, CpGrid.oneD(2)));
    assertTrue(e.getMessage().contains("'b'") && e.getMessage().contains("[1]")
        && e.getMessage().contains("cover"), e.getMessage());
  }

  @Test
  void plansOfOtherRoutesAreRefused() {
    JavaRDD<TileRecord> in = jsc.parallelize(Complexes.whole("a", COMPLEXES.get("a")));
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> new ShuffleRoute().run(in, STACK, RoutePlan.single(1, "test"), RouteMetrics.NONE));
    assertTrue(e.getMessage().contains("SINGLE"), e.getMessage());
    assertThrows(InvalidInputException.class, () -> new ShuffleRoute(0));
  }

  static List<TileRecord> run(List<TileRecord> in, LayerStack stack, CpGrid grid) {
    return new ShuffleRoute()
        .run(jsc.parallelize(in, 3), stack, ShuffleRoute.plan(grid, 1, "test"), RouteMetrics.NONE)
        .collect();
  }

  static PairTensor reference(PairTensor x, LayerStack stack) {
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      return cpu.forward(x, stack);
    }
  }

  static Map<String, Integer> nTokens(Map<String, PairTensor> complexes) {
    Map<String, Integer> n = new LinkedHashMap<>();
    complexes.forEach((id, x) -> n.put(id, x.n()));
    return n;
  }

  /** The InvalidInputException a task failed with, found in the cause chain of Spark's exception. */
  static InvalidInputException invalidInputOf(Runnable job) {
    Throwable t = assertThrows(Exception.class, job::run);
    for (; t != null; t = t.getCause()) {
      if (t instanceof InvalidInputException) {
        return (InvalidInputException) t;
      }
    }
    throw new AssertionError("the job failed, but not with an InvalidInputException");
  }

  /** RouteMetrics summed over tasks through accumulators; counts computeNanos reports as steps. */
  static final class CountingMetrics implements RouteMetrics {
    private static final long serialVersionUID = 1L;
    final LongAccumulator tiles;
    final LongAccumulator bytesIn;
    final LongAccumulator bytesOut;
    final LongAccumulator computeSteps;
    final LongAccumulator computeNanos;

    CountingMetrics(JavaSparkContext jsc) {
      tiles = jsc.sc().longAccumulator("tiles");
      bytesIn = jsc.sc().longAccumulator("bytesIn");
      bytesOut = jsc.sc().longAccumulator("bytesOut");
      computeSteps = jsc.sc().longAccumulator("computeSteps");
      computeNanos = jsc.sc().longAccumulator("computeNanos");
    }

    @Override
    public void tiles(long count) {
      tiles.add(count);
    }

    @Override
    public void bytesIn(long bytes) {
      bytesIn.add(bytes);
    }

    @Override
    public void bytesOut(long bytes) {
      bytesOut.add(bytes);
    }

    @Override
    public void computeNanos(long nanos) {
      computeSteps.add(1);
      computeNanos.add(nanos);
    }
  }
}
