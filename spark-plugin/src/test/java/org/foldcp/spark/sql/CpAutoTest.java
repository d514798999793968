package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.ExplainMode;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.tiles.PairTiles;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * spark.foldcp.cp = auto on a mixed dataset: 40 complexes of N = 50 to 3000 (D = 8, one layer), a
 * memory cap per rank that the large ones miss at cp = 1 (the cost model's 10 B N^2 D / cp bytes:
 * 192 MiB holds N = 1200 whole, N = 1600 and 1800 at cp = 2, N = 2400 and 3000 at cp = 4). The
 * small ones run as the single route, the large ones in barrier stages of TCP teams (local[4]:
 * two teams of two for cp = 2), in one DataFrame, and every output equals its cp = 1 result bit
 * for bit.
 */
class CpAutoTest {
  private static final int D = 8;
  private static final LayerStack STACK = LayerStack.randomAlternating(1, D, 41, true);
  private static final Map<String, PairTensor> COMPLEXES = new LinkedHashMap<>();
  private static SparkSession spark;

  @BeforeAll
  static void start() {
    List<Integer> ns = new ArrayList<>();
    for (int k = 0; k < 35; k++) {
      ns.add(50 + 10 * k); // 50 .. 390
    }
    ns.addAll(List.of(1200, 1600, 1800, 2400, 3000));
    for (int k = 0; k < ns.size(); k++) {
      COMPLEXES.put(String.format("m%02d", k), PairTensor.random(1, ns.get(k), D, 500 + k, 0.1));
    }
    spark = SparkTestSession.start();
    spark.conf().set(FoldCpConf.CP.name(), "auto");
    spark.conf().set(FoldCpConf.CP_AUTO_CANDIDATES.name(), "1,2,4");
    spark.conf().set(FoldCpConf.CP_AUTO_MEMORY_PER_RANK.name(), "192m");
  }

  @AfterAll
  static void stop() {
    spark.conf().unset(FoldCpConf.CP.name());
    spark.conf().unset(FoldCpConf.CP_AUTO_CANDIDATES.name());
    spark.conf().unset(FoldCpConf.CP_AUTO_MEMORY_PER_RANK.name());
    spark.stop();
  }

  private static Dataset<Row> tiles() {
    List<Row> rows = new ArrayList<>();
    COMPLEXES.forEach((id, x) -> rows.add(PairTiles.toRow(id, x.n(), 0, 0, x, 0)));
    return spark.createDataFrame(rows, PairTiles.SCHEMA);
  }

  @Test
  void smallOnesAtCp1LargeOnesInTeamsEveryOutputEqualToCp1() {
    Dataset<Row> out = FoldCp.apply(tiles(), STACK, FoldCpOptions.fromConf());
    String explain = ((org.apache.spark.sql.classic.Dataset<Row>) out).queryExecution()
        .explainString(ExplainMode.fromString("extended"));
    assertTrue(explain.contains("cp auto: 36 of 40 complexes at cp = 1 (N 50..1200"), explain);
    assertTrue(explain.contains("cp auto: 2 of 40 complexes at cp = 2 (N 1600..1800"), explain);
    assertTrue(explain.contains("cp auto: 2 of 40 complexes at cp = 4 (N 2400..3000"), explain);

    List<Row> rows = out.collectAsList();
    List<TriMulExec> execs = new ArrayList<>();
    collect(((org.apache.spark.sql.classic.Dataset<Row>) out).queryExecution().executedPlan(), execs);
    Map<Integer, RoutePlan> byCp = new LinkedHashMap<>();
    execs.forEach(e -> byCp.put(e.plan().grid.size(), e.plan()));
    assertEquals(RoutePlan.Kind.SINGLE, byCp.get(1).kind, byCp.toString());
    assertEquals(RoutePlan.Kind.BARRIER, byCp.get(2).kind, byCp.toString());
    assertEquals(RoutePlan.Transport.TCP, byCp.get(2).transport, byCp.toString());
    assertEquals(RoutePlan.AUTO_TEAMS, byCp.get(2).teams, "teams = auto: the stage resolves them (local[4]: two of two)");
    assertEquals(RoutePlan.Kind.BARRIER, byCp.get(4).kind, byCp.toString());
    assertTrue(byCp.get(4).describe().contains("teams=auto"), byCp.get(4).describe());

    try (CpuTriMul cpu = new CpuTriMul(2)) {
      for (Map.Entry<String, PairTensor> c : COMPLEXES.entrySet()) {
        PairTensor want = cpu.forward(c.getValue(), STACK);
        assertTrue(FoldCp.assemble(rows, c.getKey()).sameAs(want),
            "complex " + c.getKey() + " (N = " + c.getValue().n() + "): cp auto differs from cp = 1");
      }
    }
  }

