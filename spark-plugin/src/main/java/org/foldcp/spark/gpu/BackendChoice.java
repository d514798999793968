package org.foldcp.spark.gpu;

/**
 * Whether the tasks of one executor can compute on GPU {@code ordinal} (-1: they have none):
 * {@code whyNotGpu} is null when they can, else the reason, which makes backend auto compute on
 * the CPU and backend gpu fail. Made once per executor and device by {@link GpuOwners#choice},
 * the one place that decides it (docs/design.md section 3).
 */
public record BackendChoice(int ordinal, String whyNotGpu) {
  /** Why a task without a "gpu" resource (and no GPU bound to its executor) computes on the CPU. */
  public static final String NO_TASK_GPU = "this task has no GPU: give executors and tasks one"
      + " (spark.executor.resource.gpu.amount=1, spark.task.resource.gpu.amount=1 and a discovery script; in local"
      + " mode spark.driver.resource.gpu.amount=1 with spark.driver.resource.gpu.discoveryScript)";

  /** Whether the GPU backend runs on this executor's device. */
  public boolean onGpu() {
    return whyNotGpu == null;
  }

  /** e.g. "gpu (device 0)", or "cpu, because GPU backend unavailable: no CUDA driver ...". */
  public String describe() {
    return onGpu() ? "gpu (device " + ordinal + ")" : "cpu, because " + whyNotGpu;
  }
}
