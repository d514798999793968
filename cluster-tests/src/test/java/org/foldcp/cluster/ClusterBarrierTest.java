package org.foldcp.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.spark.api.java.JavaSparkContext;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.barrier.BarrierRoute;
import org.foldcp.spark.route.TileRoute;
import org.foldcp.spark.tiles.Retiling;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The barrier route, cp = 2 on a 2x1 grid, with its two ranks in the two executor JVMs. */
@ExtendWith(SharedCluster.class)
class ClusterBarrierTest {
  /**
   * Looked up by name: the route lives in the spark-plugin module, and this test must compile
   * (and say why it is skipped) in a build that does not have it.
   */
  private static final CpGrid GRID = CpGrid.of(2, 1);

  @Test
  void cp2AcrossTwoExecutorsEqualsTheCp1ForwardBitForBit(LocalCluster cluster) throws Exception {
    TileRoute barrier = new BarrierRoute();
    LayerStack stack = Complexes.stack(47L);
    // N = 21 does not divide by cp: the layout pads it with masked tokens and crops the output.
    List<TileRecord> complexes = List.of(
        Complexes.whole("alpha", 16, 3L, 0.0),
        Complexes.whole("beta", 21, 4L, 0.2));
    // Routes take any input tiling: alpha comes whole, beta as the four tiles of a 2x2 grid.
    List<TileRecord> tiles = new ArrayList<>();
    tiles.add(complexes.get(0));
    Retiling.pieces(complexes.get(1), CpGrid.of(2, 2)).forEach(p -> tiles.add(p._2()));
    RoutePlan plan = new RoutePlan(RoutePlan.Kind.BARRIER, GRID, 1, 120_000, 30_000,
        "cluster test: cp = 2 across two executor JVMs");

    JavaSparkContext context = cluster.context();
    BarrierTaskPlacement placement = new BarrierTaskPlacement();
    context.sc().addSparkListener(placement);
    List<PlacedTile> out;
    try {
      out = cluster.collect(PlacedTile.tag(barrier.run(context.parallelize(tiles, 2), stack, plan, RouteMetrics.NONE)));
      placement.awaitEvents(context);
    } finally {
      context.sc().removeSparkListener(placement);
    }

    assertTrue(placement.barrierStageCount() >= 1, "the barrier route ran a barrier stage");
    Set<String> rankExecutors = placement.barrierExecutors();
    assertEquals(2, rankExecutors.size(), "the barrier tasks ran in both executors, got " + rankExecutors);
    assertFalse(out.stream().anyMatch(p -> p.jvm.equals(PlacedTile.currentJvm())), "no task ran in the driver's JVM");
    Map<String, Long> tilesPerComplex = out.stream()
        .collect(Collectors.groupingBy(p -> p.tile.complexId, Collectors.counting()));
    assertEquals(Map.of("alpha", 2L, "beta", 2L), tilesPerComplex, "one output tile per (complex, rank)");

    Complexes.assertBitForBit(Complexes.cp1Forward(complexes, stack),
        Complexes.reassemble(out.stream().map(p -> p.tile).collect(Collectors.toList())), "barrier route cp = 2");
  }

}
