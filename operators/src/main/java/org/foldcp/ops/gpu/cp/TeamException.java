package org.foldcp.ops.gpu.cp;

import org.foldcp.ops.gpu.GpuException;

/**
 * The NVSHMEM team cannot go on: a rank that never joined, a peer that died or hangs (its signal
 * did not arrive within the team's timeout), a process asked to join a second, different team.
 * The message names the ranks that are missing. After it the team of this process is broken:
 * every later call fails at once, and the process (a Spark executor) must be replaced, since
 * NVSHMEM initialises only once per process.
 */
public class TeamException extends GpuException {
  private static final long serialVersionUID = 1L;

  public TeamException(String message) {
    super(message);
  }

  public TeamException(String message, Throwable cause) {
    super(message, cause);
  }

  /** Thrown by the JNI layer (foldcp_cp_jni.cpp) with the native status. */
  public TeamException(String message, int status, String statusName) {
    super(message, status, statusName);
  }
}
