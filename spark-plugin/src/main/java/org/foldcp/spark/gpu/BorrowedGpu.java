package org.foldcp.spark.gpu;

import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.foldcp.ops.StageTimes;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.gpu.feed.StackFeed;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.PairTensor;

/**
 * A task's view of its executor's GPU backend. Closing it gives the task's permit back (see
 * {@link TaskLease}) and leaves the GPU state open: the executor keeps its context, stream,
 * pinned pool and cached layers for the next task, and closes them at shutdown.
 */
public final class BorrowedGpu implements TriMulBackend {
  private final ExecutorGpu owner;
  private final TriMulBackend backend;
  private final TaskLease lease;
  private final long waitedNanos;
  private final AtomicBoolean closed = new AtomicBoolean();

  BorrowedGpu(ExecutorGpu owner, TriMulBackend backend, TaskLease lease, long waitedNanos) {
    this.owner = owner;
    this.backend = backend;
    this.lease = lease;
    this.waitedNanos = waitedNanos;
  }

  /** The executor GPU this view was borrowed from. */
  public ExecutorGpu owner() {
    return owner;
  }

  /** How long the borrow waited for a permit (0 when the task already held one). */
  public long waitedMillis() {
    return TimeUnit.NANOSECONDS.toMillis(waitedNanos);
  }

  @Override
  public String name() {
    return backend.name();
  }

  @Override
  public PairTensor forward(PairTensor x, TriMulLayer layer, boolean allowNonFinite) {
    requireLent();
    return backend.forward(x, layer, allowNonFinite);
  }

  /** The whole stack in one call, so that the GPU backend keeps the tensor resident across layers. */
  @Override
  public PairTensor forward(PairTensor x, LayerStack stack, boolean allowNonFinite) {
    requireLent();
    return backend.forward(x, stack, allowNonFinite);
  }

  /** The stack, with the backend's GPU stage times to {@code sink} (this view adds nothing to them). */
  @Override
  public PairTensor forward(PairTensor x, LayerStack stack, boolean allowNonFinite, StageTimes.Sink sink) {
    requireLent();
    return backend.forward(x, stack, allowNonFinite, sink);
  }

  /**
   * The executor's GPU feed, for tasks that move whole complexes as bytes (see
   * {@link ExecutorGpu#feed()}); empty on a backend that has none.
   */
  public Optional<StackFeed> feed() {
    requireLent();
    return owner.feed();
  }

  /** Gives the permit back (once); the GPU state stays with the executor. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      lease.leave();
    }
  }

  private void requireLent() {
    if (closed.get() || lease.returned()) {
      throw new IllegalStateException("this borrow of " + owner + " was given back (closed, or its task ended);"
          + " borrow the GPU again to compute on it");
    }
    owner.requireOpen();
  }

  @Override
  public String toString() {
    return "BorrowedGpu(" + owner + (closed.get() ? ", given back" : "") + ")";
  }
}
