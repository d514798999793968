package org.foldcp.ops.gpu;

import org.foldcp.ops.InvalidInputException;

/**
 * Whether our GPU kernels can run on a device, and if not, why: no CUDA driver, no GPU, no such
 * device, the wrong architecture, or no native library in this build. Creates no context and
 * allocates nothing, so routes, tests and the plugin ask it before opening anything.
 */
public final class GpuAvailability {
  /** The only architecture the kernels are built for: compute capability 9.0 (sm_90a). */
  public static final int REQUIRED_MAJOR = 9;
  public static final int REQUIRED_MINOR = 0;

  private GpuAvailability() {}

  /** Null when the GPU backend can run on device 0, else the reason (for logs and test skips). */
  public static String availability() {
    return availability(0);
  }

  /** Null when the GPU backend can run on device {@code deviceOrdinal}, else why not. */
  public static String availability(int deviceOrdinal) {
    String why = CudaDriver.unavailableReason();
    if (why != null) {
      return unavailable(why);
    }
    try {
      int count = GpuDevice.deviceCount();
      if (count == 0) {
        return unavailable("no GPU: the CUDA driver sees 0 devices" + GpuDevice.visibleDevicesNote());
      }
      if (deviceOrdinal < 0 || deviceOrdinal >= count) {
        return unavailable("device ordinal " + deviceOrdinal + " does not exist: the CUDA driver sees " + count
            + " device(s)" + GpuDevice.visibleDevicesNote());
      }
      GpuDevice.Info info = GpuDevice.info(deviceOrdinal);
      if (!isSupported(info.major(), info.minor())) {
        return unavailable(archMessage(info.major(), info.minor(), info.name()));
      }
    } catch (GpuException | InvalidInputException e) {
      return unavailable(e.getMessage());
    }
    String lib = NativeLibrary.unavailableReason();
    if (lib != null) {
      return unavailable(lib);
    }
    int sm = NativeTriMul.targetSm();
    if (sm != REQUIRED_MAJOR * 10 + REQUIRED_MINOR) {
      return unavailable(NativeLibrary.LIBRARY_FILE + " was built for sm_" + sm + ", not sm_"
          + REQUIRED_MAJOR + REQUIRED_MINOR);
    }
    return null;
  }

  /** Whether compute capability major.minor can run the kernels (exactly 9.0: sm_90a code). */
  public static boolean isSupported(int major, int minor) {
    return major == REQUIRED_MAJOR && minor == REQUIRED_MINOR;
  }

  /**
   * The message for a GPU of the wrong architecture, e.g. "compute capability 8.0 (NVIDIA
   * A100-SXM4-80GB): the GPU route needs sm_90 (Hopper: H100, H200)".
   */
  public static String archMessage(int major, int minor, String deviceName) {
    return "compute capability " + major + "." + minor + " (" + deviceName + "): the GPU route needs sm_"
        + REQUIRED_MAJOR + REQUIRED_MINOR + " (Hopper: H100, H200); the kernels are compiled for sm_90a only,"
        + " so run the CPU backend on this machine";
  }

  static String unavailable(String why) {
    return "GPU backend unavailable: " + why;
  }
}
