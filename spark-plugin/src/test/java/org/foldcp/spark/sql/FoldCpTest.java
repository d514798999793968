package org.foldcp.spark.sql;

import static org.foldcp.spark.sql.SparkTestSession.D;
import static org.foldcp.spark.sql.SparkTestSession.IDS;
import static org.foldcp.spark.sql.SparkTestSession.N;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.ColumnarToRowExec;
import org.apache.spark.sql.execution.ExplainMode;
import org.apache.spark.sql.execution.RowToColumnarExec;
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec;
import org.apache.spark.sql.functions;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.RoutePlan.Kind;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** FoldCp.apply on the cp = 1 route, through Spark's planner: values, plan, metrics, explain, errors. */
class FoldCpTest {
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

  private static String explain(Dataset<Row> df, String mode) {
    return ((org.apache.spark.sql.classic.Dataset<Row>) df).queryExecution().explainString(ExplainMode.fromString(mode));
  }

  private static void assertEqualsReference(List<Row> rows) {
    for (int c = 0; c < IDS.length; c++) {
      PairTensor got = FoldCp.assemble(rows, IDS[c]);
      assertTrue(got.sameAs(SparkTestSession.reference(c, stack)), "complex " + IDS[c] + " differs from CpuTriMul");
    }
  }

  @Test
  void extensionsAlsoInstallTheSqlFunction() {
    List<Row> rows = spark.sql("DESCRIBE FUNCTION foldcp_trimul").collectAsList();
    String text = rows.toString();
    org.junit.jupiter.api.Assertions.assertTrue(text.contains("foldcp_trimul"), text);
  }

  @Test
  void cp1EqualsTheOperatorLibraryBitForBit() {
    List<Row> rows = FoldCp.apply(SparkTestSession.wholeComplexes(spark), stack).collectAsList();
    assertEquals(2, rows.size(), "one whole tile per complex");
    for (Row r : rows) {
      int n = r.getInt(1);
      assertEquals(List.of(0, 0, n, n, D), List.of(r.getInt(2), r.getInt(3), r.getInt(4), r.getInt(5), r.getInt(6)));
    }
    assertEqualsReference(rows);
  }

  @Test
  void theOperatorIsRowBasedWithSparksEssentialMetricsByDefault() {
    Dataset<Row> out = FoldCp.apply(SparkTestSession.wholeComplexes(spark), stack);
    TriMulExec exec = SparkTestSession.operator(out);
    assertFalse(exec.supportsColumnar());
    assertFalse(SparkTestSession.contains(out, ColumnarToRowExec.class), "rows in, rows out: no transitions");
    assertFalse(SparkTestSession.contains(out, RowToColumnarExec.class), "rows in, rows out: no transitions");
    assertEquals(Kind.SINGLE, exec.plan().kind);
    assertEquals(java.util.Set.of(SqlRouteMetrics.NUM_OUTPUT_ROWS, SqlRouteMetrics.OP_TIME),
        java.util.Set.copyOf(scala.jdk.javaapi.CollectionConverters.asJava(exec.metrics().keySet())),
        "spark.foldcp.metrics.level = essential (the default) keeps Spark's two metrics only");

    int rows = out.collectAsList().size();
    assertEquals(rows, SparkTestSession.metric(exec, SqlRouteMetrics.NUM_OUTPUT_ROWS));
    assertTrue(SparkTestSession.metric(exec, SqlRouteMetrics.OP_TIME) > 0, "op time is measured");
  }

  @Test
  void debugMetricsCountTheWorkAndTheBytesMoved() {
    spark.conf().set("spark.foldcp.metrics.level", "debug");
    try {
      Dataset<Row> out = FoldCp.apply(SparkTestSession.wholeComplexes(spark), stack);
      TriMulExec exec = SparkTestSession.operator(out);
      assertTrue(((org.apache.spark.sql.classic.Dataset<Row>) out).queryExecution().explainString(ExplainMode.fromString("formatted")).contains("Metrics: debug"));
      out.collectAsList();
      long pairBytes = 2L * D * (N[0] * N[0] + N[1] * N[1]);
      assertEquals(2, SparkTestSession.metric(exec, SqlRouteMetrics.NUM_OUTPUT_ROWS));
      assertEquals(2, SparkTestSession.metric(exec, SqlRouteMetrics.NUM_TILES));
      assertEquals(pairBytes, SparkTestSession.metric(exec, SqlRouteMetrics.BYTES_IN));
      assertEquals(pairBytes, SparkTestSession.metric(exec, SqlRouteMetrics.BYTES_OUT));
      assertTrue(SparkTestSession.metric(exec, SqlRouteMetrics.COMPUTE_TIME) > 0, "compute time is measured");
      assertEquals(SparkTestSession.metric(exec, SqlRouteMetrics.COMPUTE_TIME),
          SparkTestSession.metric(exec, SqlRouteMetrics.OP_TIME), "the single route's op time is its compute time");
    } finally {
      spark.conf().unset("spark.foldcp.metrics.level");
    }
  }