  @Test
  void plannerGroupsByCpAndRefusesAComplexNoCandidateHolds() {
    FoldCpConf conf = FoldCpConf.from(Map.of(FoldCpConf.CP.name(), "auto",
        FoldCpConf.CP_AUTO_CANDIDATES.name(), "1,2", FoldCpConf.CP_AUTO_MEMORY_PER_RANK.name(), "1m"));
    List<Row> shapes = List.of(RowFactory.create("small", 100), RowFactory.create("mid", 150));
    List<CpAutoPlanner.Group> groups = CpAutoPlanner.plan(shapes, STACK, conf);
    // 10 N^2 D: N = 100 -> 800000 B (fits 1 MiB whole), N = 150 -> 1800000 B (fits at cp = 2)
    assertEquals(2, groups.size());
    assertEquals(1, groups.get(0).cp());
    assertEquals(List.of("small"), groups.get(0).ids());
    assertEquals(2, groups.get(1).cp());
    assertEquals(List.of("mid"), groups.get(1).ids());
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> CpAutoPlanner.plan(List.of(RowFactory.create("huge", 1000)), STACK, conf));
    assertTrue(e.getMessage().contains("complex 'huge'") && e.getMessage().contains("1048576 bytes"), e.getMessage());
    // cp = auto with an explicit grid is refused at once
    InvalidInputException g = assertThrows(InvalidInputException.class, () -> FoldCpConf.from(Map.of(
        FoldCpConf.CP.name(), "auto", FoldCpConf.GRID.name(), "2x1")));
    assertTrue(g.getMessage().contains("must be empty when spark.foldcp.cp = auto"), g.getMessage());
  }

  /** GPU teams: one NVSHMEM world per executor for life, so one team size per job: cp 2 moves up to 4. */
  @Test
  void gpuTeamsOfTwoSizesMoveUpToTheLargest() {
    RoutePlan single = RoutePlan.single(1, "cp 1");
    java.util.function.IntFunction<RoutePlan> gpu = cp -> RoutePlan.of(RoutePlan.Kind.BARRIER,
        org.foldcp.ops.cp.CpGrid.oneD(cp), 1, FoldCpConf.defaults(), "gpu").withNvshmem(
        new RoutePlan.Nvshmem(null, 1L << 30, org.foldcp.ops.gpu.cp.StoreRoute.AUTO));
    List<CpAutoPlanner.Group> groups = List.of(
        new CpAutoPlanner.Group(1, List.of("a"), 100, 100, 1, "fits"),
        new CpAutoPlanner.Group(2, List.of("c", "b"), 800, 900, 2, "fits at 2"),
        new CpAutoPlanner.Group(4, List.of("d"), 2000, 2000, 3, "fits at 4"));
    List<CpAutoPlanner.Group> moved = CpAutoPlanner.oneNvshmemTeamSize(groups, Map.of(1, single, 2, gpu.apply(2),
        4, gpu.apply(4)));
    assertEquals(2, moved.size(), moved.toString());
    assertEquals(1, moved.get(0).cp());
    assertEquals(4, moved.get(1).cp());
    assertEquals(List.of("b", "c", "d"), moved.get(1).ids());
    assertEquals(800, moved.get(1).minN());
    assertTrue(moved.get(1).why().contains("one NVSHMEM team size per job"), moved.get(1).why());
    // TCP teams form per stage: both sizes stay
    RoutePlan tcp2 = RoutePlan.of(RoutePlan.Kind.BARRIER, org.foldcp.ops.cp.CpGrid.oneD(2), 1, FoldCpConf.defaults(), "tcp");
    RoutePlan tcp4 = RoutePlan.of(RoutePlan.Kind.BARRIER, org.foldcp.ops.cp.CpGrid.oneD(4), 1, FoldCpConf.defaults(), "tcp");
    assertEquals(groups, CpAutoPlanner.oneNvshmemTeamSize(groups, Map.of(1, single, 2, tcp2, 4, tcp4)));
  }

  private static void collect(org.apache.spark.sql.execution.SparkPlan p, List<TriMulExec> out) {
    if (p instanceof TriMulExec) {
      out.add((TriMulExec) p);
      return;
    }
    if (p instanceof org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec) {
      collect(((org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec) p).executedPlan(), out);
      return;
    }
    scala.collection.Iterator<org.apache.spark.sql.execution.SparkPlan> it = p.children().iterator();
    while (it.hasNext()) {
      collect(it.next(), out);
    }
  }
}
