package org.foldcp.spark.route;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.Supplier;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;
import org.foldcp.ops.NonFiniteInputException;
import org.foldcp.ops.StageTimes;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.config.FoldCpConf.MetricsLevel;
import org.foldcp.spark.gpu.BorrowedGpu;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.tiles.TileRecord;

/**
 * A partition's whole complexes through the layer stack, one at a time, as the consumer pulls
 * them: a task holds one input and one output complex at once, never the partition's outputs
 * in a list.
 *
 * <p>The backend opens at the first complex (an empty partition opens none, so no GPU borrow)
 * and closes when the input runs out, giving a GPU borrow back before the task's later work. A
 * task that fails or is killed part-way never reaches that point: the task-completion listener
 * registered at the open closes the backend then. Closing is idempotent, so the listener after
 * a normal end does nothing.
 *
 * <p>At metrics level debug each forward also reports the GPU time of each TriMul stage
 * ({@link RouteMetrics#gpuStageTimes}); below it the plain forward runs, without the wait for the
 * kernels that measuring costs. Which forward runs is fixed when this object is built.
 */
public final class StreamedForward implements Iterator<TileRecord> {
  private final Iterator<TileRecord> in;
  private final Supplier<TriMulBackend> opener;
  private final Supplier<LayerStack> stack;
  private final Forward forward;
  private final RouteMetrics metrics;
  private TriMulBackend backend; // null until the first complex, and again once closed
  private boolean closed;

  /** One complex through the stack on the task's backend. */
  @FunctionalInterface
  private interface Forward {
    PairTensor apply(TriMulBackend backend, PairTensor x, LayerStack stack);
  }

  /**
   * @param opener opens the task's backend (called at most once, on the task's thread)
   * @param stack the layers, fetched at the first complex (a broadcast value on an executor)
   * @param plan whether NaN and Inf may go through, and the metrics level (debug: GPU stage times)
   */
  public StreamedForward(Iterator<TileRecord> in, Supplier<TriMulBackend> opener, Supplier<LayerStack> stack,
                         RoutePlan plan, RouteMetrics metrics) {
    this.in = in;
    this.opener = opener;
    this.stack = stack;
    this.metrics = metrics;
    this.forward = forwardFor(plan.allowNonFinite, plan.metricsLevel, metrics);
  }

  private static Forward forwardFor(boolean allowNonFinite, MetricsLevel level, RouteMetrics metrics) {
    if (level.keeps(MetricsLevel.DEBUG)) {
      StageTimes.Sink sink = metrics::gpuStageTimes;
      return (backend, x, stack) -> backend.forward(x, stack, allowNonFinite, sink);
    }
    return (backend, x, stack) -> backend.forward(x, stack, allowNonFinite);
  }

  @Override
  public boolean hasNext() {
    boolean more = in.hasNext();
    if (!more) {
      close();
    }
    return more;
  }

  @Override
  public TileRecord next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    TileRecord r = in.next();
    PairTiles.requireWholeComplex(r);
    TriMulBackend b = backend();
    metrics.bytesIn(r.pairBytes());
    long t0 = System.nanoTime();
    PairTensor y;
    try {
      // The backend checks for NaN and Inf (on the GPU, within its upload's copy loop).
      y = forward.apply(b, r.tile, stack.get());
    } catch (NonFiniteInputException e) {
      throw NonFiniteInput.about(e, r);
    }
    metrics.computeNanos(System.nanoTime() - t0);
    TileRecord o = new TileRecord(r.complexId, r.nTokens, 0, 0, y);
    metrics.tiles(1);
    if (b instanceof BorrowedGpu) {
      metrics.gpuTiles(1);
    }
    metrics.bytesOut(o.pairBytes());
    return o;
  }

  private synchronized TriMulBackend backend() {
    if (closed) {
      throw new IllegalStateException("the backend of this partition is closed: its task ended");
    }
    if (backend == null) {
      backend = opener.get();
      TaskContext task = TaskContext.get();
      if (task != null) {
        task.addTaskCompletionListener((TaskCompletionListener) done -> close());
      }
    }
    return backend;
  }

  /** Closes the backend if one is open; later calls do nothing. */
  synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (backend != null) {
      TriMulBackend b = backend;
      backend = null;
      b.close();
    }
  }
}
