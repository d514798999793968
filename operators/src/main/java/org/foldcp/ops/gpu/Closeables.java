package org.foldcp.ops.gpu;

/**
 * Closing native handles in a defined order without losing a failure: every item is closed even
 * when an earlier one fails, and the failures travel as one exception (the first, the rest
 * suppressed). Shared by the owners of native resources (GpuTriMul, the CP stack, the heads
 * all-to-all).
 */
public final class Closeables {
  private Closeables() {}

  /**
   * Closes each non-null item in order, never stopping early. With {@code pending} (a failure
   * already being thrown), later failures are added to it and null is returned; else the first
   * one is returned with the rest suppressed (null when all closed cleanly).
   */
  public static RuntimeException closeAll(RuntimeException pending, AutoCloseable... items) {
    RuntimeException first = pending;
    for (AutoCloseable c : items) {
      if (c == null) {
        continue;
      }
      try {
        c.close();
      } catch (Exception e) {
        RuntimeException re = e instanceof RuntimeException ? (RuntimeException) e
            : new GpuException("close failed: " + e, e);
        if (first == null) {
          first = re;
        } else {
          first.addSuppressed(re);
        }
      }
    }
    return pending == null ? first : null;
  }
}
