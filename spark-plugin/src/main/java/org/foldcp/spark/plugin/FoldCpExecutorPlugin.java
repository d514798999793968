package org.foldcp.spark.plugin;

import java.util.Map;
import java.util.function.Function;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.resource.ResourceInformation;
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
 */
final class FoldCpExecutorPlugin implements ExecutorPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(FoldCpExecutorPlugin.class);

  private final Function<String, GpuOwners> gpusOf;
  private ExecutorState state;

  FoldCpExecutorPlugin() {
    this(ExecutorState::gpusOf);
  }

  /** With the GPU state made by {@code gpusOf} from the executor id: tests pass fake backends. */
  FoldCpExecutorPlugin(Function<String, GpuOwners> gpusOf) {
    this.gpusOf = gpusOf;
  }

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    // The driver plugin always hands over every key; an empty map means this executor plugin
    // runs without its driver half, and defaults would hide whatever the user configured.
    if (extraConf == null || extraConf.isEmpty()) {
      throw new IllegalStateException("executor " + ctx.executorID() + " got no fold-cp settings from the driver:"
          + " load " + FoldCpPlugin.class.getName() + " through spark.plugins so that its driver plugin runs");
    }
    FoldCpConf conf = FoldCpConf.from(extraConf);
    Map<String, ResourceInformation> resources = ctx.resources() == null ? Map.of() : ctx.resources();
    int device = GpuBinding.deviceOrdinal(resources, conf.gpuEnabled(), ctx.executorID());
    int taskCpus = ctx.conf().getInt("spark.task.cpus", 1);
    state = ExecutorState.bind(ctx.executorID(), conf, device, taskCpus, gpusOf.apply(ctx.executorID()));
    // Not ctx.hostname(): during executor start-up the RPC address it reads is not set yet, and
    // the call throws, which killed every executor on a real cluster (found by cluster-tests).
    LOG.info("fold-cp executor {} on {}: {}{}", ctx.executorID(), localHost(), state,
        !conf.gpuEnabled() && resources.containsKey(GpuBinding.GPU_RESOURCE)
            ? " (its GPU is left unused: " + FoldCpConf.GPU_ENABLED.name() + " = false)" : "");
  }

  private static String localHost() {
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException e) {
      return "an unknown host";
    }
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
