package org.foldcp.ops.gpu.feed;

import org.foldcp.ops.gpu.GpuEvent;
import org.foldcp.ops.gpu.GpuStream;

/**
 * The order of one direction's copies (all uploads, or all downloads) of a {@link StackFeed},
 * whose complexes each have their own streams. Copies in one direction share the device's copy
 * engines; queued on different streams at once, they run together, each at a fraction of the
 * bandwidth, and all end late. The compute stream takes complexes in queue order, so what it
 * needs is the first complex uploaded first: with {@link FeedSettings.CopyOrder#QUEUED} each copy
 * queued through the chain waits for the one queued before it, and the copies run one at a time
 * at full bandwidth in queue order. {@link FeedSettings.CopyOrder#SHARED} lets them overlap.
 */
final class CopyChain {
  private final boolean queued;
  private GpuEvent lastDone; // guarded by this: the end of the copy queued last

  CopyChain(FeedSettings.CopyOrder order) {
    this.queued = order == FeedSettings.CopyOrder.QUEUED;
  }

  /**
   * Queues {@code copies} on {@code stream} after the copy queued before (when the order is
   * queued), between {@code start} and {@code done}, which it records on the stream. The whole
   * call holds the chain: {@code copies} only queues work, it never waits.
   */
  synchronized void queue(GpuStream stream, GpuEvent start, GpuEvent done, Runnable copies) {
    if (queued && lastDone != null) {
      lastDone.makeWait(stream);
    }
    start.record(stream);
    copies.run();
    done.record(stream);
    lastDone = done;
  }

  /** Whether copies wait for the one queued before (the order is queued). */
  boolean queued() {
    return queued;
  }
}
