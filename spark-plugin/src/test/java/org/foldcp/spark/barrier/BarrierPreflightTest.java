package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.apache.spark.SparkConf;
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
import org.junit.jupiter.api.Test;

/** Configurations the barrier route refuses on the driver, at once, instead of letting Spark fail late or wait. */
class BarrierPreflightTest {
  private static final LayerStack STACK = LayerStack.randomAlternating(1, 8, 3, false);

  private static void runOn(SparkSession spark, CpGrid grid) {
    JavaRDD<TileRecord> tiles = JavaSparkContext.fromSparkContext(spark.sparkContext())
        .parallelize(List.of(new TileRecord("c", 6, 0, 0, PairTensor.random(1, 6, 8, 1, 0))), 1);
    new BarrierRoute().run(tiles, STACK, new RoutePlan(RoutePlan.Kind.BARRIER, grid, 1, 60_000, 10_000, "test"),
        RouteMetrics.NONE).collect();
  }

  @Test
  void moreRanksThanTaskSlotsFailsAtOnceNamingBoth() {
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
      SparkSession spark = SparkSessions.local("local[2]");
      try {
        InvalidInputException e = assertThrows(InvalidInputException.class, () -> runOn(spark, CpGrid.oneD(4)));
        String m = e.getMessage();
        assertTrue(m.startsWith("cp = 4 (grid 4x1): the barrier route runs all cp ranks at once, one task slot each,"
            + " but only 2 task slots are available (master local[2], spark.task.cpus = 1)"), m);
        assertTrue(m.contains("spark.foldcp.cp <= 2") && m.contains("spark.foldcp.route=shuffle"), m);
      } finally {
        SparkSessions.stop(spark);
      }
    });
  }

  @Test
  void aTcpTeamIsRefusedWhereSparkEncryptsExecutorTrafficEvenForAPlanBuiltByHand() {
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
      SparkSession spark = SparkSessions.local("local[2]", "spark.authenticate", "true",
          "spark.network.crypto.enabled", "true");
      try {
        InvalidInputException e = assertThrows(InvalidInputException.class, () -> runOn(spark, CpGrid.oneD(2)));
        assertTrue(e.getMessage().startsWith("spark.foldcp.route = 'barrier': its CPU ranks exchange the reshards over"
            + " their own TCP connections, which are authenticated but not encrypted, and spark.network.crypto.enabled"
            + " = true asks for encrypted traffic between executors; use route shuffle (or auto)"), e.getMessage());
      } finally {
        SparkSessions.stop(spark);
      }
    });
  }

  @Test
  void taskCpusCountAgainstTheSlots() {
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
      SparkSession spark = SparkSessions.local("local[4]", "spark.task.cpus", "2");
      try {
        InvalidInputException e = assertThrows(InvalidInputException.class, () -> runOn(spark, CpGrid.of(2, 2)));
        assertTrue(e.getMessage().contains("only 2 task slots are available (master local[4], spark.task.cpus = 2)"),
            e.getMessage());
      } finally {
        SparkSessions.stop(spark);
      }
    });
  }

  @Test
  void dynamicAllocationIsRefusedSuggestingTheShuffleRoute() {
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
      SparkSession spark = SparkSessions.local("local[4]", "spark.dynamicAllocation.enabled", "true");
      try {
        InvalidInputException e = assertThrows(InvalidInputException.class, () -> runOn(spark, CpGrid.oneD(2)));
        String m = e.getMessage();
        assertTrue(m.startsWith("spark.dynamicAllocation.enabled = true: the barrier route cannot run with dynamic"
            + " allocation"), m);
        assertTrue(m.contains("spark.foldcp.route=shuffle"), m);
      } finally {
        SparkSessions.stop(spark);
      }
    });
  }

  private static final RoutePlan CP2 =
      new RoutePlan(RoutePlan.Kind.BARRIER, CpGrid.oneD(2), 1, 300_000, 10_000, "test");

  @Test
  void gpusAskedButNoneOfferedIsNamedAsTheCauseWithoutSuggestingCpZero() {
    SparkConf conf = new SparkConf(false).set("spark.executor.resource.gpu.amount", "1")
        .set("spark.task.resource.gpu.amount", "1");
    String m = BarrierPreflight.slotShortage(CP2, 0, conf, null, 0).getMessage();
    assertTrue(m.startsWith("cp = 2 (grid 2x1): the barrier route runs all cp ranks at once, one task slot each, but"
        + " only 0 task slots are available (0 executors registered, spark.task.cpus = 1)"), m);
    assertTrue(m.contains("no executor registered within 300 s (spark.foldcp.barrier.timeoutSeconds), and executors"
        + " ask for resources (spark.executor.resource.gpu.amount = 1, spark.task.resource.gpu.amount = 1)"), m);
    assertTrue(m.contains("conf/spark-defaults.cpu.conf.template"), m);
    assertFalse(m.contains("spark.foldcp.cp <="), m);
  }

  @Test
  void noExecutorsWithoutResourceRequestsPointsAtTheWorkers() {
    String m = BarrierPreflight.slotShortage(CP2, 0, new SparkConf(false), null, 0).getMessage();
    assertTrue(m.contains("no executor registered within 300 s (spark.foldcp.barrier.timeoutSeconds): check that the"
        + " workers are up and offer the cores and memory each executor asks for"), m);
    assertFalse(m.contains("spark.foldcp.cp <=") || m.contains("resources ("), m);
  }

  @Test
  void fewerRanksAreSuggestedOnlyWhenThereIsASlot() {
    String one = BarrierPreflight.slotShortage(CP2, 1, new SparkConf(false), null, 1).getMessage();
    assertTrue(one.contains("only 1 task slots are available (1 executors registered, spark.task.cpus = 1)")
        && one.contains("use fewer ranks (spark.foldcp.cp <= 1), more cores or executors, or"
        + " spark.foldcp.route=shuffle"), one);
    SparkConf wide = new SparkConf(false).set("spark.task.cpus", "4");
    String none = BarrierPreflight.slotShortage(CP2, 0, wide, "local[2]", 0).getMessage();
    assertTrue(none.contains("only 0 task slots are available (master local[2], spark.task.cpus = 4)")
        && none.endsWith("never come; more cores or executors, or spark.foldcp.route=shuffle"), none);
  }
}
