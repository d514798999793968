package org.foldcp.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.spark.api.java.JavaRDD;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.SingleRankRoute;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The cp = 1 route on a cluster of separate executor JVMs. */
@ExtendWith(SharedCluster.class)
class ClusterSingleRankTest {
  @Test
  void complexesInTwoExecutorJvmsEqualTheCp1ForwardBitForBit(LocalCluster cluster) {
    LayerStack stack = Complexes.stack(31L);
    // Sizes that are not multiples of anything, and one complex with a mask.
    List<TileRecord> complexes = List.of(
        Complexes.whole("alpha", 20, 1L, 0.0),
        Complexes.whole("beta", 17, 2L, 0.15));
    // One partition per complex: with one core per executor, the two tasks start together, one
    // in each executor.
    JavaRDD<TileRecord> in = cluster.context().parallelize(complexes, complexes.size());

    List<PlacedTile> out = cluster.collect(PlacedTile.tag(new SingleRankRoute()
        .run(in, stack, RoutePlan.single(1, "cluster test"), RouteMetrics.NONE)));

    assertEquals(complexes.size(), out.size(), "one whole output tile per complex");
    assertTrue(out.stream().allMatch(p -> p.tile.isWholeComplex()), "every output tile is a whole complex");
    Set<String> jvms = out.stream().map(p -> p.jvm).collect(Collectors.toSet());
    Set<String> executors = out.stream().map(p -> p.executorId).collect(Collectors.toSet());
    assertEquals(2, jvms.size(), "the two complexes ran in two executor JVMs, got " + jvms);
    assertEquals(2, executors.size(), "the two complexes ran in two executors, got " + executors);
    assertFalse(jvms.contains(PlacedTile.currentJvm()), "no task ran in the driver's JVM");

    Complexes.assertBitForBit(Complexes.cp1Forward(complexes, stack),
        Complexes.reassemble(out.stream().map(p -> p.tile).collect(Collectors.toList())), "single-rank route");
  }
}
