package org.foldcp.spark.sql;

import static org.foldcp.spark.sql.SparkTestSession.IDS;
import static org.foldcp.spark.sql.SparkTestSession.N;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.ExplainMode;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.route.RoutePlan.Kind;
import org.foldcp.spark.tiles.PairTiles;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The CP routes through FoldCp.apply give the cp = 1 operator library's result bit for bit.
 * Each test runs once its route is part of the build. Also: non-finite input is refused by every
 * route unless allowed, and the shuffle route reports reshard time.
 */
class CpRoutesTest {
  private static SparkSession spark;
  private static LayerStack stack;

  @BeforeAll
  static void start() {
    spark = SparkTestSession.start();
    spark.conf().set("spark.foldcp.metrics.level", "debug"); // every metric, so that each is checked
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
    assertEquals(rows.size(), SparkTestSession.metric(exec, SqlRouteMetrics.NUM_OUTPUT_ROWS), "numOutputRows");
    assertEquals(SparkTestSession.metric(exec, SqlRouteMetrics.COMPUTE_TIME)
        + SparkTestSession.metric(exec, SqlRouteMetrics.RESHARD_TIME), SparkTestSession.metric(exec, SqlRouteMetrics.OP_TIME),
        "opTime is the operator's compute plus reshard time");
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

  // NaN and Inf in the input: every route refuses them, naming the complex, the first position in the
  // complex's coordinates, the count and the key that allows them; with the key every route runs.

  private static final String KEY = FoldCpConf.INPUT_ALLOW_NON_FINITE.name();

  /** c13 with NaN at (0, 2, 3, 1) and +Inf at (0, 9, 0, 4), whole in one row; c20 clean. */
  private static Dataset<Row> poisoned() {
    PairTensor x = SparkTestSession.input(0);
    x.set(0, 2, 3, 1, Float.NaN);
    x.set(0, 9, 0, 4, Float.POSITIVE_INFINITY);
    List<Row> rows = new ArrayList<>();
    rows.add(PairTiles.toRow("c13", 13, 0, 0, x, 0));
    rows.add(PairTiles.toRow("c20", 20, 0, 0, SparkTestSession.input(1), 0));
    return spark.createDataFrame(rows, PairTiles.SCHEMA);
  }

  private static String failure(Kind kind, String grid) {
    Dataset<Row> out = FoldCp.apply(poisoned(), stack, FoldCpOptions.fromConf().withRoute(kind).withGrid(grid));
    Throwable e = assertThrows(Exception.class, out::collectAsList);
    StringBuilder all = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      all.append(t.getMessage()).append('\n');
    }
    return all.toString();
  }

  private static void assertNamesEverything(String msg) {
    assertTrue(msg.contains("non-finite values in the pair tensor of complex 'c13' = 2 (NaN or Inf; the first at"
        + " (b, i, j, c) = (0, 2, 3, 1), NaN)"), msg);
    assertTrue(msg.contains("set " + KEY + " = true to let them through"), msg);
  }

  @Test
  void everyRouteRefusesNaNAndInf() {
    spark.conf().unset(KEY);
    assertNamesEverything(failure(Kind.SINGLE, "1"));
    assertNamesEverything(failure(Kind.BARRIER, "2"));
    assertNamesEverything(failure(Kind.SHUFFLE, "2x1"));
  }

  @Test
  void withTheKeyEveryRouteRuns() {
    spark.conf().set(KEY, "true");
    try {
      for (String[] r : new String[][] {{"SINGLE", "1"}, {"BARRIER", "2"}, {"SHUFFLE", "1x2"}}) {
        Dataset<Row> out = FoldCp.apply(poisoned(), stack,
            FoldCpOptions.fromConf().withRoute(Kind.valueOf(r[0])).withGrid(r[1]));
        List<Row> rows = out.collectAsList();
        PairTensor c13 = FoldCp.assemble(rows, "c13");
        assertTrue(Float.isNaN(c13.get(0, 2, 3, 1)), r[0] + ": the NaN went through");
        assertTrue(FoldCp.assemble(rows, "c20").sameAs(SparkTestSession.reference(1, stack)),
            r[0] + ": the clean complex is unaffected");
      }
    } finally {
      spark.conf().unset(KEY);
    }
  }

  @Test
  void shuffleRouteReportsReshardTime() {
    Dataset<Row> out = FoldCp.apply(SparkTestSession.wholeComplexes(spark), stack,
        FoldCpOptions.fromConf().withRoute(Kind.SHUFFLE).withGrid("2"));
    assertEquals(13, FoldCp.assemble(out.collectAsList(), "c13").n());
    TriMulExec exec = SparkTestSession.operator(out);
    assertTrue(SparkTestSession.metric(exec, SqlRouteMetrics.RESHARD_TIME) > 0,
        "reshard time " + SparkTestSession.metric(exec, SqlRouteMetrics.RESHARD_TIME));
  }
}
