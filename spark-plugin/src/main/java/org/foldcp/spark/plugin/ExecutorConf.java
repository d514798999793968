package org.foldcp.spark.plugin;

import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.deploy.SparkHadoopUtil;
import org.foldcp.spark.config.FoldCpConf;

/**
 * The one way code on an executor reads fold-cp settings: the validated {@link FoldCpConf} the
 * executor plugin bound ({@link ExecutorState#conf()}); where the plugin is not loaded (plain
 * Spark running {@code foldcp_trimul}), this JVM's SparkConf validated once and kept, so that no
 * row or task parses raw settings again; outside Spark, the defaults. Likewise the executor's
 * Hadoop configuration ({@link #hadoop()}), for files that code on executors reads itself.
 */
public final class ExecutorConf {
  /** The SparkConf last validated and its result; SparkEnv's conf is one object per executor life. */
  private record Validated(SparkConf source, FoldCpConf conf) {}

  /** The SparkConf the last Hadoop configuration was made from, and that configuration. */
  private record Hadoop(SparkConf source, Configuration conf) {}

  private static final AtomicReference<Validated> LAST = new AtomicReference<>();
  private static final AtomicReference<Hadoop> LAST_HADOOP = new AtomicReference<>();

  /** Hadoop's defaults, made at the first use outside Spark only. */
  private static final class NoSpark {
    static final Configuration HADOOP = new Configuration();
  }

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
    // updateAndGet, not get-then-set: two tasks starting at once would otherwise each install their
    // own copy, and a task could see two different confs (ExecutorConfTest checks it). A
    // racing validation may run twice, but every caller returns the one that was installed.
    return LAST.updateAndGet(l -> l != null && l.source() == source ? l
        : new Validated(source, FoldCpConf.from(source))).conf();
  }

  /**
   * This executor's Hadoop configuration, as Spark makes its own there (spark.hadoop.* keys over
   * the Hadoop site files on the executor's class path): made once per executor life, since
   * building one parses those files; outside Spark, Hadoop's defaults. Callers must not modify it.
   */
  public static Configuration hadoop() {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      return NoSpark.HADOOP;
    }
    SparkConf source = env.conf();
    // As in fromSparkEnv: every caller gets the installed configuration.
    return LAST_HADOOP.updateAndGet(l -> l != null && l.source() == source ? l
        : new Hadoop(source, SparkHadoopUtil.get().newConfiguration(source))).conf();
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
