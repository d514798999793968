package org.foldcp.ops.gpu;

import java.util.List;

/**
 * The CUDA errors that corrupt a process's CUDA context for good: after one, every later CUDA
 * call of the process returns the same error ("the process must be terminated and relaunched",
 * CUDA's documentation). A task that fails with one must take its executor down with it, so that
 * Spark replaces the executor instead of sending it more tasks that cannot succeed.
 *
 * <p>GPU failures reach Java as {@link GpuException}: from the driver API with the CUresult's
 * name (CUDA_ERROR_*), from our JNI library with the runtime's name (cudaError*) in the message.
 * Both spellings are listed.
 */
public final class StickyCudaErrors {
  /** Driver API names (CUresult 214, 700, 702, 710, 714 to 719). */
  static final List<String> DRIVER = List.of(
      "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_ASSERT",
      "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_MISALIGNED_ADDRESS",
      "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_LAUNCH_FAILED");
  /** The same errors as the runtime API names them. */
  static final List<String> RUNTIME = List.of(
      "cudaErrorECCUncorrectable", "cudaErrorIllegalAddress", "cudaErrorLaunchTimeout", "cudaErrorAssert",
      "cudaErrorHardwareStackError", "cudaErrorIllegalInstruction", "cudaErrorMisalignedAddress",
      "cudaErrorInvalidAddressSpace", "cudaErrorInvalidPc", "cudaErrorLaunchFailure");

  private StickyCudaErrors() {}

  /** The sticky error a {@link GpuException} in {@code t}'s cause chain reports, or null. */
  public static String in(Throwable t) {
    for (int depth = 0; t != null && depth < 32; depth++, t = t.getCause()) {
      if (t instanceof GpuException) {
        GpuException g = (GpuException) t;
        String named = named(g.statusName());
        if (named == null) {
          named = named(g.getMessage());
        }
        if (named != null) {
          return named;
        }
      }
    }
    return null;
  }

  /** The first sticky error named in {@code text} (a message, or a stack trace's text), or null. */
  public static String named(String text) {
    if (text == null) {
      return null;
    }
    for (List<String> names : List.of(DRIVER, RUNTIME)) {
      for (String name : names) {
        if (text.contains(name)) {
          return name;
        }
      }
    }
    return null;
  }
}
