package org.foldcp.spark.plugin;

import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.foldcp.spark.config.FoldCpConf;

/**
 * The one way code on an executor reads fold-cp settings: the validated {@link FoldCpConf} the
 * executor plugin bound ({@link ExecutorState#conf()}); where the plugin is not loaded (plain
 * Spark running {@code foldcp_trimul}), this JVM's SparkConf validated once and kept, so that no
 * row or task parses raw settings again; outside Spark, the defaults.
 */
public final class ExecutorConf {
  /** The SparkConf last validated and its result; SparkEnv's conf is one object per executor life. */
  private record Validated(SparkConf source, FoldCpConf conf) {}

  private static final AtomicReference<Validated> LAST = new AtomicReference<>();

  private ExecutorConf() {}

  /**
   * This executor's settings.
   *
   * @throws org.foldcp.ops.InvalidInputException when the application's spark.foldcp.* keys are invalid
   */
  public static FoldCpConf current() {
    return ExecutorState.current().map(ExecutorState::conf).orElseGet(ExecutorConf::fromSparkEnv);
  }

  private static FoldCpConf fromSparkEnv() {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      return FoldCpConf.defaults();
    }
    SparkConf source = env.conf();
    Validated last = LAST.get();
    if (last != null && last.source() == source) {
      return last.conf();
    }
    FoldCpConf conf = FoldCpConf.from(source);
    LAST.set(new Validated(source, conf));
    return conf;
  }

  /**
   * CPU threads for the running task: spark.foldcp.cpu.threads when set, else the task's cores
   * (spark.task.cpus), so that a task never uses more cores than the scheduler gave it; 1
   * outside a task.
   */
  public static int cpuThreadsPerTask() {
    TaskContext task = TaskContext.get();
    return current().cpuThreadsPerTask(task == null ? 1 : Math.max(1, task.cpus()));
  }
}
