package org.foldcp.spark.sql;

import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.InternalRow;
import org.foldcp.ops.NonFiniteInputException;
import org.foldcp.ops.gpu.PinnedPool;
import org.foldcp.ops.gpu.feed.FeedTicket;
import org.foldcp.ops.gpu.feed.StackFeed;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.spark.route.NonFiniteInput;

/**
 * The cp = 1 route's GPU path over rows: whole complexes go from the input rows to the executor's
 * GPU feed as bulk copies ({@link TileRowBytes}) and come back as output rows laid out in the
 * feed's pinned memory, the download writing their values in place ({@link UnsafeTileRows}; a
 * heap row when the pool has no span free). Up to {@code depth} complexes of this task are in the
 * feed at once, so that one complex's download, the next one's kernels and the one after's upload
 * overlap.
 *
 * <p>Order is kept: outputs come in input order. A row the feed does not take (a row band of a
 * complex above 2 GiB, a complex whose slots would not fit in device memory, an output too large
 * for one row) ends the fast path for the rest of the partition: the complexes in the feed are
 * drained first, then that row and the rest go to {@code rest} (the decoding route, which gathers
 * and cuts bands and can run a complex in channel groups).
 */
final class FeedForward implements Iterator<InternalRow> {
  /** One complex in the feed and what its output row needs besides the values. */
  private record InFlight(FeedTicket ticket, String complexId, int nTokens, int dim, long pairBytes,
                          byte[] mask) {}

  private final Iterator<InternalRow> rows;
  private final int[] ordinals;
  private final StackFeed feed;
  private final List<TriMulLayer> stack;
  private final boolean allowNonFinite;
  private final SqlRouteMetrics metrics;
  private final int depth;
  private final Function<Iterator<InternalRow>, Iterator<InternalRow>> rest;
  private final UnsafeTileRows out = new UnsafeTileRows();
  private final ArrayDeque<InFlight> inFlight = new ArrayDeque<>();
  private PinnedPool.Run lent;              // the pinned memory of the row handed out last, if it lives there
  private InternalRow pulled;               // taken from rows, not yet in the feed
  private Iterator<InternalRow> restOut;    // once the fast path has ended

  FeedForward(Iterator<InternalRow> rows, int[] ordinals, StackFeed feed, List<TriMulLayer> stack,
              boolean allowNonFinite, SqlRouteMetrics metrics, int depth,
              Function<Iterator<InternalRow>, Iterator<InternalRow>> rest) {
    this.rows = rows;
    this.ordinals = ordinals;
    this.feed = feed;
    this.stack = stack;
    this.allowNonFinite = allowNonFinite;
    this.metrics = metrics;
    this.depth = depth;
    this.rest = rest;
  }

  @Override
  public boolean hasNext() {
    if (restOut != null) {
      return restOut.hasNext();
    }
    return !inFlight.isEmpty() || pulled != null || rows.hasNext();
  }

  @Override
  public InternalRow next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    giveBackLent(); // the row handed out last is void from here on (Spark's row-reuse contract)
    if (restOut != null) {
      return restOut.next();
    }
    fill();
    if (inFlight.isEmpty()) {
      // the next row is one the feed does not take: the rest of the partition goes the other way
      Iterator<InternalRow> remaining = prepend(pulled, rows);
      pulled = null;
      restOut = rest.apply(remaining);
      return restOut.next();
    }
    return drainOldest();
  }

  /**
   * Puts rows into the feed until {@code depth} are in it: the first waits for a slot, the others
   * go in only when a slot is free at once (a task that holds slots never waits for more).
   */
  private void fill() {
    while (inFlight.size() < depth && (pulled != null || rows.hasNext())) {
      if (pulled == null) {
        pulled = rows.next();
      }
      long t0 = System.nanoTime();
      TileRowBytes in = TileRowBytes.ofWholeComplex(pulled, ordinals);
      if (in == null || UnsafeTileRows.rowBytes(in.complexId, in.pairBytes(), in.mask()) < 0
          || !feed.fits(in.batch(), in.n(), in.dim(), stack.get(0).hidden())) {
        return; // not for the feed: handed on once the feed is drained
      }
      String what = "the pair tensor of complex '" + in.complexId + "'";
      FeedTicket t = inFlight.isEmpty()
          ? feed.submit(in, stack, allowNonFinite, what)
          : feed.trySubmit(in, stack, allowNonFinite, what);
      if (t == null) {
        return; // no free slot: drain first
      }
      metrics.computeNanos(System.nanoTime() - t0);
      metrics.bytesIn(in.pairBytes());
      if (t.uploadedInPlace()) {
        metrics.bytesInPlace(in.pairBytes());
      }
      inFlight.add(new InFlight(t, in.complexId, in.nTokens, in.dim(), in.pairBytes(), in.mask()));
      pulled = null; // the feed has copied it: the row may be reused now
    }
  }

  /**
   * The oldest complex's output row. Where the pool has a free span for the whole row, the row is
   * laid out in pinned memory and the download lands in its pair field: no host copy of the values
   * (the span stays lent until the next call). Otherwise it streams through pinned blocks into the
   * task's heap row (one host copy per byte).
   */
  private InternalRow drainOldest() {
    InFlight f = inFlight.poll();
    long t0 = System.nanoTime();
    PinnedPool.Run run = feed.transfers().pool().tryAcquireRun(UnsafeTileRows.rowBytes(f.complexId, f.pairBytes, f.mask));
    FeedTicket.Drained d;
    try {
      if (run != null) {
        long at = out.beginAt(run.address(), f.complexId, f.nTokens, f.dim, f.pairBytes, f.mask);
        d = f.ticket.drainInto(run, at);
        lent = run;
        run = null;
      } else {
        out.begin(f.complexId, f.nTokens, f.dim, f.pairBytes, f.mask);
        d = f.ticket.drain(out.pairSink());
      }
    } catch (NonFiniteInputException e) {
      throw NonFiniteInput.about(e, "the pair tensor of complex '" + f.complexId + "'");
    } finally {
      if (run != null) {
        feed.transfers().pool().release(run); // the drain failed: nothing was handed out from it
      }
    }
    metrics.computeNanos(System.nanoTime() - t0);
    metrics.gpuBusyNanos(d.gpuNanos());
    metrics.copyWaitNanos(d.waitNanos());
    metrics.hostCopyNanos(d.copyNanos());
    metrics.tiles(1);
    metrics.gpuTiles(1);
    metrics.bytesOut(f.pairBytes);
    metrics.outputRow();
    return out.row();
  }

  private void giveBackLent() {
    if (lent != null) {
      PinnedPool.Run r = lent;
      lent = null;
      feed.transfers().pool().release(r);
    }
  }

  /**
   * At the task's end: frees the slots of complexes still in the feed (a task that stops early)
   * and gives the output buffer to a later task; idempotent.
   */
  void finish() {
    InFlight f;
    while ((f = inFlight.poll()) != null) {
      f.ticket.abandon();
    }
    giveBackLent();
    out.release();
  }

  private static Iterator<InternalRow> prepend(InternalRow first, Iterator<InternalRow> rest) {
    return new Iterator<>() {
      private InternalRow head = first;

      @Override
      public boolean hasNext() {
        return head != null || rest.hasNext();
      }

      @Override
      public InternalRow next() {
        if (head != null) {
          InternalRow r = head;
          head = null;
          return r;
        }
        return rest.next();
      }
    };
  }
}
