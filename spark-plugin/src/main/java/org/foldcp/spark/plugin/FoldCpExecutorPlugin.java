package org.foldcp.spark.plugin;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.IntConsumer;
import org.apache.spark.ExceptionFailure;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.resource.ResourceInformation;
import org.foldcp.ops.gpu.GpuException;
import org.foldcp.ops.gpu.StickyCudaErrors;
import org.foldcp.ops.gpu.cp.TeamException;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.gpu.GpuOwners;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Binds an executor to the settings the driver plugin validated and to the GPU Spark assigned it,
 * and publishes both as {@link ExecutorState} for the tasks; shutdown clears it and closes the
 * executor's GPU state.
 *
 * <p>The GPU itself is opened at the first task that borrows it, not here: an executor that only
 * ever runs CPU routes then never holds a CUDA context (hundreds of MiB of device memory), and a
 * GPU the backend cannot use fails or falls back in the task, where backend auto/gpu decides.
 *
 * <p>A task that failed with a broken NVSHMEM team ({@link TeamException} anywhere in its failure)
 * leaves this process unable to join any team again, since NVSHMEM initialises once per process:
 * like spark-rapids on a fatal CUDA error, the plugin then exits the executor JVM so that Spark
 * replaces it, and the stage's retry forms a fresh team. It exits a moment later, from a thread
 * of its own: Spark calls this hook before it reports the task's failure, and an executor that
 * died at once would leave the driver with "executor lost" instead of the error that names the
 * missing ranks. A task that failed with a sticky CUDA error ({@link StickyCudaErrors}: an illegal
 * address, a kernel launch failure...) recycles the executor the same way, since every later CUDA
 * call of the process would fail too. Never in local mode, where the "executor" is the driver's
 * JVM: there it logs the failure loudly instead.
 */