  @Test
  void explainShowsTheRouteAndTheVerboseFormTheWeights() {
    Dataset<Row> out = FoldCp.apply(SparkTestSession.wholeComplexes(spark), stack);
    String simple = explain(out, "simple");
    // local mode: the tasks run in this JVM, which gives them no GPU, so backend auto is shown decided, with why
    assertTrue(simple.contains("FoldCpTriMul route=single cp=1 grid=1x1 backend=cpu layers=2"), simple);
    String extended = explain(out, "extended");
    assertTrue(extended.contains("== Optimized Logical Plan ==\nFoldCpTriMul route=single"), extended);
    String formatted = explain(out, "formatted");
    String digest = stack.get(0).weights().digest().substring(0, 12);
    assertTrue(formatted.contains("weights=" + digest), formatted);
    assertTrue(formatted.contains("spark.foldcp.cp = 1"), "the reason: " + formatted);
    assertTrue(formatted.contains("the tasks run in this JVM, where backend auto computes on cpu, because this task"
        + " has no GPU"), "the reason for the CPU: " + formatted);
  }

  @Test
  void explainShowsTheTransportOfABarrierTeam() {
    Dataset<Row> tiles = SparkTestSession.wholeComplexes(spark);
    Dataset<Row> cpu = FoldCp.apply(tiles, stack, FoldCpOptions.fromConf().withRoute(Kind.BARRIER).withGrid("2"));
    assertTrue(explain(cpu, "simple").contains("FoldCpTriMul route=barrier cp=2 grid=2x1 backend=cpu transport=tcp"
        + " layers=2"), explain(cpu, "simple"));

    // A GPU team as the driver of a cluster with GPU executors plans it; explain() only plans, it runs nothing.
    RoutePlan gpuPlan = RouteChooser.choose(Map.of("spark.master", "spark://head:7077", "spark.foldcp.cp", "2",
        "spark.executor.resource.gpu.amount", "1", "spark.foldcp.nvshmem.storeRoute", "put"), home -> null);
    org.apache.spark.sql.classic.Dataset<Row> classic = (org.apache.spark.sql.classic.Dataset<Row>) tiles;
    Dataset<Row> gpu = org.apache.spark.sql.classic.Dataset.ofRows(classic.sparkSession(),
        TriMulNode.over(classic.logicalPlan(), stack, gpuPlan));
    String simple = explain(gpu, "simple");
    assertTrue(simple.contains("FoldCpTriMul route=barrier cp=2 grid=2x1 backend=gpu transport=nvshmem storeRoute=put"
        + " reshard=fused layers=2"), simple);
    String formatted = explain(gpu, "formatted");
    assertTrue(formatted.contains("NVSHMEM: store route put, reshards fused, heap 16384 MiB per GPU, NVSHMEM from a search"), formatted);
    assertTrue(formatted.contains("spark.foldcp.cp.transport = auto: the ranks have GPUs"), formatted);
    assertTrue(explain(gpu, "extended").contains("nvshmem=(store route put"), explain(gpu, "extended"));
  }

  @Test
  void optionsAndSessionSettingsReachThePlan() {
    Dataset<Row> tiles = SparkTestSession.wholeComplexes(spark);
    Dataset<Row> out = FoldCp.apply(tiles, stack, FoldCpOptions.fromConf().withRoute("cpu").withThreadsPerTask(2));
    assertEquals(2, SparkTestSession.operator(out).plan().threadsPerTask);
    assertEqualsReference(out.collectAsList());

    spark.conf().set("spark.foldcp.cpu.threads", "3");
    try {
      assertEquals(3, SparkTestSession.operator(FoldCp.apply(tiles, stack)).plan().threadsPerTask);
    } finally {
      spark.conf().unset("spark.foldcp.cpu.threads");
    }
  }

