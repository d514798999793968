package org.foldcp.spark.udf;

import org.apache.spark.TaskContext;
import org.foldcp.spark.config.ConfKey;
import org.foldcp.spark.config.FoldCpConf;

/**
 * The settings a row of {@code foldcp_trimul} runs with, read where it runs: the executor's
 * SparkConf (which carries the application's spark.foldcp.* keys whether or not the fold-cp
 * plugin is loaded) and the running task. Outside Spark (a direct call) the defaults apply.
 */
final class TaskSettings {
  private TaskSettings() {}

  /** spark.foldcp.weights.cacheEntries of this executor. */
  static int weightsCacheEntries() {
    return read(FoldCpConf.WEIGHTS_CACHE_ENTRIES);
  }

  /**
   * CPU threads for this task: spark.foldcp.cpu.threads when set, else the task's cores
   * (spark.task.cpus), so that a task never uses more cores than the scheduler gave it.
   */
  static int cpuThreads() {
    int configured = read(FoldCpConf.CPU_THREADS);
    if (configured > 0) {
      return configured;
    }
    TaskContext task = TaskContext.get();
    return task == null ? 1 : Math.max(1, task.cpus());
  }

  /** Where rows compute: spark.foldcp.route cpu or gpu forces it, otherwise the task's GPU where usable. */
  static org.foldcp.spark.route.RoutePlan.Backend backend() {
    return RowBackends.configured(read(FoldCpConf.ROUTE).label(), read(FoldCpConf.GPU_ENABLED));
  }

  /** spark.foldcp.input.allowNonFinite: whether a row's pair tensor may hold NaN or Inf. */
  static boolean allowNonFinite() {
    return read(FoldCpConf.INPUT_ALLOW_NON_FINITE);
  }

  private static <T> T read(ConfKey<T> key) {
    return FoldCpConf.readFromSparkEnv(key);
  }
}
