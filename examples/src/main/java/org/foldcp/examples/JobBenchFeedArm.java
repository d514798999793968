package org.foldcp.examples;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.foldcp.ops.gpu.Closeables;
import org.foldcp.ops.gpu.GpuTriMul;
import org.foldcp.ops.gpu.PinnedPool;
import org.foldcp.ops.gpu.PinnedTransfers;
import org.foldcp.ops.gpu.feed.CachedComplex;
import org.foldcp.ops.gpu.feed.FeedSettings;
import org.foldcp.ops.gpu.feed.FeedTicket;
import org.foldcp.ops.gpu.feed.HeapComplex;
import org.foldcp.ops.gpu.feed.StackFeed;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;

/**
 * JobBenchmark's {@code feed} arm: the job's GPU data path without Spark. A feed of the job's sizes
 * (its own, beside the executor's) takes the same complexes, their values in its pinned cache as
 * the cached rows' are, from as many threads as the job has task slots; each thread keeps up to
 * three complexes in it and drains the oldest into a span of the pinned pool, as the job's tasks
 * do (SingleRankRows.FEED_DEPTH, FeedForward). Beside the job and the floors it says which side of
 * the gap is whose: a feed arm near the overlapped floor leaves the rest to Spark's side, a feed
 * arm near the job's rate puts it in the feed.
 */
final class JobBenchFeedArm implements AutoCloseable {
  private static final int DEPTH = 3;

  private final LayerStack stack;
  private final PinnedTransfers transfers;
  private final StackFeed feed;
  private final List<CachedComplex> cached = new ArrayList<>();
  private final ExecutorService threads;
  private final int slots;

  JobBenchFeedArm(GpuTriMul gpu, LayerStack stack, List<HeapComplex> complexes, int slots, FeedSettings settings) {
    this.stack = stack;
    this.slots = slots;
    PinnedTransfers t = settings.openTransfers(gpu.device());
    StackFeed f = null;
    try {
      f = new StackFeed(gpu.device(), gpu.layerCache(), t, settings, 0);
      for (HeapComplex c : complexes) {
        cached.add(CachedComplex.in(f.cache(), c));
      }
    } catch (RuntimeException e) {
      cached.clear();
      Closeables.closeAll(e, f, t);
      throw e;
    }
    this.transfers = t;
    this.feed = f;
    this.threads = Executors.newFixedThreadPool(slots, r -> {
      Thread th = new Thread(r, "feed-arm");
      th.setDaemon(true);
      return th;
    });
  }

  /** Seconds for every complex through the feed, the threads taking every slots-th complex each. */
  double pass() {
    List<TriMulLayer> layers = stack.layers();
    long t0 = System.nanoTime();
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < slots; t++) {
      final int first = t;
      done.add(threads.submit(() -> {
        ArrayDeque<FeedTicket> inFlight = new ArrayDeque<>();
        try {
          run(first, layers, inFlight);
        } finally {
          inFlight.forEach(FeedTicket::abandon); // after a failure: the slots go back to the feed
        }
        return null;
      }));
    }
    for (Future<?> f : done) {
      try {
        f.get();
      } catch (Exception e) {
        throw new IllegalStateException("the feed arm failed", e);
      }
    }
    return (System.nanoTime() - t0) / 1e9;
  }

  /** Thread {@code first}'s complexes, three in flight, the oldest drained first. */
  private void run(int first, List<TriMulLayer> layers, ArrayDeque<FeedTicket> inFlight) {
    for (int k = first; k < cached.size(); k += slots) {
      FeedTicket ticket;
      while ((ticket = offer(k, layers, inFlight.isEmpty())) == null) {
        drainOldest(inFlight); // no slot free at once: the oldest makes room
      }
      inFlight.add(ticket);
      if (inFlight.size() == DEPTH) {
        drainOldest(inFlight);
      }
    }
    while (!inFlight.isEmpty()) {
      drainOldest(inFlight);
    }
  }

  /**
   * Complex {@code k} into the feed: waiting for a slot when the thread holds none, else only if
   * one is free at once (null otherwise), as FeedForward does, so that no thread waits holding slots.
   */
  private FeedTicket offer(int k, List<TriMulLayer> layers, boolean holdsNone) {
    CachedComplex c = cached.get(k);
    return holdsNone ? feed.submit(c, layers, false, "complex " + k) : feed.trySubmit(c, layers, false, "complex " + k);
  }

  /** The oldest complex's output into a pinned span where the pool has one (as the job's output row), else through blocks. */
  private void drainOldest(ArrayDeque<FeedTicket> inFlight) {
    FeedTicket t = inFlight.poll();
    PinnedPool pool = transfers.pool();
    PinnedPool.Run run = pool.tryAcquireRun(cached.get(0).pairBytes());
    if (run == null) {
      t.drain((offset, src, len) -> { });
      return;
    }
    try {
      t.drainInto(run, 0);
    } finally {
      pool.release(run);
    }
  }

  @Override
  public void close() {
    threads.shutdownNow();
    cached.clear(); // the spans go with the feed's cache
    RuntimeException e = Closeables.closeAll(null, feed, transfers);
    if (e != null) {
      throw e;
    }
  }
}