  @Test
  void inputColumnsAreFoundByNameAndSurvivePruningAbove() {
    Dataset<Row> tiles = SparkTestSession.wholeComplexes(spark).withColumn("source", functions.lit("test"));
    List<String> reversed = new ArrayList<>(List.of(tiles.columns()));
    java.util.Collections.reverse(reversed);
    Dataset<Row> shuffledColumns = tiles.selectExpr(reversed.toArray(new String[0]));
    Dataset<Row> out = FoldCp.apply(shuffledColumns, stack);
    assertEqualsReference(out.collectAsList());

    // Only two output columns wanted: the optimizer must still hand the operator every input column.
    List<String> sizes = out.select("complex_id", "rows").collectAsList().stream()
        .map(r -> r.getString(0) + "=" + r.getInt(1)).sorted().collect(Collectors.toList());
    assertEquals(List.of("c13=13", "c20=20"), sizes);

    assertEquals(0, FoldCp.apply(tiles.filter(functions.col("n_tokens").lt(0)), stack).count(), "no tiles in, none out");
  }

  @Test
  void columnarScansAndAdaptiveStagesFeedTheOperator(@TempDir Path dir) {
    // Parquet's vectorized reader hands over batches: the operator reads their rows.
    SparkTestSession.wholeComplexes(spark).write().parquet(dir.resolve("tiles").toString());
    Dataset<Row> fromParquet = FoldCp.apply(spark.read().parquet(dir.resolve("tiles").toString()), stack);
    assertEqualsReference(fromParquet.collectAsList());
    assertTrue(SparkTestSession.contains(fromParquet, ColumnarToRowExec.class),
        "Spark's own transition turns the batched scan into the rows the operator reads");
    assertFalse(SparkTestSession.operator(fromParquet).child().supportsColumnar(), "the operator's child gives rows");

    // An exchange below makes the plan adaptive; the operator runs inside a query stage.
    Dataset<Row> repartitioned = FoldCp.apply(SparkTestSession.wholeComplexes(spark).repartition(3), stack);
    assertEqualsReference(repartitioned.collectAsList());
    assertEquals(2, SparkTestSession.metric(SparkTestSession.operator(repartitioned), SqlRouteMetrics.NUM_OUTPUT_ROWS));
  }

  @Test
  void cachedResultsAreFoundAgainByTheirCanonicalPlan() {
    Dataset<Row> out = FoldCp.apply(SparkTestSession.wholeComplexes(spark), stack);
    LogicalPlan analyzed = ((org.apache.spark.sql.classic.Dataset<Row>) out).queryExecution().analyzed();
    assertTrue(analyzed.sameResult(analyzed.canonicalized()), "canonicalization copies the node through its constructor");
    out.cache();
    try {
      assertEquals(2, out.count());
      Dataset<Row> again = out.filter(functions.col("n_tokens").gt(0));
      assertTrue(SparkTestSession.contains(again, InMemoryTableScanExec.class), "served from the cache");
      assertEqualsReference(again.collectAsList());
    } finally {
      out.unpersist(true);
    }
  }

  @Test
  void badInputsFailAtTheCallNamingWhatIsWrong() {
    Dataset<Row> tiles = SparkTestSession.wholeComplexes(spark);
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> FoldCp.apply(tiles.drop("mask"), stack));
    assertTrue(e.getMessage().startsWith("column 'mask' of the tiles = missing"), e.getMessage());
    e = assertThrows(InvalidInputException.class,
        () -> FoldCp.apply(tiles.withColumn("dim", functions.lit(8L)), stack));
    assertTrue(e.getMessage().startsWith("type of column 'dim' of the tiles = bigint: must be int"), e.getMessage());
    e = assertThrows(InvalidInputException.class,
        () -> FoldCp.apply(tiles, stack, FoldCpOptions.fromConf().withRoute("shuffle").withGrid("3")));
    assertTrue(e.getMessage().contains("divisible by cp = 3"), e.getMessage());

