package org.foldcp.ops.gpu.feed;

import org.foldcp.ops.gpu.GpuEvent;
import org.foldcp.ops.gpu.GpuStream;

/**
 * Puts one direction's whole-complex copies (all uploads from the pinned cache, or all downloads
 * into pinned spans) of a {@link StackFeed} in a queue, though each complex has its own streams.
 * Copies in one direction share the device's copy engines: queued on different streams at once,
 * they run together, each at a fraction of the bandwidth, and all end late, while the compute
 * stream, which takes complexes in queue order, needs the first one first. Here each copy waits
 * for the one queued before it, so they run one at a time at full bandwidth, in queue order.
 * Measured on an H100, 64 complexes of (1, 512, 512, 128) through a 4-layer stack from 8 threads:
 * 649 complexes/s queued against 584 with the copies at once (JobBenchmark's feed arm, both in
 * one run, bench/results/2026-12-05-job-bench-gpu-h100-copy-order.csv).
 */
final class CopyChain {
  private GpuEvent lastDone; // guarded by this: the end of the copy queued last

  /**
   * Queues {@code copies} on {@code stream} after the copy queued before, between {@code start}
   * and {@code done}, which it records on the stream. The whole call holds the chain:
   * {@code copies} only queues work, it never waits.
   */
  synchronized void queue(GpuStream stream, GpuEvent start, GpuEvent done, Runnable copies) {
    if (lastDone != null) {
      lastDone.makeWait(stream);
    }
    start.record(stream);
    copies.run();
    done.record(stream);
    lastDone = done;
  }
}
