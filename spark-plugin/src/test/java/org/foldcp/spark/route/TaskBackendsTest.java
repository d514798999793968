package org.foldcp.spark.route;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.gpu.GpuTriMul;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Backend choice outside Spark tasks on a machine without a usable GPU (CI). */
class TaskBackendsTest {
  @Test
  void cpuAndAutoWithoutAGpuComputeOnTheCpu() {
    Assumptions.assumeTrue(GpuTriMul.availability() != null, "this machine has a usable GPU");
    try (TriMulBackend b = TaskBackends.open(RoutePlan.Backend.CPU, 1)) {
      assertEquals("cpu", b.name());
    }
    try (TriMulBackend b = TaskBackends.open(RoutePlan.Backend.AUTO, 1)) {
      assertEquals("cpu", b.name());
    }
  }

  @Test
  void forcedGpuWithoutOneSaysHowToGiveTasksAGpu() {
    Assumptions.assumeTrue(GpuTriMul.availability() != null, "this machine has a usable GPU");
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> TaskBackends.open(RoutePlan.Backend.GPU, 1));
    assertTrue(e.getMessage().contains("backend gpu") && e.getMessage().contains("spark.task.resource.gpu.amount"),
        e.getMessage());
  }
}
