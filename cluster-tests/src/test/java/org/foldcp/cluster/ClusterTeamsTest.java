package org.foldcp.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.barrier.BarrierRoute;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Two CP teams of two CPU ranks in one barrier stage across two executor JVMs of two task slots
 * each (teams = auto: 4 slots / cp = 2): the data of every complex crosses Spark's Kryo serializer
 * and the TCP meshes between processes, and every output equals the cp = 1 forward bit for bit.
 */
@ExtendWith(SharedCluster.class)
class ClusterTeamsTest {
  /** Two task slots per Worker: four at once, two teams of cp = 2. */
  static final class TwoSlotsEach implements Supplier<Map<String, String>> {
    @Override
    public Map<String, String> get() {
      return Map.of(LocalCluster.WORKER_CORES, "2");
    }
  }

  @Test
  void twoTeamsOfTwoAcrossTwoExecutorsEqualTheCp1Forward(@ClusterSettings(TwoSlotsEach.class) LocalCluster cluster)
      throws Exception {
    LayerStack stack = Complexes.stack(61L);
    List<TileRecord> complexes = List.of(
        Complexes.whole("a", 16, 5L, 0.0),
        Complexes.whole("b", 21, 6L, 0.2),
        Complexes.whole("c", 9, 7L, 0.1),
        Complexes.whole("d", 24, 8L, 0.0),
        Complexes.whole("e", 13, 9L, 0.3));
    RoutePlan plan = new RoutePlan(RoutePlan.Kind.BARRIER, CpGrid.of(2, 1), 1, 120_000, 30_000,
        "cluster test: teams = auto").withTeams(RoutePlan.AUTO_TEAMS);

    JavaSparkContext context = cluster.context();
    BarrierTaskPlacement placement = new BarrierTaskPlacement();
    context.sc().addSparkListener(placement);
    List<PlacedTile> out;
    try {
      JavaRDD<TileRecord> routed = new BarrierRoute().run(context.parallelize(complexes, 2), stack, plan,
          RouteMetrics.NONE);
      assertEquals(4, routed.getNumPartitions(), "teams = auto: 4 task slots / cp = 2 -> 2 teams, 4 barrier tasks");
      out = cluster.collect(PlacedTile.tag(routed));
      placement.awaitEvents(context);
    } finally {
      context.sc().removeSparkListener(placement);
    }

    assertEquals(2, placement.barrierExecutors().size(), "the barrier tasks ran in both executors");
    assertFalse(out.stream().anyMatch(p -> p.jvm.equals(PlacedTile.currentJvm())), "no task ran in the driver's JVM");
    Map<String, Long> tilesPerComplex = out.stream()
        .collect(Collectors.groupingBy(p -> p.tile.complexId, Collectors.counting()));
    assertEquals(Map.of("a", 2L, "b", 2L, "c", 2L, "d", 2L, "e", 2L), tilesPerComplex,
        "one output tile per (complex, rank of its team)");
    Complexes.assertBitForBit(Complexes.cp1Forward(complexes, stack),
        Complexes.reassemble(out.stream().map(p -> p.tile).collect(Collectors.toList())), "two teams of cp = 2");
  }
}
