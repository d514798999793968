package org.foldcp.spark.gpu;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.IntFunction;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.gpu.GpuAvailability;
import org.foldcp.ops.gpu.feed.FeedSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link ExecutorGpu}s of one owner, one per device ordinal, each made at its first use: an
 * executor's (ExecutorState holds them and closes them at shutdown; normally one device, since
 * fold-cp runs one executor per GPU), or this JVM's own ({@link #processWide()}) where the
 * fold-cp plugin is not loaded, so that even then a JVM opens a device once, not once per task.
 *
 * <p>It also decides, once per device, whether its tasks can compute on the GPU at all
 * ({@link #choice}): the one chooser behind backend auto, on every route and in foldcp_trimul.
 */
public final class GpuOwners implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(GpuOwners.class);
  private static final GpuOwners PROCESS_WIDE =
      new GpuOwners("this JVM (no fold-cp executor plugin)", null, GpuAvailability::availability);

  private final String owner;
  private final IntFunction<TriMulBackend> factory; // null: ExecutorGpu opens GpuTriMul
  private final IntFunction<String> availability;
  private final Map<Integer, ExecutorGpu> byDevice = new LinkedHashMap<>(); // guarded by this
  private final Map<Integer, BackendChoice> choices = new HashMap<>(); // guarded by this
  private boolean closed; // guarded by this

  /** GPUs on the GPU backend, owned by {@code owner} (for messages, e.g. "executor 7"). */
  public GpuOwners(String owner) {
    this(owner, null, GpuAvailability::availability);
  }

  /**
   * With the backends made by {@code factory} (null: our GpuTriMul over each executor GPU's host
   * transfers) and {@code availability} saying why a device cannot run them (null: it can): tests
   * pass fakes.
   */
  GpuOwners(String owner, IntFunction<TriMulBackend> factory, IntFunction<String> availability) {
    this.owner = Objects.requireNonNull(owner, "owner");
    this.factory = factory;
    this.availability = Objects.requireNonNull(availability, "availability");
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
  public ExecutorGpu device(int ordinal, int permits) {
    return device(ordinal, permits, FeedSettings.DEFAULT);
  }

  /** As {@link #device(int, int)}, with the sizes of the GPU's feed (fixed at its first use, as the permits). */
  public synchronized ExecutorGpu device(int ordinal, int permits, FeedSettings feed) {
    if (closed) {
      throw new IllegalStateException("the GPUs of " + owner + " are closed: it has shut down, and no task can"
          + " borrow a GPU from it any more");
    }
    ExecutorGpu gpu = byDevice.get(ordinal);
    if (gpu == null) {
      gpu = new ExecutorGpu(ordinal, permits, feed, factory);
      byDevice.put(ordinal, gpu);
    }
    return gpu;
  }

  /**
   * Whether tasks of this owner compute on GPU {@code ordinal} (-1: a task without one), decided
   * at the first call and logged then, once, with the reason when they cannot: every later task
   * gets the same answer without probing the driver again or repeating the warning. The probe
   * creates no CUDA context, so an executor that never borrows its GPU still holds none.
   */
  public synchronized BackendChoice choice(int ordinal) {
    BackendChoice known = choices.get(ordinal);
    if (known != null) {
      return known;
    }
    BackendChoice made = new BackendChoice(ordinal,
        ordinal < 0 ? BackendChoice.NO_TASK_GPU : availability.apply(ordinal));
    choices.put(ordinal, made);
    if (made.onGpu()) {
      LOG.info("fold-cp backend in {}: tasks compute on GPU {} (backend auto and gpu)", owner, ordinal);
    } else {
      LOG.warn("fold-cp backend in {}: tasks cannot compute on a GPU, so backend auto computes on the CPU (and backend"
          + " gpu fails) because {}", owner, made.whyNotGpu());
    }
    return made;
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
