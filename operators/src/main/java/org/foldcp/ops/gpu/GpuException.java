package org.foldcp.ops.gpu;

/**
 * A failure of the GPU route: no driver or device, an unsupported architecture, a CUDA driver
 * call that failed (the message names the call and the driver's error name and string, e.g.
 * {@code "cuMemAlloc(4096 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"}), or a
 * failure inside our kernels' C API (the message carries the native message and its status, e.g.
 * {@code "foldcp_trimul_forward failed (FOLDCP_ERR_CUDA): ..."}).
 *
 * <p>Bad inputs (shapes, weights) are reported as {@link org.foldcp.ops.InvalidInputException}
 * instead, also when the native code finds them.
 */
public class GpuException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** No status: the failure did not come from a CUDA driver call or the native library. */
  public static final int NO_STATUS = Integer.MIN_VALUE;

  private final int status;
  private final String statusName;

  public GpuException(String message) {
    this(message, NO_STATUS, null, null);
  }

  public GpuException(String message, Throwable cause) {
    this(message, NO_STATUS, null, cause);
  }

  /** Thrown by the JNI library: {@code status} is a foldcp_status, {@code statusName} its name. */
  public GpuException(String message, int status, String statusName) {
    this(message, status, statusName, null);
  }

  public GpuException(String message, int status, String statusName, Throwable cause) {
    super(message, cause);
    this.status = status;
    this.statusName = statusName;
  }

  /**
   * The code behind the failure: a CUresult for driver calls, a foldcp_status for the native
   * library, {@link #NO_STATUS} otherwise.
   */
  public int status() {
    return status;
  }

  /** The name of {@link #status()}, e.g. "CUDA_ERROR_OUT_OF_MEMORY" or "FOLDCP_ERR_CUDA"; null if none. */
  public String statusName() {
    return statusName;
  }
}
