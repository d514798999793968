package org.foldcp.spark.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.foldcp.spark.config.FoldCpConf;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Executors read fold-cp settings through one validated FoldCpConf, never raw SparkConf per row. */
class ExecutorConfTest {
  @Test
  void outsideSparkTheDefaultsApply() {
    Assumptions.assumeTrue(ExecutorState.current().isEmpty() && org.apache.spark.SparkEnv.get() == null,
        "another test left Spark or a fold-cp executor running in this JVM");
    assertEquals(FoldCpConf.defaults().asMap(), ExecutorConf.current().asMap());
    assertEquals(1, ExecutorConf.cpuThreadsPerTask(), "outside a task one thread");
  }

  @Test
  void tasksWithoutThePluginSeeTheApplicationsKeysValidatedOnce() {
    Assumptions.assumeTrue(ExecutorState.current().isEmpty(), "a fold-cp executor runs in this JVM");
    SparkSession spark = SparkSession.builder().master("local[2]").appName("executor-conf-test")
        .config("spark.ui.enabled", "false")
        .config(FoldCpConf.CPU_THREADS.name(), "3")
        .config(FoldCpConf.WEIGHTS_CACHE_ENTRIES.name(), "5")
        .getOrCreate();
    try {
      List<String> seen = new JavaSparkContext(spark.sparkContext()).parallelize(Arrays.asList(1, 2, 3, 4), 4)
          .map(i -> {
            FoldCpConf first = ExecutorConf.current();
            boolean sameObject = first == ExecutorConf.current();
            return first.get(FoldCpConf.WEIGHTS_CACHE_ENTRIES) + "/" + ExecutorConf.cpuThreadsPerTask() + "/" + sameObject;
          }).collect();
      for (String s : seen) {
        assertEquals("5/3/true", s, "cache entries / threads per task / one validated conf per executor");
      }
    } finally {
      spark.stop();
    }
  }

  @Test
  void aTaskGpuAddressFollowsTheExecutorsRule() {
    assertEquals(GpuBinding.NO_DEVICE, GpuBinding.ordinal(null, "this task"));
    assertEquals(3, GpuBinding.ordinal(new org.apache.spark.resource.ResourceInformation("gpu", new String[] {" 3 "}),
        "this task"));
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> GpuBinding.ordinal(new org.apache.spark.resource.ResourceInformation("gpu", new String[] {"GPU-x"}),
            "this task"));
    assertTrue(e.getMessage().startsWith("GPU address of this task = 'GPU-x': must be a CUDA device ordinal"),
        e.getMessage());
  }
}
