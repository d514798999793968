package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/**
 * Two teams of two CPU ranks in one barrier stage (local[4], loopback TCP): each complex runs in
 * the team the plan gave it, both teams get work, and every output equals the cp = 1 forward bit
 * for bit.
 */
class BarrierTeamsTest {
  private static final int D = 8;
  private static final LayerStack STACK = LayerStack.randomAlternating(2, D, 23, true);
  private static final Map<String, PairTensor> COMPLEXES = new LinkedHashMap<>();
  private static final Map<String, PairTensor> EXPECTED = new LinkedHashMap<>();

  private static SparkSession spark;
  private static JavaSparkContext jsc;

  @BeforeAll
  static void start() {
    int[] ns = {5, 9, 13, 16, 21, 30};
    for (int k = 0; k < ns.length; k++) {
      COMPLEXES.put("c" + k, PairTensor.random(1, ns[k], D, 300 + k, 0.1));
    }
    EXPECTED.putAll(BarrierRouteTest.cp1(COMPLEXES, STACK));
    spark = SparkSessions.local("local[4]");
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
  }

  @AfterAll
  static void stop() {
    SparkSessions.stop(spark);
  }

  private static RoutePlan plan(int teams) {
    return new RoutePlan(RoutePlan.Kind.BARRIER, CpGrid.of(2, 1), 1, 60_000, 10_000, "test").withTeams(teams);
  }

  @Test
  void twoTeamsOfTwoEqualCp1BitForBitEachComplexInItsTeam() {
    RoutePlan plan = plan(2);
    assertEquals(4, plan.stageTasks());
    assertTrue(plan.describe().contains("teams=2"), plan.describe());
    TeamAssignment teams = TeamAssignment.of(COMPLEXES.entrySet().stream()
        .map(e -> new TeamAssignment.Complex(e.getKey(), e.getValue().n(), D)).toList(), 2);
    JavaRDD<TileRecord> out = new BarrierRoute().run(jsc.parallelize(BarrierRouteTest.whole(COMPLEXES), 3), STACK,
        plan, RouteMetrics.NONE);
    List<Tuple2<Integer, TileRecord>> byPartition = out
        .mapPartitionsWithIndex((p, it) -> {
          List<Tuple2<Integer, TileRecord>> l = new ArrayList<>();
          it.forEachRemaining(t -> l.add(new Tuple2<>(p, t)));
          return l.iterator();
        }, false)
        .collect();
    List<TileRecord> tiles = new ArrayList<>();
    Map<Integer, Set<String>> teamComplexes = new HashMap<>();
    for (Tuple2<Integer, TileRecord> pt : byPartition) {
      int team = pt._1() / 2;
      String id = pt._2().complexId;
      assertEquals(teams.teamOf(id), team, id + " must run in the team the plan gave it (partition " + pt._1() + ")");
      teamComplexes.computeIfAbsent(team, t -> new HashSet<>()).add(id);
      tiles.add(pt._2());
    }
    assertEquals(2, teamComplexes.size(), "both teams run complexes: " + teamComplexes);
    Map<String, PairTensor> got = BarrierRouteTest.reassemble(tiles);
    assertEquals(EXPECTED.keySet(), got.keySet());
    EXPECTED.forEach((id, want) -> assertTrue(got.get(id).sameAs(want),
        id + " in team " + teams.teamOf(id) + " must equal the cp = 1 result bit for bit"));
  }

  @Test
  void autoTeamsFillTheTaskSlots() {
    RoutePlan auto = plan(RoutePlan.AUTO_TEAMS);
    assertTrue(auto.describe().endsWith("teams=auto"), auto.describe());
    assertThrows(IllegalStateException.class, auto::stageTasks, "unresolved until the route sees the slots");
    JavaRDD<TileRecord> out = new BarrierRoute().run(jsc.parallelize(BarrierRouteTest.whole(COMPLEXES), 3), STACK,
        auto, RouteMetrics.NONE);
    assertEquals(4, out.getNumPartitions(), "local[4] holds 4 / cp = 2 teams of two ranks");
    Map<String, PairTensor> got = BarrierRouteTest.reassemble(out.collect());
    EXPECTED.forEach((id, want) -> assertTrue(got.get(id).sameAs(want), id + " must equal the cp = 1 result"));
  }

  @Test
  void complexesSpreadByWorkNotByCount() {
    List<TeamAssignment.Complex> cs = new ArrayList<>();
    cs.add(new TeamAssignment.Complex("big", 3000, 128));
    for (int k = 0; k < 20; k++) {
      cs.add(new TeamAssignment.Complex("small-" + k, 100, 128));
    }
    TeamAssignment a = TeamAssignment.of(cs, 2);
    int bigTeam = a.teamOf("big");
    for (int k = 0; k < 20; k++) {
      assertEquals(1 - bigTeam, a.teamOf("small-" + k), "the small ones all go to the other team");
    }
    assertEquals(1, a.counts()[bigTeam]);
    assertTrue(a.work()[bigTeam] > a.work()[1 - bigTeam]);
  }

  @Test
  void teamsOfEqualWorkSplitEvenly() {
    List<TeamAssignment.Complex> cs = new ArrayList<>();
    for (int k = 0; k < 8; k++) {
      cs.add(new TeamAssignment.Complex("c" + k, 256, 64));
    }
    TeamAssignment a = TeamAssignment.of(cs, 4);
    assertEquals(List.of(2, 2, 2, 2), java.util.Arrays.stream(a.counts()).boxed().toList());
    assertThrows(IllegalStateException.class, () -> a.teamOf("unknown"));
  }

  @Test
  void moreTeamsThanSlotsIsRefusedNamingTeamsAndSlots() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> new BarrierRoute().run(jsc.parallelize(BarrierRouteTest.whole(COMPLEXES), 3), STACK, plan(3),
            RouteMetrics.NONE).collect());
    assertTrue(e.getMessage().contains("cp x spark.foldcp.cp.teams = 2 x 3 = 6")
        && e.getMessage().contains("only 4 task slots"), e.getMessage());
  }

  @Test
  void gpuPlansCarryTeamsAndOtherRoutesRefuseThem() {
    RoutePlan gpu = plan(2).withNvshmem(new RoutePlan.Nvshmem(null, 1L << 30, org.foldcp.ops.gpu.cp.StoreRoute.AUTO));
    assertEquals(2, gpu.teams);
    assertEquals(4, gpu.stageTasks());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> RoutePlan.single(1, "test").withTeams(2));
    assertTrue(e.getMessage().contains("2 teams") && e.getMessage().contains("barrier route only"), e.getMessage());
  }
}
