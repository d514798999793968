package org.foldcp.spark.route;

import java.util.Optional;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.gpu.feed.PinnedCache;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.gpu.BackendChoice;
import org.foldcp.spark.gpu.BorrowedGpu;
import org.foldcp.spark.gpu.ExecutorGpu;
import org.foldcp.spark.gpu.GpuOwners;
import org.foldcp.spark.plugin.ExecutorConf;
import org.foldcp.spark.plugin.ExecutorState;
import org.foldcp.spark.plugin.GpuBinding;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The backend a task computes with. The GPU is the one Spark gave the task (its "gpu" resource),
 * or the one the executor plugin bound; never device 0 by accident: a task with no GPU of its
 * own runs on the CPU (backend auto) or fails saying how to give it one (backend gpu).
 *
 * <p>A task does not open the GPU: it borrows its executor's ({@link ExecutorGpu}: one context,
 * stream, pinned pool and layer cache per executor process and device), waiting for a permit
 * when spark.foldcp.gpu.concurrentTasks tasks hold it already.
 */
public final class TaskBackends {
  private static final Logger LOG = LoggerFactory.getLogger(TaskBackends.class);

  private TaskBackends() {}

  /**
   * A backend for this task; the caller closes it. For the GPU, closing gives the borrow back
   * (so does the task's end), and the executor keeps the device open for its next task. Whether
   * the task's GPU is usable is its executor's decision ({@link GpuOwners#choice}: made once and
   * logged once, with the reason when auto falls back to the CPU).
   */
  public static TriMulBackend open(RoutePlan.Backend backend, int threads) {
    if (backend == RoutePlan.Backend.CPU) {
      return new CpuTriMul(threads);
    }
    BackendChoice choice = choice(taskGpu());
    if (choice.onGpu()) {
      BorrowedGpu gpu = executorGpu(choice.ordinal()).borrow();
      LOG.info("fold-cp task backend: gpu (device {}, borrowed from the executor after {} ms waiting; {})",
          choice.ordinal(), gpu.waitedMillis(), ExecutorGpu.lending(gpu.owner().permits()));
      return gpu;
    }
    if (backend == RoutePlan.Backend.GPU) {
      throw noGpu(choice.whyNotGpu());
    }
    return new CpuTriMul(threads); // the executor logged why, once
  }

  /**
   * The ordinal of this task's GPU (as {@link #open} finds it) for work that runs on the GPU or
   * not at all, such as an NVSHMEM rank; fails saying why this task cannot compute on a GPU.
   */
  public static int requireTaskGpu() {
    BackendChoice choice = choice(taskGpu());
    if (!choice.onGpu()) {
      throw noGpu(choice.whyNotGpu());
    }
    return choice.ordinal();
  }

  /**
   * The executor's GPU {@code ordinal}, borrowed for this task as every task that computes there
   * borrows it (a permit of {@link FoldCpConf#GPU_CONCURRENT_TASKS}, given back when the view
   * closes or the task ends), for work that drives the device itself, such as an NVSHMEM rank.
   */
  public static BorrowedGpu borrowGpu(int ordinal) {
    return executorGpu(ordinal).borrow();
  }

  /**
   * Where backend auto computes for tasks of this JVM that bring no GPU resource of their own:
   * in local mode every task, so the driver can show it when it plans (RouteChooser). The same
   * decision the tasks get, made once.
   */
  public static BackendChoice thisJvmChoice() {
    return choice(taskGpu());
  }

  /**
   * The executor's pinned cache for rows cached by this task, when its tasks compute on a GPU
   * (route not cpu, spark.foldcp.gpu.enabled, a usable device) and the cache may hold any bytes;
   * else empty, and cached rows stay on the heap.
   */
  public static Optional<PinnedCache> pinnedCache() {
    FoldCpConf conf = ExecutorConf.current();
    if (conf.get(FoldCpConf.ROUTE) == FoldCpConf.Route.CPU || !conf.get(FoldCpConf.GPU_ENABLED)
        || conf.get(FoldCpConf.GPU_PINNED_CACHE_BYTES) == 0) {
      return Optional.empty();
    }
    BackendChoice choice = choice(taskGpu());
    return choice.onGpu() ? executorGpu(choice.ordinal()).pinnedCache() : Optional.empty();
  }

  /** The decision of this JVM's executor (or, without the plugin, of the JVM) for {@code ordinal}. */
  private static BackendChoice choice(int ordinal) {
    return ExecutorState.current().map(state -> state.backendChoice(ordinal))
        .orElseGet(() -> GpuOwners.processWide().choice(ordinal));
  }

  private static IllegalStateException noGpu(String why) {
    return new IllegalStateException("fold-cp backend gpu: " + why);
  }

  /**
   * The executor's GPU on {@code ordinal}: the fold-cp executor state holds it; without the plugin
   * (plain local-mode Spark) this JVM does, so a device is still opened once per process.
   */
  static ExecutorGpu executorGpu(int ordinal) {
    return ExecutorState.current().map(state -> state.gpu(ordinal)).orElseGet(() -> {
      FoldCpConf conf = ExecutorConf.current();
      return GpuOwners.processWide().device(ordinal, conf.get(FoldCpConf.GPU_CONCURRENT_TASKS), conf.feedSettings());
    });
  }

  /**
   * The GPU ordinal of this task: its Spark resource, else the executor's bound GPU, else in
   * local mode (where Spark gives tasks and the executor plugin no resources) the GPU given to
   * the driver with spark.driver.resource.gpu.*, else -1.
   */
  static int taskGpu() {
    TaskContext tc = TaskContext.get();
    if (tc != null) {
      int fromTask = GpuBinding.ordinal(tc.resources().get(GpuBinding.GPU_RESOURCE).getOrElse(() -> null), "this task");
      if (fromTask >= 0) {
        return fromTask;
      }
    }
    int bound = ExecutorState.current().filter(ExecutorState::hasDevice).map(ExecutorState::deviceOrdinal).orElse(-1);
    if (bound >= 0) {
      return bound;
    }
    SparkEnv env = SparkEnv.get();
    if (env != null && "driver".equals(env.executorId())) {
      return GpuBinding.ordinal(SparkContext.getOrCreate().resources().get(GpuBinding.GPU_RESOURCE).getOrElse(() -> null),
          "the driver");
    }
    return -1;
  }
}
