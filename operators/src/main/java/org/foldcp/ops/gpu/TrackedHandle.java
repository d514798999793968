package org.foldcp.ops.gpu;

/**
 * The life of one native handle (device or pinned memory, a stream, an event, a primary-context
 * retain): listed by {@link MemoryLeakCheck} from its creation until it is freed, and freed at
 * most once. Its owner's close() hands the free to {@link #free}, which checks the call's
 * CUresult ({@link CudaDriver#check}): an error of the context, a sticky one left by an earlier
 * kernel included, surfaces from close instead of being lost.
 */
final class TrackedHandle {
  private final long id;
  private volatile boolean closed;

  /** Registers the handle with {@link MemoryLeakCheck} ({@code bytes} 0 for a handle that holds no memory). */
  TrackedHandle(String kind, long bytes, String description) {
    this.id = MemoryLeakCheck.register(kind, bytes, description);
  }

  boolean isClosed() {
    return closed;
  }

  /**
   * The first call marks the handle closed, takes it off the leak list and runs {@code free},
   * which calls the driver and checks the result; later calls do nothing.
   */
  synchronized void free(Runnable free) {
    if (closed) {
      return;
    }
    closed = true;
    MemoryLeakCheck.release(id);
    free.run();
  }

  /**
   * As {@link #free(Runnable)}, with {@code device}'s primary context made current first (also
   * after the device was closed, so that a late free still reaches the driver).
   */
  void free(GpuDevice device, Runnable free) {
    free(() -> {
      device.setCurrent();
      free.run();
    });
  }
}