final class FoldCpExecutorPlugin implements ExecutorPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(FoldCpExecutorPlugin.class);

  /** The exit status of an executor recycled for a broken NVSHMEM team (spark-rapids uses 20 for fatal CUDA errors). */
  static final int TEAM_BROKEN_EXIT_CODE = 21;
  /** The exit status of an executor recycled for a sticky CUDA error (spark-rapids' for a fatal CUDA error). */
  static final int STICKY_CUDA_EXIT_CODE = 20;
  /** How long the executor lives on after a broken team, for Spark to report the task's failure to the driver. */
  static final Duration EXIT_GRACE = Duration.ofSeconds(3);
  /** Spark's executor id of the driver, whose JVM runs the tasks in local mode. */
  private static final String DRIVER_ID = "driver";

  private final Function<String, GpuOwners> gpusOf;
  private final IntConsumer exit;
  private final Duration exitGrace;
  private final AtomicBoolean exiting = new AtomicBoolean();
  private ExecutorState state;
  private String executorId;

  FoldCpExecutorPlugin() {
    this(ExecutorState::gpusOf, System::exit, EXIT_GRACE);
  }

  /** With the GPU state made by {@code gpusOf} from the executor id: tests pass fake backends. */
  FoldCpExecutorPlugin(Function<String, GpuOwners> gpusOf) {
    this(gpusOf, System::exit, EXIT_GRACE);
  }

  /** As above, exiting the JVM through {@code exit} after {@code exitGrace}: tests record the call instead. */
  FoldCpExecutorPlugin(Function<String, GpuOwners> gpusOf, IntConsumer exit, Duration exitGrace) {
    this.gpusOf = gpusOf;
    this.exit = exit;
    this.exitGrace = exitGrace;
  }

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    // The driver plugin always hands over every key; an empty map means this executor plugin
    // runs without its driver half, and defaults would hide whatever the user configured.
    if (extraConf == null || extraConf.isEmpty()) {
      throw new IllegalStateException("executor " + ctx.executorID() + " got no fold-cp settings from the driver:"
          + " load " + FoldCpPlugin.class.getName() + " through spark.plugins so that its driver plugin runs");
    }
    executorId = ctx.executorID();
    FoldCpConf conf = FoldCpConf.from(extraConf);
    Map<String, ResourceInformation> resources = ctx.resources() == null ? Map.of() : ctx.resources();
    int device = GpuBinding.deviceOrdinal(resources, conf.get(FoldCpConf.GPU_ENABLED), ctx.executorID());
    int taskCpus = ctx.conf().getInt("spark.task.cpus", 1);
    state = ExecutorState.bind(ctx.executorID(), conf, device, taskCpus, gpusOf.apply(ctx.executorID()));
    // Not ctx.hostname(): during executor start-up the RPC address it reads is not set yet, so
    // the call throws, and a throw here takes the executor down.
    LOG.info("fold-cp executor {} on {}: {}{}", ctx.executorID(), localHost(), state,
        !conf.get(FoldCpConf.GPU_ENABLED) && resources.containsKey(GpuBinding.GPU_RESOURCE)
            ? " (its GPU is left unused: " + FoldCpConf.GPU_ENABLED.name() + " = false)" : "");
  }

  private static String localHost() {
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException e) {
      return "an unknown host";
    }
  }

  /** Recycles the executor when a task failed with a broken NVSHMEM team or a sticky CUDA error (see the class comment). */
  @Override
  public void onTaskFailed(TaskFailedReason reason) {
    String broken = teamFailure(reason);
    String sticky = broken == null ? stickyCudaFailure(reason) : null;
    if (broken == null && sticky == null) {
      return;
    }
    String what = broken != null ? "a broken NVSHMEM team (" + broken + ")" : "the sticky CUDA error " + sticky;
    String why = broken != null ? "NVSHMEM initialises once per process" : "every later CUDA call of this process"
        + " would fail with it";
    int status = broken != null ? TEAM_BROKEN_EXIT_CODE : STICKY_CUDA_EXIT_CODE;
    if (DRIVER_ID.equals(executorId)) {
      LOG.error("fold-cp: a task failed with {}. This is the driver's JVM (local mode), which fold-cp does not exit:"
          + " {}; restart the application before it runs more GPU work", what, why);
      return;
    }
    if (!exiting.compareAndSet(false, true)) {
      return;
    }
    LOG.error("fold-cp: a task failed with {}; {}, so executor {} exits (status {}) in {} ms for Spark to replace it"
        + " and the stage's retry to run on a fresh one", what, why, executorId, status, exitGrace.toMillis());
    Thread t = new Thread(() -> {
      try {
        Thread.sleep(exitGrace.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      exit.accept(status);
    }, "foldcp-recycle-executor");
    t.setDaemon(false); // the JVM must not end some other way before the exit, with another status
    t.start();
  }

  /**
   * The sticky CUDA error a task failure reports (a {@link org.foldcp.ops.gpu.GpuException} in
   * its cause chain, or one named in Spark's stack trace text with GpuException), or null.
   */
  static String stickyCudaFailure(TaskFailedReason reason) {
    if (!(reason instanceof ExceptionFailure)) {
      return null;
    }
    ExceptionFailure failure = (ExceptionFailure) reason;
    if (failure.exception().isDefined()) {
      String named = StickyCudaErrors.in(failure.exception().get());
      if (named != null) {
        return named;
      }
    }
    String trace = failure.fullStackTrace();
    return trace != null && trace.contains(GpuException.class.getName()) ? StickyCudaErrors.named(trace) : null;
  }

  /**
   * The message of the {@link TeamException} in a task failure's cause chain, or null. Where the
   * exception itself did not survive serialization, Spark's full stack trace text is searched.
   */
  static String teamFailure(TaskFailedReason reason) {
    if (!(reason instanceof ExceptionFailure)) {
      return null;
    }
    ExceptionFailure failure = (ExceptionFailure) reason;
    Throwable e = failure.exception().isDefined() ? failure.exception().get() : null;
    for (int depth = 0; e != null && depth < 32; depth++, e = e.getCause()) {
      if (e instanceof TeamException) {
        return e.getMessage();
      }
    }
    String trace = failure.fullStackTrace();
    if (trace != null && trace.contains(TeamException.class.getName())) {
      return failure.description();
    }
    return null;
  }

  @Override
  public void shutdown() {
    if (state != null) {
      LOG.info("fold-cp executor {} shutting down, releasing {}", state.executorId(), state);
      ExecutorState closing = state;
      state = null;
      closing.close();
    }
  }
}
