package org.foldcp.spark.route;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.gpu.GpuAvailability;
import org.foldcp.spark.gpu.BackendChoice;
import org.foldcp.spark.gpu.ExecutorGpu;
import org.foldcp.spark.gpu.GpuOwners;
import org.foldcp.spark.plugin.ExecutorState;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Backend choice outside Spark tasks on a machine without a usable GPU (CI). */
class TaskBackendsTest {
  @Test
  void cpuAndAutoWithoutAGpuComputeOnTheCpu() {
    Assumptions.assumeTrue(GpuAvailability.availability() != null, "this machine has a usable GPU");
    try (TriMulBackend b = TaskBackends.open(RoutePlan.Backend.CPU, 1)) {
      assertEquals("cpu", b.name());
    }
    try (TriMulBackend b = TaskBackends.open(RoutePlan.Backend.AUTO, 1)) {
      assertEquals("cpu", b.name());
    }
  }

  @Test
  void forcedGpuWithoutOneSaysHowToGiveTasksAGpu() {
    Assumptions.assumeTrue(GpuAvailability.availability() != null, "this machine has a usable GPU");
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> TaskBackends.open(RoutePlan.Backend.GPU, 1));
    assertTrue(e.getMessage().contains("backend gpu") && e.getMessage().contains("spark.task.resource.gpu.amount"),
        e.getMessage());
  }

  /** Outside a task, with no GPU bound or given to the driver, this JVM's tasks have none: the one chooser says so. */
  @Test
  void thisJvmsChoiceIsTheDecisionTheTasksGet() {
    Assumptions.assumeTrue(ExecutorState.current().isEmpty(), "no fold-cp executor runs in this JVM");
    BackendChoice here = TaskBackends.thisJvmChoice();
    assertSame(here, TaskBackends.thisJvmChoice(), "decided once");
    assertSame(here, GpuOwners.processWide().choice(-1));
    assertEquals(BackendChoice.NO_TASK_GPU, here.whyNotGpu());
  }

  @Test
  void withoutThePluginTheJvmOwnsOneGpuPerDevice() {
    Assumptions.assumeTrue(ExecutorState.current().isEmpty(), "no fold-cp executor runs in this JVM");
    try {
      ExecutorGpu gpu = TaskBackends.executorGpu(2);
      assertSame(gpu, TaskBackends.executorGpu(2), "every task of this JVM borrows the same device state");
      assertSame(gpu, GpuOwners.processWide().device(2, 1));
      assertEquals(1, gpu.permits(), "spark.foldcp.gpu.concurrentTasks defaults to 1");
    } finally {
      GpuOwners.processWide().closeDevices(); // nothing was opened: no task borrowed it
    }
  }
}
