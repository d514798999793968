package org.foldcp.spark.gpu;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.IntFunction;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.gpu.GpuTriMul;

/**
 * The {@link ExecutorGpu}s of one owner, one per device ordinal, each made at its first use: an
 * executor's (ExecutorState holds them and closes them at shutdown; normally one device, since
 * fold-cp runs one executor per GPU), or this JVM's own ({@link #processWide()}) where the
 * fold-cp plugin is not loaded, so that even then a JVM opens a device once, not once per task.
 */
public final class GpuOwners implements AutoCloseable {
  private static final GpuOwners PROCESS_WIDE =
      new GpuOwners("this JVM (no fold-cp executor plugin)", GpuTriMul::new);

  private final String owner;
  private final IntFunction<TriMulBackend> factory;
  private final Map<Integer, ExecutorGpu> byDevice = new LinkedHashMap<>(); // guarded by this
  private boolean closed; // guarded by this

  /** GPUs on the GPU backend, owned by {@code owner} (for messages, e.g. "executor 7"). */
  public GpuOwners(String owner) {
    this(owner, GpuTriMul::new);
  }

  /** With the backends made by {@code factory}: tests pass a fake one. */
  GpuOwners(String owner, IntFunction<TriMulBackend> factory) {
    this.owner = Objects.requireNonNull(owner, "owner");
    this.factory = Objects.requireNonNull(factory, "factory");
  }

  /**
   * The GPUs of this JVM when no fold-cp executor plugin runs in it (plain local-mode Spark).
   * They live as long as the JVM, as the context of a CUDA process does: no hook would tell when
   * that Spark stops, and process exit frees them.
   */
  public static GpuOwners processWide() {
    return PROCESS_WIDE;
  }

  /**
   * The GPU on {@code ordinal}, made with {@code permits} at its first use; later calls get the
   * same one, whose permits were fixed then.
   *
   * @throws IllegalStateException once {@link #close()} ran
   */
  public synchronized ExecutorGpu device(int ordinal, int permits) {
    if (closed) {
      throw new IllegalStateException("the GPUs of " + owner + " are closed: it has shut down, and no task can"
          + " borrow a GPU from it any more");
    }
    ExecutorGpu gpu = byDevice.get(ordinal);
    if (gpu == null) {
      gpu = new ExecutorGpu(ordinal, permits, factory);
      byDevice.put(ordinal, gpu);
    }
    return gpu;
  }

  /** How many GPUs were made and not yet closed. */
  public synchronized int size() {
    return byDevice.size();
  }

  /**
   * Closes every GPU made so far, in the order they were made; a later {@link #device} makes a
   * new one. Each is closed even if an earlier one fails; the first failure is thrown.
   */
  public void closeDevices() {
    List<ExecutorGpu> open;
    synchronized (this) {
      open = new ArrayList<>(byDevice.values());
      byDevice.clear();
    }
    RuntimeException first = null;
    for (ExecutorGpu gpu : open) {
      try {
        gpu.close();
      } catch (RuntimeException e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }

  /** Closes every GPU and refuses new ones; a second close does nothing. */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    closeDevices();
  }

  @Override
  public String toString() {
    return "GpuOwners(" + owner + ")";
  }
}
