package org.foldcp.spark.sql;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.PairTiles;
import scala.jdk.javaapi.CollectionConverters;

/** A local Spark session with fold-cp's extension, and the complexes the operator tests run. */
final class SparkTestSession {
  /** Two complexes of different N with masks, as the tests name them. */
  static final String[] IDS = {"c13", "c20"};
  static final int[] N = {13, 20};
  static final int D = 32; // a width the GPU kernels take: the fake-GPU tests plan the GPU route for it

  private SparkTestSession() {}

  /**
   * Four local slots so that a barrier stage of a 2x2 grid can run; shapes stay tiny, so this
   * oversubscribes two cores harmlessly.
   */
  static SparkSession start() {
    return SparkSession.builder()
        .master("local[4]")
        .appName("fold-cp sql tests")
        .config("spark.sql.extensions", FoldCpExtensions.class.getName())
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate();
  }

  static PairTensor input(int c) {
    return PairTensor.random(1, N[c], D, 100 + c, 0.2);
  }

  static LayerStack stack() {
    return LayerStack.randomAlternating(2, D, 7, true);
  }

  /** The operator library's cp = 1 result for complex {@code c}: what every route must reproduce. */
  static PairTensor reference(int c, LayerStack stack) {
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      return cpu.forward(input(c), stack);
    }
  }

  /** Both complexes, each whole in one row. */
  static Dataset<Row> wholeComplexes(SparkSession spark) {
    List<Row> rows = new ArrayList<>();
    for (int c = 0; c < IDS.length; c++) {
      rows.add(PairTiles.toRow(IDS[c], N[c], 0, 0, input(c), 0));
    }
    return spark.createDataFrame(rows, PairTiles.SCHEMA);
  }

  /** Both complexes cut into row bands of {@code bandRows} rows (the last one shorter). */
  static Dataset<Row> rowBands(SparkSession spark, int bandRows) {
    List<Row> rows = new ArrayList<>();
    for (int c = 0; c < IDS.length; c++) {
      PairTensor x = input(c);
      for (int r0 = 0; r0 < N[c]; r0 += bandRows) {
        int rows0 = Math.min(bandRows, N[c] - r0);
        rows.add(PairTiles.toRow(IDS[c], N[c], r0, 0, x.window(r0, 0, rows0, N[c]), 0));
      }
    }
    return spark.createDataFrame(rows, PairTiles.SCHEMA);
  }

  static SparkPlan executedPlan(Dataset<Row> df) {
    return ((org.apache.spark.sql.classic.Dataset<Row>) df).queryExecution().executedPlan();
  }

  /** The fold-cp operator in the executed plan of {@code df}, looking inside adaptive query stages too. */
  static TriMulExec operator(Dataset<Row> df) {
    TriMulExec found = find(executedPlan(df));
    if (found == null) {
      throw new AssertionError("no " + TriMulExec.class.getSimpleName() + " in\n" + executedPlan(df).treeString());
    }
    return found;
  }

  /** Whether {@code type} occurs in the executed plan of {@code df}, inside adaptive query stages too. */
  static boolean contains(Dataset<Row> df, Class<? extends SparkPlan> type) {
    return !collect(executedPlan(df), type).isEmpty();
  }

  private static TriMulExec find(SparkPlan p) {
    List<TriMulExec> all = collect(p, TriMulExec.class);
    return all.isEmpty() ? null : all.get(0);
  }

  private static <T extends SparkPlan> List<T> collect(SparkPlan p, Class<T> type) {
    List<T> out = new ArrayList<>();
    if (type.isInstance(p)) {
      out.add(type.cast(p));
    }
    List<SparkPlan> next = new ArrayList<>(CollectionConverters.asJava(p.children()));
    if (p instanceof AdaptiveSparkPlanExec) {
      next.add(((AdaptiveSparkPlanExec) p).executedPlan());
    } else if (p instanceof QueryStageExec) {
      next.add(((QueryStageExec) p).plan());
    }
    for (SparkPlan c : next) {
      out.addAll(collect(c, type));
    }
    return out;
  }

  static long metric(TriMulExec exec, String name) {
    return exec.metrics().apply(name).value();
  }
}
