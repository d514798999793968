package org.foldcp.ops.gpu.feed;

import org.foldcp.ops.NonFiniteInputException;
import org.foldcp.ops.gpu.PinnedPool;
import org.foldcp.ops.gpu.PinnedTransfers;
import org.foldcp.ops.gpu.ScanResult;

/**
 * A complex in a {@link StackFeed} whose stack is queued: {@link #drain} hands its output over and
 * frees its slot. Exactly one drain (or {@link #abandon}) per ticket; one thread at a time.
 */
public final class FeedTicket {
  private final StackFeed feed;
  private final DeviceSlot slot;
  private final int n;
  private final int dim;
  private final long bytes;
  private final boolean allowNonFinite;
  private final String what;
  private final long submitWaitNanos;
  private final long copyNanos;
  private final boolean inPlace;
  private boolean done;

  FeedTicket(StackFeed feed, DeviceSlot slot, int n, int dim, long bytes, boolean allowNonFinite,
             String what, long submitWaitNanos, long copyNanos, boolean inPlace) {
    this.inPlace = inPlace;
    this.submitWaitNanos = submitWaitNanos;
    this.copyNanos = copyNanos;
    this.feed = feed;
    this.slot = slot;
    this.n = n;
    this.dim = dim;
    this.bytes = bytes;
    this.allowNonFinite = allowNonFinite;
    this.what = what;
  }

  /** Whether the pair values were uploaded straight from the pinned cache (no host copy). */
  public boolean uploadedInPlace() {
    return inPlace;
  }

  /**
   * Downloads the output block by block and hands each block to {@code out}, in order; frees
   * the slot. Nothing reaches {@code out} when the input held NaN or Inf (unless allowed).
   *
   * @throws NonFiniteInputException naming the first (b, i, j, c), before any output is handed over
   */
  public Drained drain(ComplexOut out) {
    requireUndrained();
    done = true;
    try {
      feed.device().makeCurrent();
      slot.computed.makeWait(slot.down);
      slot.downStart.record(slot.down);
      queueScanResult();
      long[] gpu = {-1};
      PinnedTransfers.Copied copied = feed.transfers().download(slot.x(), bytes, slot.down, (offset, src, len) -> {
        if (gpu[0] < 0) {
          // the complex's kernels ran before this block's copy: their time and the scan are readable
          gpu[0] = computedNanos();
        }
        out.copyPair(offset, src, len);
      });
      slot.downloaded.record(slot.down);
      slot.downloaded.synchronize(); // every block has arrived: at once
      feed.recordSpan(slot);
      return drained(gpu[0], copied.waitNanos());
    } finally {
      feed.settle(slot);
    }
  }

  /**
   * Downloads the output in one copy straight into {@code run} at byte {@code at} (where the
   * caller's output row keeps its values: no host copy), waits for it and frees the slot. The run's
   * bytes are not output when the input held NaN or Inf (unless allowed): the exception comes
   * instead, and the caller gives the run back.
   *
   * @throws NonFiniteInputException naming the first (b, i, j, c)
   * @throws IndexOutOfBoundsException when the output does not fit in the run from {@code at}
   */
  public Drained drainInto(PinnedPool.Run run, long at) {
    requireUndrained();
    if (at < 0 || at > run.bytes() - bytes) {
      throw new IndexOutOfBoundsException("an output of " + bytes + " bytes at byte " + at + " of a pinned run of "
          + run.bytes() + " bytes");
    }
    done = true;
    try {
      long t0 = System.nanoTime();
      // downloads are queued in the order their kernels end: one queued behind kernels still
      // running would hold back the downloads of complexes that are done
      slot.computed.synchronize();
      feed.device().makeCurrent();
      feed.downloads().queue(slot.down, slot.downStart, slot.downloaded, () -> {
        queueScanResult();
        run.downloadFrom(slot.x(), at, bytes, slot.down);
      });
      slot.down.synchronize();
      long waited = System.nanoTime() - t0;
      long gpu = computedNanos();
      feed.recordSpan(slot);
      return drained(gpu, waited);
    } finally {
      feed.settle(slot);
    }
  }

  /** Frees the slot without handing anything over (a task that stops before draining). */
  public void abandon() {
    if (!done) {
      done = true;
      feed.settle(slot);
    }
  }

  private void requireUndrained() {
    if (done) {
      throw new IllegalStateException("this ticket of " + what + " was drained or abandoned already");
    }
  }

  /**
   * Unless non-finite input is allowed, queues the copy of the scan's result on the download
   * stream ahead of the output; the kernels come first (the stream waits for them, or the host saw
   * them end).
   */
  private void queueScanResult() {
    if (!allowNonFinite) {
      slot.result.copyToHostAsync(0, slot.resultHost, 0, DeviceSlot.RESULT_BYTES, slot.down);
    }
  }

  /**
   * GPU nanoseconds of the complex's scan and layers, read once they ran (and the scan's result
   * with them); throws when the input held NaN or Inf, unless that is allowed.
   */
  private long computedNanos() {
    long gpu = Math.round(slot.computed.millisSince(slot.computeStart) * 1e6);
    if (!allowNonFinite) {
      ScanResult.throwIfFound(slot.resultHost.buffer(), n, n, dim, what);
    }
    return gpu;
  }

  /** Reports the drain to the feed, with {@code downloadWaitNanos} plus the wait at submit. */
  private Drained drained(long gpuNanos, long downloadWaitNanos) {
    long waited = downloadWaitNanos + submitWaitNanos;
    feed.drained(gpuNanos, waited, bytes);
    return new Drained(gpuNanos, waited, copyNanos, bytes);
  }

  /**
   * What a drain measured: GPU time of the complex's scan and layers, host time spent waiting for
   * the complex (its slot and pinned blocks at submit, its downloads at drain), and host time spent
   * copying its input into pinned blocks (summed over the threads that copied it).
   */
  public record Drained(long gpuNanos, long waitNanos, long copyNanos, long bytes) {}
}
