package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.gpu.cp.StoreRoute;
import org.foldcp.ops.gpu.cp.TeamException;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;

/**
 * The parts of a GPU team's barrier stage that run without a GPU: the announcement round it
 * shares with the TCP team, one process per rank, the order of its stacks, the resource rules
 * the preflight enforces, and failures that keep naming the rank and stay TeamExceptions.
 */
class GpuTeamStageTest {
  private static final LayerStack STACK = LayerStack.randomAlternating(2, 8, 5, true);
  /** The plan checks run before any weights are needed, so these tests broadcast none. */
  private static final SharedStack NO_WEIGHTS = null;
  private static final CpGrid GRID = CpGrid.oneD(2);
  private static final RoutePlan GPU_PLAN = new RoutePlan(RoutePlan.Kind.BARRIER, GRID, 1, 60_000, 10_000, "test")
      .withNvshmem(new RoutePlan.Nvshmem(null, 1L << 30, StoreRoute.AUTO));

  private static RankAnnouncement announcement(int rank, String memberId) {
    List<TileRecord> tiles = List.of(new TileRecord("a", 13, 0, 0, PairTensor.zeros(1, 1, 1, 8)));
    return RankAnnouncement.of(rank, memberId, "host-" + rank, "exec-" + rank, tiles, STACK);
  }

  @Test
  void theAnnouncementRoundAgreesThroughAnyAllGather() {
    String[] messages = {announcement(0, "executor 0@h pid 1").encode(), announcement(1, "executor 1@h pid 2").encode()};
    TeamFormation.Agreement a = TeamFormation.agree(mine -> messages, 0, 1, GRID, announcement(1, "executor 1@h pid 2"));
    assertEquals(2, a.team().size());
    assertEquals("executor 0@h pid 1", a.team().get(0).address());
    assertEquals(List.of(new ComplexShape("a", 13, 8)), a.complexes());
    String[] swapped = {messages[1], messages[0]};
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> TeamFormation.agree(mine -> swapped, 0, 0, GRID, announcement(0, "x")));
    assertTrue(e.getMessage().contains("the team order must be the partition order"), e.getMessage());
  }

  @Test
  void twoRanksInOneProcessCannotFormAnNvshmemTeam() {
    TeamFormation.checkOneProcessPerRank(List.of(announcement(0, "p1"), announcement(1, "p2")));
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> TeamFormation.checkOneProcessPerRank(
        List.of(announcement(0, "executor driver@h pid 7"), announcement(1, "executor driver@h pid 7"))));
    assertTrue(e.getMessage().startsWith("ranks 0 and 1 run in one executor process (executor driver@h pid 7), and an"
        + " NVSHMEM team needs one process per rank"), e.getMessage());
    assertTrue(e.getMessage().contains("spark.foldcp.cp.transport=tcp"), e.getMessage());
  }

  @Test
  void stacksFollowTheAgreedOrderOnePerShape() {
    List<ComplexShape> complexes = List.of(new ComplexShape("a", 100, 8), new ComplexShape("b", 64, 8),
        new ComplexShape("c", 100, 8), new ComplexShape("d", 64, 16));
    Map<String, List<ComplexShape>> groups = GpuRankTask.byShape(complexes);
    assertEquals(List.of("100x8", "64x8", "64x16"), new ArrayList<>(groups.keySet()));
    assertEquals(List.of(complexes.get(0), complexes.get(2)), groups.get("100x8"));
  }

  @Test
  void gpuRanksNeedAnNvshmemPlan() {
    RoutePlan tcp = new RoutePlan(RoutePlan.Kind.BARRIER, GRID, 1, 60_000, 10_000, "test");
    assertThrows(IllegalArgumentException.class, () -> new GpuRankTask(NO_WEIGHTS, tcp, RouteMetrics.NONE));
    assertDoesNotThrow(() -> new GpuRankTask(NO_WEIGHTS, GPU_PLAN, RouteMetrics.NONE));
  }

  @Test
  void aBrokenTeamStaysATeamExceptionNamingTheRank() {
    TeamException cause = new TeamException("rank(s) [1] of 2 did not arrive within 300 ms");
    RuntimeException e = RankBody.withRank(GPU_PLAN, 0, cause);
    assertInstanceOf(TeamException.class, e);
    assertSame(cause, e.getCause());
    assertTrue(e.getMessage().startsWith("barrier rank 0 of cp = 2 (grid 2x1) failed: rank(s) [1] of 2"), e.getMessage());
    assertInstanceOf(InvalidInputException.class, RankBody.withRank(GPU_PLAN, 1, InvalidInputException.of("D", 30, "x")));
    assertInstanceOf(IllegalStateException.class, RankBody.withRank(GPU_PLAN, 1, new RuntimeException("other")));
  }

  private static SparkConf sparkConf(String... kv) {
    SparkConf c = new SparkConf(false);
    for (int i = 0; i < kv.length; i += 2) {
      c.set(kv[i], kv[i + 1]);
    }
    return c;
  }

  @Test
  void preflightAcceptsOneRankPerExecutor() {
    String cluster = "spark://head:7077";
    BarrierPreflight.checkOneRankPerExecutor(sparkConf("spark.executor.resource.gpu.amount", "1",
        "spark.task.resource.gpu.amount", "1"), false, cluster, GPU_PLAN);
    BarrierPreflight.checkOneRankPerExecutor(sparkConf("spark.executor.resource.gpu.amount", "1",
        "spark.executor.cores", "4", "spark.task.cpus", "4"), false, cluster, GPU_PLAN);
  }

  @Test
  void preflightRefusesSettingsThatLetAnExecutorRunTwoRanks() {
    String cluster = "spark://head:7077";
    for (SparkConf c : List.of(
        sparkConf(),
        sparkConf("spark.executor.resource.gpu.amount", "1", "spark.task.resource.gpu.amount", "0.5"),
        sparkConf("spark.executor.resource.gpu.amount", "1", "spark.executor.cores", "8"),
        sparkConf("spark.executor.cores", "1"))) {
      InvalidInputException e = assertThrows(InvalidInputException.class,
          () -> BarrierPreflight.checkOneRankPerExecutor(c, false, cluster, GPU_PLAN), c.toDebugString());
      String m = e.getMessage();
      assertTrue(m.startsWith("spark.foldcp.cp.transport = nvshmem (barrier cp=2 grid=2x1 backend=gpu transport=nvshmem"
          + " storeRoute=auto reshard=fused): the GPU team runs each of its cp = 2 ranks as an NVSHMEM PE, one per executor process"
          + " and GPU, so no executor may run two tasks of the barrier stage at once"), m);
      assertTrue(m.contains("spark.executor.resource.gpu.amount=1, spark.task.resource.gpu.amount=1"), m);
      assertTrue(m.endsWith("or set spark.foldcp.cp.transport=tcp to run the ranks on the CPU"), m);
    }
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> BarrierPreflight.checkOneRankPerExecutor(
        sparkConf("spark.executor.resource.gpu.amount", "1", "spark.task.resource.gpu.amount", "1"), true, "local[4]",
        GPU_PLAN));
    assertTrue(e.getMessage().contains("which these settings allow (master local[4] runs every task in the driver's"
        + " JVM)"),
        e.getMessage());
  }
}
