package org.foldcp.spark.plugin;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.foldcp.spark.config.FoldCpConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the fold-cp executor plugin bound in this executor JVM: the validated configuration the
 * driver handed over and the CUDA device this executor owns. Tasks read it through {@link
 * #current()} or {@link #require()}; the plugin closes it at executor shutdown, which clears it.
 *
 * <p>One per JVM, because an executor JVM runs one executor (in local mode, the driver's).
 */
public final class ExecutorState implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorState.class);
  private static final AtomicReference<ExecutorState> CURRENT = new AtomicReference<>();

  private final String executorId;
  private final FoldCpConf conf;
  private final int deviceOrdinal;
  private final int taskCpus;

  private ExecutorState(String executorId, FoldCpConf conf, int deviceOrdinal, int taskCpus) {
    this.executorId = executorId;
    this.conf = conf;
    this.deviceOrdinal = deviceOrdinal;
    this.taskCpus = taskCpus;
  }

  /**
   * Publishes the state of a starting executor. A state still bound is one whose executor never
   * shut down (a SparkContext that failed half-way in this JVM); it is closed and replaced, since
   * the new executor is the one tasks will run in.
   */
  static ExecutorState bind(String executorId, FoldCpConf conf, int deviceOrdinal, int taskCpus) {
    ExecutorState state = new ExecutorState(executorId, conf, deviceOrdinal, taskCpus);
    ExecutorState stale = CURRENT.getAndSet(state);
    if (stale != null) {
      LOG.warn("replacing fold-cp state of executor {} that was never shut down", stale.executorId);
    }
    return state;
  }

  /** The state of this JVM's executor, if the fold-cp plugin is loaded and the executor is running. */
  public static Optional<ExecutorState> current() {
    return Optional.ofNullable(CURRENT.get());
  }

  /** The state of this JVM's executor; fails with the fix when the plugin is not loaded. */
  public static ExecutorState require() {
    return current().orElseThrow(() -> new IllegalStateException(
        "the fold-cp executor plugin is not running in this JVM: start Spark with spark.plugins="
            + FoldCpPlugin.class.getName()));
  }

  public String executorId() { return executorId; }

  /** The validated configuration the driver plugin handed to this executor. */
  public FoldCpConf conf() { return conf; }

  /** The CUDA device ordinal this executor owns, or -1 without a GPU. */
  public int deviceOrdinal() { return deviceOrdinal; }

  public boolean hasDevice() { return deviceOrdinal >= 0; }

  /** Threads a task of this executor uses on the CPU backend (spark.foldcp.cpu.threads resolved). */
  public int cpuThreadsPerTask() {
    return conf.cpuThreadsPerTask(taskCpus);
  }

  /** Unpublishes this state; a newer one bound meanwhile stays. */
  @Override
  public void close() {
    CURRENT.compareAndSet(this, null);
  }

  @Override
  public String toString() {
    return "ExecutorState(executor " + executorId + ", " + (hasDevice() ? "GPU " + deviceOrdinal : "no GPU")
        + ", " + cpuThreadsPerTask() + " CPU threads per task)";
  }
}
