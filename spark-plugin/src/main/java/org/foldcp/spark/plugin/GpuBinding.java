package org.foldcp.spark.plugin;

import java.util.Arrays;
import java.util.Map;
import org.apache.spark.resource.ResourceInformation;
import org.foldcp.ops.InvalidInputException;

/** Which CUDA device an executor owns, read from the resources Spark assigned it. */
final class GpuBinding {
  /** Spark's resource name for GPUs (spark.executor.resource.gpu.amount). */
  static final String GPU_RESOURCE = "gpu";
  /** The ordinal of an executor without a GPU. */
  static final int NO_DEVICE = -1;

  private GpuBinding() {}

  /**
   * The device ordinal from the executor's "gpu" resource, or {@link #NO_DEVICE} when it has
   * none or GPUs are disabled. The design runs one executor per GPU (NVSHMEM ranks are
   * executors), so an executor with several GPU addresses is a configuration error, not
   * something to pick from silently.
   */
  static int deviceOrdinal(Map<String, ResourceInformation> resources, boolean gpuEnabled, String executorId) {
    ResourceInformation gpu = resources == null ? null : resources.get(GPU_RESOURCE);
    if (!gpuEnabled || gpu == null || gpu.addresses().length == 0) {
      return NO_DEVICE;
    }
    String[] addresses = gpu.addresses();
    InvalidInputException.require(addresses.length == 1, "GPU addresses of executor " + executorId,
        Arrays.toString(addresses),
        "fold-cp runs one executor per GPU: set spark.executor.resource.gpu.amount=1");
    String address = addresses[0].trim();
    int ordinal;
    try {
      ordinal = Integer.parseInt(address);
    } catch (NumberFormatException e) {
      throw InvalidInputException.of("GPU address of executor " + executorId, "'" + address + "'",
          "must be a CUDA device ordinal such as 0 (the GPU discovery script must print ordinals)");
    }
    InvalidInputException.require(ordinal >= 0, "GPU address of executor " + executorId, ordinal,
        "must be a CUDA device ordinal >= 0");
    return ordinal;
  }
}
