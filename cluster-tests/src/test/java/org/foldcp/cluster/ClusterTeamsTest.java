package org.foldcp.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.util.CollectionAccumulator;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.barrier.BarrierRoute;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.TeamSpan;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Two CP teams of two CPU ranks in one barrier stage across two executor JVMs of two task slots
 * each (teams = auto: 4 slots / cp = 2): the data of every complex crosses Spark's Kryo serializer
 * and the TCP meshes between processes, and every output equals the cp = 1 forward bit for bit.
 * The teams work side by side: every rank reports when its forwards ran (RouteMetrics.teamSpan,
 * through an accumulator) and the two teams' spans overlap.
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
    // Large enough that each team's forwards last far longer than the skew of the teams' starts
    // (both start once the stage's allGather formed them), small enough for a CI machine.
    List<TileRecord> complexes = List.of(
        Complexes.whole("a", 160, 5L, 0.0),
        Complexes.whole("b", 210, 6L, 0.2),
        Complexes.whole("c", 90, 7L, 0.1),
        Complexes.whole("d", 240, 8L, 0.0),
        Complexes.whole("e", 130, 9L, 0.3));
    RoutePlan plan = new RoutePlan(RoutePlan.Kind.BARRIER, CpGrid.of(2, 1), 1, 120_000, 30_000,
        "cluster test: teams = auto").withTeams(RoutePlan.AUTO_TEAMS);

    JavaSparkContext context = cluster.context();
    CollectionAccumulator<TeamSpan> spans = context.sc().collectionAccumulator("team spans");
    BarrierTaskPlacement placement = new BarrierTaskPlacement();
    context.sc().addSparkListener(placement);
    List<PlacedTile> out;
    try {
      JavaRDD<TileRecord> routed = new BarrierRoute().run(context.parallelize(complexes, 2), stack, plan,
          new SpanMetrics(spans));
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
    List<TeamSpan> reported = spans.value();
    assertEquals(4, reported.size(), "every rank of both teams reports its span: " + reported);
    TeamSpan team0 = reported.stream().filter(s -> s.team() == 0 && s.rank() == 0).findFirst().orElseThrow();
    TeamSpan team1 = reported.stream().filter(s -> s.team() == 1 && s.rank() == 0).findFirst().orElseThrow();
    assertEquals(5, team0.complexes() + team1.complexes(), "each complex in exactly one team: " + reported);
    assertTrue(team0.complexes() > 0 && team1.complexes() > 0, "both teams got complexes: " + reported);
    assertTrue(team0.overlaps(team1), "the two teams' forwards ran side by side: " + reported);
    Complexes.assertBitForBit(Complexes.cp1Forward(complexes, stack),
        Complexes.reassemble(out.stream().map(p -> p.tile).collect(Collectors.toList())), "two teams of cp = 2");
  }

  /** Collects the ranks' team spans on the driver. */
  private static final class SpanMetrics implements RouteMetrics {
    private static final long serialVersionUID = 1L;
    private final CollectionAccumulator<TeamSpan> spans;

    SpanMetrics(CollectionAccumulator<TeamSpan> spans) {
      this.spans = spans;
    }

    @Override
    public void teamSpan(TeamSpan span) {
      spans.add(span);
    }
  }
}
