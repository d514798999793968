package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
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
}
