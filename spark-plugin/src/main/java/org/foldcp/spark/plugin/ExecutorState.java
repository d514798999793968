package org.foldcp.spark.plugin;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.foldcp.ops.gpu.cp.NvshmemTeam;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.gpu.BackendChoice;
import org.foldcp.spark.gpu.ExecutorGpu;
import org.foldcp.spark.gpu.GpuOwners;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the fold-cp executor plugin bound in this executor JVM: the validated configuration the
 * driver handed over, the CUDA device this executor owns, that device's GPU state ({@link
 * #gpu}), which tasks borrow instead of opening their own, and the NVSHMEM team this process
 * joined ({@link #nvshmemTeam()}), if a GPU team's barrier stage ran here. Tasks read it through
 * {@link #current()} or {@link #require()}; the plugin closes it at executor shutdown, which
 * clears it and closes the GPU state.
 *
 * <p>Shutdown order: the CP stacks (the team's plans, with their symmetric buffers) belong to the
 * tasks that made them and are closed, collectively, when those tasks end; then this state closes
 * the single-GPU state; NVSHMEM itself is finalized last, once, at process exit, by the hook that
 * {@link NvshmemTeam} registers when the team forms, and only when no plan is open. The state
 * does not finalize the team itself: finalize is collective, and NVSHMEM initialises once per
 * process, so nothing could use the device's team afterwards anyway.
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
  private final GpuOwners gpus;

  private ExecutorState(String executorId, FoldCpConf conf, int deviceOrdinal, int taskCpus, GpuOwners gpus) {
    this.executorId = executorId;
    this.conf = conf;
    this.deviceOrdinal = deviceOrdinal;
    this.taskCpus = taskCpus;
    this.gpus = gpus;
  }

  /**
   * Publishes the state of a starting executor. A state still bound is one whose executor never
   * shut down (a SparkContext that failed half-way in this JVM); it is closed and replaced, since
   * the new executor is the one tasks will run in.
   */
  static ExecutorState bind(String executorId, FoldCpConf conf, int deviceOrdinal, int taskCpus) {
    return bind(executorId, conf, deviceOrdinal, taskCpus, gpusOf(executorId));
  }

  /**
   * As above, with the GPU state {@code gpus} (tests pass fake backends). GPU state that this JVM
   * opened without the plugin (an earlier plain Spark session, whose tasks are over, since a JVM
   * runs one SparkContext at a time) is closed too: from now on this executor owns the devices.
   */
  static ExecutorState bind(String executorId, FoldCpConf conf, int deviceOrdinal, int taskCpus, GpuOwners gpus) {
    ExecutorState state = new ExecutorState(executorId, conf, deviceOrdinal, taskCpus, gpus);
    ExecutorState stale = CURRENT.getAndSet(state);
    if (stale != null) {
      LOG.warn("replacing fold-cp state of executor {} that was never shut down", stale.executorId);
      closeQuietly(stale, "the GPU state of executor " + stale.executorId);
    }
    closeQuietly(GpuOwners.processWide()::closeDevices, "the GPU state this JVM opened without the plugin");
    return state;
  }

  /** The GPU state of a starting executor: empty until a task borrows a device. */
  static GpuOwners gpusOf(String executorId) {
    return new GpuOwners("executor " + executorId);
  }

  /** Left-over GPU state must not keep the new executor from starting; its failure is only logged. */
  private static void closeQuietly(AutoCloseable leftOver, String what) {
    try {
      leftOver.close();
    } catch (Exception e) {
      LOG.warn("closing {} failed: {}", what, e.toString());
    }
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

  /**
   * This executor's GPU on {@code ordinal} (its bound device; in local mode, where the executor
   * plugin gets no resources, the driver's), made at the first call and opened at the first
   * borrow, lent to {@link FoldCpConf#GPU_CONCURRENT_TASKS} tasks at a time.
   *
   * @throws IllegalStateException after the executor shut down
   */
  public ExecutorGpu gpu(int ordinal) {
    return gpus.device(ordinal, conf.get(FoldCpConf.GPU_CONCURRENT_TASKS), conf.feedSettings());
  }

  /**
   * Whether this executor's tasks compute on GPU {@code ordinal} (-1: none), decided once per
   * device and logged then ({@link GpuOwners#choice}).
   */
  public BackendChoice backendChoice(int ordinal) {
    return gpus.choice(ordinal);
  }

  /**
   * This process's NVSHMEM team, once a GPU team's barrier stage formed it here (a process joins
   * one team for life; later stages with the same members reuse it).
   */
  public Optional<NvshmemTeam> nvshmemTeam() {
    return Optional.ofNullable(NvshmemTeam.current());
  }

  /** Threads a task of this executor uses on the CPU backend (spark.foldcp.cpu.threads resolved). */
  public int cpuThreadsPerTask() {
    return conf.cpuThreadsPerTask(taskCpus);
  }

  /**
   * Unpublishes this state (a newer one bound meanwhile stays), then closes its GPU state, in the
   * order GpuTriMul closes it: layers, buffers, staging, stream, context. Later borrows fail with
   * a message; a second close does nothing.
   */
  @Override
  public void close() {
    CURRENT.compareAndSet(this, null);
    try {
      gpus.close();
    } finally {
      nvshmemTeam().ifPresent(team -> LOG.info("executor {} keeps its NVSHMEM team membership ({}) until the process"
          + " exits: the tasks closed their CP stacks, and the team's exit hook finalizes NVSHMEM once none is open",
          executorId, describe(team)));
    }
  }

  private static String describe(NvshmemTeam team) {
    return "PE " + team.rank() + " of " + team.size() + " on GPU " + team.spec().device() + ", members " + team.members();
  }

  @Override
  public String toString() {
    String gpu = hasDevice()
        ? "GPU " + deviceOrdinal + " " + ExecutorGpu.lending(conf.get(FoldCpConf.GPU_CONCURRENT_TASKS)) : "no GPU";
    String team = nvshmemTeam().map(t -> ", NVSHMEM " + describe(t)).orElse("");
    return "ExecutorState(executor " + executorId + ", " + gpu + ", " + cpuThreadsPerTask() + " CPU threads per task"
        + team + ")";
  }
}
