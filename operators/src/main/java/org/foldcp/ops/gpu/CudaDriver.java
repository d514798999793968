package org.foldcp.ops.gpu;

import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/**
 * The one door to the CUDA driver API (JCuda): driver initialisation once per JVM, with its
 * failure remembered and summarised, and the check of every {@code CUresult}.
 *
 * <p>Only JCuda's driver API is used. Its runtime API (class {@code jcuda.runtime.JCuda}) would
 * load JCuda's own libcudart 12.x, which the GPU machines do not have; our kernels carry their
 * own static CUDA 13 runtime, and both sides meet in libcuda.so.1 and the device's primary
 * context.
 */
final class CudaDriver {
  private static boolean initialized;
  private static String failure;
  private static int failureStatus = GpuException.NO_STATUS;

  private CudaDriver() {}

  /** Initialises the driver once (cuInit); throws the remembered failure on every later call. */
  static synchronized void init() {
    if (initialized) {
      return;
    }
    if (failure == null) {
      try {
        JCudaDriver.setExceptionsEnabled(false);
        int r = JCudaDriver.cuInit(0);
        if (r == CUresult.CUDA_SUCCESS) {
          initialized = true;
          return;
        }
        failureStatus = r;
        failure = r == CUresult.CUDA_ERROR_NO_DEVICE
            ? "no GPU: cuInit reports " + describe(r)
            : "no usable CUDA driver: cuInit failed: " + describe(r);
      } catch (LinkageError e) {
        // JCuda's static initialiser loads libJCudaDriver, which needs libcuda.so.1. The first
        // failure is an UnsatisfiedLinkError with every attempt; later ones a NoClassDefFoundError.
        failure = "no CUDA driver: " + summarizeLinkError(e);
      }
    }
    throw new GpuException(failure, failureStatus, failureStatus == GpuException.NO_STATUS
        ? null : name(failureStatus));
  }

  /** Null when the driver is initialised (trying once), else why not. */
  static synchronized String unavailableReason() {
    try {
      init();
      return null;
    } catch (GpuException e) {
      return e.getMessage();
    }
  }

  /** Throws a {@link GpuException} naming {@code call} and the driver's error unless r is success. */
  static void check(int r, String call) {
    if (r != CUresult.CUDA_SUCCESS) {
      throw new GpuException(call + " failed: " + describe(r), r, name(r));
    }
  }

  /** "CUDA_ERROR_OUT_OF_MEMORY (out of memory)": the driver's name and string for r. */
  static String describe(int r) {
    String s = null;
    try {
      String[] out = new String[1];
      if (JCudaDriver.cuGetErrorString(r, out) == CUresult.CUDA_SUCCESS) {
        s = out[0];
      }
    } catch (LinkageError e) {
      // no driver: the name alone
    }
    return name(r) + (s == null || s.isEmpty() ? "" : " (" + s + ")");
  }

  /** The driver's name of r (it knows codes newer than JCuda's table), else JCuda's. */
  static String name(int r) {
    try {
      String[] out = new String[1];
      if (JCudaDriver.cuGetErrorName(r, out) == CUresult.CUDA_SUCCESS && out[0] != null) {
        return out[0];
      }
    } catch (LinkageError e) {
      // fall through
    }
    try {
      return CUresult.stringFor(r);
    } catch (LinkageError e) {
      return "CUresult " + r;
    }
  }

  /**
   * The line of a (possibly very long, JCuda-made) link error message that says what failed:
   * the dlopen message naming the missing library when there is one.
   */
  static String summarizeLinkError(Throwable e) {
    if (e instanceof NoClassDefFoundError && e.getMessage() != null
        && e.getMessage().startsWith("jcuda/")) {
      return "JCuda is not on the class path (" + e.getMessage() + ")";
    }
    String msg = e.getMessage() == null ? e.toString() : e.getMessage();
    String best = null;
    for (String line : msg.split("\\R")) {
      String l = line.trim();
      if (l.contains("cannot open shared object file") || l.contains("undefined symbol")
          || l.contains("wrong ELF class") || l.contains("version `")) {
        int p = l.indexOf("UnsatisfiedLinkError: ");
        best = p >= 0 ? l.substring(p + "UnsatisfiedLinkError: ".length()) : l;
        break;
      }
    }
    if (best == null) {
      best = msg.split("\\R", 2)[0].trim();
    }
    return best + " (JCuda could not load its driver library, which needs libcuda.so.1 from the NVIDIA driver)";
  }
}
