package org.foldcp.spark.plugin;

import java.util.Arrays;
import java.util.Map;
import org.apache.spark.resource.ResourceInformation;
import org.foldcp.ops.InvalidInputException;

/**
 * Which CUDA device an executor or a task owns, read from the "gpu" resource Spark assigned it.
 * The one parser of GPU addresses: the executor plugin binds with it and tasks find their device
 * with it, so both follow one rule.
 */
public final class GpuBinding {
  /** Spark's resource name for GPUs (spark.executor.resource.gpu.amount). */
  public static final String GPU_RESOURCE = "gpu";
  /** The ordinal of an executor or task without a GPU. */
  public static final int NO_DEVICE = -1;

  private GpuBinding() {}

  /**
   * The device ordinal from the executor's "gpu" resource, or {@link #NO_DEVICE} when it has
   * none or GPUs are disabled (see {@link #ordinal}).
   */
  static int deviceOrdinal(Map<String, ResourceInformation> resources, boolean gpuEnabled, String executorId) {
    if (!gpuEnabled || resources == null) {
      return NO_DEVICE;
    }
    return ordinal(resources.get(GPU_RESOURCE), "executor " + executorId);
  }

  /**
   * The device ordinal of a "gpu" resource ({@code gpu} may be null), or {@link #NO_DEVICE}
   * when it holds no address. The design runs one executor per GPU (NVSHMEM ranks are
   * executors), so several addresses are a configuration error, not something to pick from
   * silently; {@code whose} names the owner in the error, e.g. "executor 7" or "this task".
   */
  public static int ordinal(ResourceInformation gpu, String whose) {
    if (gpu == null || gpu.addresses().length == 0) {
      return NO_DEVICE;
    }
    String[] addresses = gpu.addresses();
    InvalidInputException.require(addresses.length == 1, "GPU addresses of " + whose, Arrays.toString(addresses),
        "fold-cp runs one executor per GPU: set spark.executor.resource.gpu.amount=1");
    String address = addresses[0].trim();
    int ordinal;
    try {
      ordinal = Integer.parseInt(address);
    } catch (NumberFormatException e) {
      throw InvalidInputException.of("GPU address of " + whose, "'" + address + "'",
          "must be a CUDA device ordinal such as 0 (the GPU discovery script must print ordinals)");
    }
    InvalidInputException.require(ordinal >= 0, "GPU address of " + whose, ordinal,
        "must be a CUDA device ordinal >= 0");
    return ordinal;
  }
}
