package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import java.util.function.ToIntFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.StageTimes;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.gpu.FakeGpus;
import org.foldcp.spark.plugin.ExecutorState;
import org.foldcp.spark.plugin.FakeExecutor;
import org.foldcp.spark.route.RoutePlan;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.NullSource;
import org.junit.jupiter.params.provider.ValueSource;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The cp = 1 route's GPU stage times in the operator's SQL metrics, on a fake GPU that reports
 * known times per layer: summed over layers and complexes at metrics level debug; below it the
 * metrics are absent and the tasks call the plain forward (no wait for the kernels).
 */
class GpuStageMetricsTest {
  private static final List<String> STAGE_METRICS = List.of(SqlRouteMetrics.GPU_STAGE1_TIME,
      SqlRouteMetrics.GPU_STAGE2_TIME, SqlRouteMetrics.GPU_STAGE3_TIME);
  /** Reached from the tasks, which run in this JVM (local mode). */
  private static final FakeGpus GPUS = new FakeGpus();
  private static ExecutorState executor;
  private static SparkSession spark;
  private static LayerStack stack;

  @BeforeAll
  static void start() {
    executor = FakeExecutor.withGpu(GPUS);
    spark = SparkTestSession.start();
    stack = SparkTestSession.stack();
  }

  @AfterAll
  static void stop() {
    try {
      spark.stop();
    } finally {
      executor.close();
    }
  }

  private static int sum(ToIntFunction<FakeGpus.Backend> count) {
    return GPUS.made().stream().mapToInt(count).sum();
  }

  @Test
  void debugLevelSumsTheStageTimesOfEveryLayerAndComplex() {
    spark.conf().set("spark.foldcp.metrics.level", "debug");
    try {
      Dataset<Row> out = FoldCp.apply(SparkTestSession.wholeComplexes(spark), stack);
      TriMulExec exec = SparkTestSession.operator(out);
      assertEquals(RoutePlan.Backend.GPU, exec.plan().backend, "the tasks of this JVM compute on its (fake) GPU");
      int timedBefore = sum(FakeGpus.Backend::timedStackForwards);
      int plainBefore = sum(FakeGpus.Backend::plainStackForwards);
      out.collectAsList();

      int complexes = SparkTestSession.IDS.length;
      assertEquals(complexes, sum(FakeGpus.Backend::timedStackForwards) - timedBefore, "one timed forward per complex");
      assertEquals(0, sum(FakeGpus.Backend::plainStackForwards) - plainBefore, "no plain forward at debug level");
      StageTimes perLayer = FakeGpus.Backend.STAGE_TIMES_PER_LAYER;
      long layers = (long) complexes * stack.layers().size();
      assertEquals(layers * perLayer.stage1Nanos(), SparkTestSession.metric(exec, SqlRouteMetrics.GPU_STAGE1_TIME));
      assertEquals(layers * perLayer.stage2Nanos(), SparkTestSession.metric(exec, SqlRouteMetrics.GPU_STAGE2_TIME));
      assertEquals(layers * perLayer.stage3Nanos(), SparkTestSession.metric(exec, SqlRouteMetrics.GPU_STAGE3_TIME));
      assertEquals("GPU stage 2 time (triangle GEMM)",
          exec.metrics().apply(SqlRouteMetrics.GPU_STAGE2_TIME).name().get());
    } finally {
      spark.conf().unset("spark.foldcp.metrics.level");
    }
  }

  /** null: the level left at its default (essential). */
  @ParameterizedTest(name = "metrics level {0}")
  @NullSource
  @ValueSource(strings = "moderate")
  void belowDebugTheStageTimesAreAbsentAndThePlainForwardRuns(String level) {
    if (level != null) {
      spark.conf().set("spark.foldcp.metrics.level", level);
    }
    try {
      Dataset<Row> out = FoldCp.apply(SparkTestSession.wholeComplexes(spark), stack);
      TriMulExec exec = SparkTestSession.operator(out);
      Set<String> shown = Set.copyOf(CollectionConverters.asJava(exec.metrics().keySet()));
      for (String stage : STAGE_METRICS) {
        assertFalse(shown.contains(stage), stage + " is a debug metric: " + shown);
      }
      int timedBefore = sum(FakeGpus.Backend::timedStackForwards);
      int plainBefore = sum(FakeGpus.Backend::plainStackForwards);
      out.collectAsList();
      assertEquals(SparkTestSession.IDS.length, sum(FakeGpus.Backend::plainStackForwards) - plainBefore,
          "one plain forward per complex");
      assertEquals(0, sum(FakeGpus.Backend::timedStackForwards) - timedBefore, "no timed forward below debug");
      assertTrue(SparkTestSession.metric(exec, SqlRouteMetrics.OP_TIME) > 0, "op time is still measured");
    } finally {
      spark.conf().unset("spark.foldcp.metrics.level");
    }
  }
}