    spark.conf().set("spark.foldcp.route", "cpu");
    spark.conf().set("spark.foldcp.cp", "2");
    try {
      e = assertThrows(InvalidInputException.class, () -> FoldCp.apply(tiles, stack));
      assertTrue(e.getMessage().startsWith("spark.foldcp.route = 'cpu'") && e.getMessage().contains("spark.foldcp.cp = 2"),
          e.getMessage());
    } finally {
      spark.conf().unset("spark.foldcp.route");
      spark.conf().unset("spark.foldcp.cp");
    }
    spark.conf().set("spark.foldcp.cpu.thread", "2");
    try {
      e = assertThrows(InvalidInputException.class, () -> FoldCp.apply(tiles, stack));
      assertTrue(e.getMessage().contains("did you mean spark.foldcp.cpu.threads?"), e.getMessage());
    } finally {
      spark.conf().unset("spark.foldcp.cpu.thread");
    }
  }

  @Test
  void aTileThatIsNotAWholeComplexFailsTheCp1RouteClearly() {
    Exception e = assertThrows(Exception.class, () -> FoldCp.apply(SparkTestSession.rowBands(spark, 7), stack).collectAsList());
    Throwable cause = e;
    while (cause.getCause() != null && !(cause instanceof InvalidInputException)) {
      cause = cause.getCause();
    }
    assertInstanceOf(InvalidInputException.class, cause, "cause chain of " + e);
    // row bands spread over the partitions of a local DataFrame (RowBands joins only consecutive ones)
    assertTrue(cause.getMessage().contains("spark.foldcp.route=shuffle, which assembles tiles"), cause.getMessage());
  }

  @Test
  void npyInNpyOut(@TempDir Path dir) {
    PairTensor x = SparkTestSession.input(1);
    Npy.writePair(dir.resolve("pair.npy"), x);
    Npy.writeMask(dir.resolve("mask.npy"), x);
    Dataset<Row> tiles = FoldCp.tilesFromNpy(spark, dir.resolve("pair.npy"), dir.resolve("mask.npy"), "from-npy");
    FoldCp.writeNpy(FoldCp.apply(tiles, stack), "from-npy", dir.resolve("out.npy"));

    PairTensor want = SparkTestSession.reference(1, stack);
    PairTensor got = Npy.readPair(dir.resolve("out.npy"));
    assertEquals(want.shapeString(), got.shapeString());
    for (int i = 0; i < want.rows(); i++) {
      assertArrayEquals(want.row(0, i), got.row(0, i), "row " + i);
    }

    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> FoldCp.writeNpy(FoldCp.apply(tiles, stack), "other", dir.resolve("other.npy")));
    assertTrue(e.getMessage().startsWith("complex_id = 'other': no tile of this complex"), e.getMessage());
    assertTrue(!dir.resolve("other.npy").toFile().exists(), "nothing is written for a failed complex");
  }

  @Test
  void aBatchOfComplexesInOneNpyGetsOneIdPerElement(@TempDir Path dir) {
    PairTensor x = PairTensor.random(2, 5, 4, 11, 0);
    Npy.writePair(dir.resolve("pair.npy"), x);
    List<Row> rows = FoldCp.tilesFromNpy(spark, dir.resolve("pair.npy"), null, "b").collectAsList();
    assertEquals(List.of("b/0", "b/1"), rows.stream().map(r -> r.getString(0)).collect(Collectors.toList()));
    for (int b = 0; b < 2; b++) {
      assertTrue(FoldCp.assemble(rows, "b/" + b).sameAs(x.batchElement(b)), "element " + b);
    }
  }

  @Test
  void assembleNamesAMissingOrDoubledPosition() {
    List<Row> bands = SparkTestSession.rowBands(spark, 7).collectAsList(); // c13: rows 0-6, 7-12
    assertTrue(FoldCp.assemble(bands, "c13").sameAs(SparkTestSession.input(0)));
    List<Row> missing = new ArrayList<>(bands);
    missing.removeIf(r -> r.getString(0).equals("c13") && r.getInt(2) == 7);
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> FoldCp.assemble(missing, "c13"));
    assertTrue(e.getMessage().startsWith("pair position (7, 0) of complex 'c13' = missing"), e.getMessage());
    List<Row> doubled = new ArrayList<>(bands);
    doubled.add(bands.get(0));
    e = assertThrows(InvalidInputException.class, () -> FoldCp.assemble(doubled, "c13"));
    assertTrue(e.getMessage().contains("given twice"), e.getMessage());
  }
}
