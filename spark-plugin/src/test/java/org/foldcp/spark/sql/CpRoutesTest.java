package org.foldcp.spark.sql;

import static org.foldcp.spark.sql.SparkTestSession.IDS;
import static org.foldcp.spark.sql.SparkTestSession.N;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.ExplainMode;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.route.RoutePlan.Kind;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The CP routes through FoldCp.apply give the cp = 1 operator library's result bit for bit.
 * Each test runs once its route is part of the build.
 */
class CpRoutesTest {
  private static SparkSession spark;
  private static LayerStack stack;

  @BeforeAll
  static void start() {
    spark = SparkTestSession.start();
    stack = SparkTestSession.stack();
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }


  /** Runs {@code tiles} through {@code kind} on {@code grid} and checks values, layout, plan and metrics. */
  private static void assertRouteMatchesCp1(Dataset<Row> tiles, Kind kind, String grid) {
    Dataset<Row> out = FoldCp.apply(tiles, stack, FoldCpOptions.fromConf().withRoute(kind).withGrid(grid));
    TriMulExec exec = SparkTestSession.operator(out);
    assertEquals(kind, exec.plan().kind);
    String route = kind.name().toLowerCase(java.util.Locale.ROOT);
    CpGrid g = CpGrid.parse(grid);
    String explain = ((org.apache.spark.sql.classic.Dataset<Row>) out).queryExecution()
        .explainString(ExplainMode.fromString("simple"));
    assertTrue(explain.contains("FoldCpTriMul route=" + route + " cp=" + g.size() + " grid=" + g + " backend=cpu"
        + (kind == Kind.BARRIER ? " transport=tcp" : "") + " layers="), explain);

    List<Row> rows = out.collectAsList();
    int expectedTiles = 0;
    for (int c = 0; c < IDS.length; c++) {
      ShardLayout layout = new ShardLayout(g, N[c], SparkTestSession.D);
      for (int rank = 0; rank < g.size(); rank++) {
        if (layout.tile(rank).row0 < N[c] && layout.tile(rank).col0 < N[c]) {
          expectedTiles++;
        }
      }
      assertTrue(FoldCp.assemble(rows, IDS[c]).sameAs(SparkTestSession.reference(c, stack)),
          route + " " + grid + ": complex " + IDS[c] + " differs from CpuTriMul");
    }
    assertEquals(expectedTiles, rows.size(), "one tile per (complex, rank) holding real positions");
    assertTrue(SparkTestSession.metric(exec, SqlRouteMetrics.NUM_TILES) > 0, "tiles metric");
    assertTrue(SparkTestSession.metric(exec, SqlRouteMetrics.BYTES_IN) > 0, "bytes in metric");
    assertTrue(SparkTestSession.metric(exec, SqlRouteMetrics.BYTES_OUT) > 0, "bytes out metric");
    assertTrue(SparkTestSession.metric(exec, SqlRouteMetrics.COMPUTE_TIME) > 0, "compute time metric");
    assertTrue(SparkTestSession.metric(exec, SqlRouteMetrics.RESHARD_BYTES) > 0, "bytes resharded between ranks");
    assertEquals(0, SparkTestSession.metric(exec, SqlRouteMetrics.RESHARD_TO_CHANNELS_BYTES)
        + SparkTestSession.metric(exec, SqlRouteMetrics.RESHARD_TO_TOKENS_BYTES), "no fused reshards on the CPU");
  }

  @Test
  void barrierOutputSupportsPartialActions() {
    // show(), take() and limit() run only some partitions, which Spark refuses inside a barrier stage
    Dataset<Row> out = FoldCp.apply(SparkTestSession.wholeComplexes(spark), stack,
        FoldCpOptions.fromConf().withRoute(Kind.BARRIER).withGrid("2"));
    assertEquals(1, out.limit(1).collectAsList().size());
    assertEquals(2, out.select("complex_id").takeAsList(2).size());
    out.select("complex_id", "row0", "col0").show();
  }

  @Test
  void barrierRouteOnOneAndTwoDimensionalGrids() {
    assertRouteMatchesCp1(SparkTestSession.wholeComplexes(spark), Kind.BARRIER, "2");
    assertRouteMatchesCp1(SparkTestSession.wholeComplexes(spark), Kind.BARRIER, "2x2");
  }

  @Test
  void shuffleRouteOnOneAndTwoDimensionalGrids() {
    assertRouteMatchesCp1(SparkTestSession.wholeComplexes(spark), Kind.SHUFFLE, "2");
    assertRouteMatchesCp1(SparkTestSession.wholeComplexes(spark), Kind.SHUFFLE, "2x2");
  }

  @Test
  void cpRoutesTakeInputInAnyTiling() {
    assertRouteMatchesCp1(SparkTestSession.rowBands(spark, 5), Kind.SHUFFLE, "2x2");
    assertRouteMatchesCp1(SparkTestSession.rowBands(spark, 5), Kind.BARRIER, "2x1");
  }
}
