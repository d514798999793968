package org.foldcp.ops.gpu.feed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.foldcp.ops.NonFiniteInputException;
import org.foldcp.ops.gpu.GpuAvailability;
import org.foldcp.ops.gpu.GpuTriMul;
import org.foldcp.ops.gpu.HostCopy;
import org.foldcp.ops.gpu.MemoryLeakCheck;
import org.foldcp.ops.gpu.PinnedPool;
import org.foldcp.ops.gpu.PinnedTransfers;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The GPU feed against the backend's own forward (GpuTriMul, whose accuracy GpuTriMulTest
 * checks against float64): the same bits for every complex, whatever the blocks, slots and
 * threads; NaN and Inf found on the device and named; pinned and device memory bounded and all
 * freed at close. Needs an sm_90 GPU; skips with the reason otherwise.
 */
@Tag("gpu")
class StackFeedGpuTest {
  /** 1 MiB blocks, 4 of them: every complex here of N >= 128 at D = 32 streams through several. */
  private static final FeedSettings SMALL = new FeedSettings(4L << 20, 1L << 20, 3, 2, 64L << 20);

  private static void assumeGpu() {
    String why = GpuAvailability.availability();
    Assumptions.assumeTrue(why == null, why);
  }

  private static byte[] run(StackFeed feed, HeapComplex in, LayerStack stack, boolean allowNonFinite) {
    byte[] out = new byte[(int) in.pairBytes()];
    FeedTicket.Drained d = feed.submit(in, stack.layers(), allowNonFinite, "complex under test").drain(HeapComplex.into(out));
    assertEquals(in.pairBytes(), d.bytes());
    assertTrue(d.gpuNanos() > 0, "the complex's kernels took GPU time");
    return out;
  }

  @Test
  void theFeedGivesTheBackendsBitsThroughBlocksSmallerThanAComplex() {
    assumeGpu();
    long mark = MemoryLeakCheck.mark();
    try (GpuTriMul gpu = new GpuTriMul()) {
      try (PinnedTransfers transfers = SMALL.openTransfers(gpu.device());
          StackFeed feed = new StackFeed(gpu.device(), gpu.layerCache(), transfers, SMALL, 0)) {
        // {B, N, D, H}: the last two with a hidden width of their own (the workspace holds H channels)
        for (int[] c : new int[][] {{1, 100, 32, 32}, {2, 130, 64, 64}, {1, 257, 128, 128}, {1, 8, 256, 256},
            {1, 100, 64, 128}, {2, 130, 256, 128}}) {
          LayerStack stack = LayerStack.randomAlternating(3, c[2], c[3], 11 + c[1], true);
          PairTensor x = PairTensor.random(c[0], c[1], c[2], c[1], c[1] % 2 == 0 ? 0.2 : 0);
          HeapComplex in = HeapComplex.of(x);
          byte[] want = HeapComplex.of(gpu.forward(x, stack)).pair();
          assertArrayEquals(want, run(feed, in, stack, false), "feed vs GpuTriMul.forward at " + x.shapeString());
        }
        assertEquals(4L << 20, feed.stats().pinnedBytes(), "the pool stays at its size");
        assertTrue(gpu.cachedLayers() > 0, "the feed's layers are the backend's");
      }
    }
    assertTrue(MemoryLeakCheck.openHandlesSince(mark).isEmpty(), MemoryLeakCheck.report());
  }

  @Test
  void aComplexInThePinnedCacheIsUploadedWhereItLiesWithTheSameBits() {
    assumeGpu();
    long mark = MemoryLeakCheck.mark();
    try (GpuTriMul gpu = new GpuTriMul()) {
      try (PinnedTransfers transfers = SMALL.openTransfers(gpu.device());
          StackFeed feed = new StackFeed(gpu.device(), gpu.layerCache(), transfers, SMALL, 0)) {
        long inPlace = 0;
        List<CachedComplex> cached = new ArrayList<>();
        for (int[] c : new int[][] {{1, 100, 32}, {2, 130, 64}, {1, 257, 128}}) {
          LayerStack stack = LayerStack.randomAlternating(2, c[2], 5 + c[1], true);
          PairTensor x = PairTensor.random(c[0], c[1], c[2], c[1], 0.2);
          HeapComplex heap = HeapComplex.of(x);
          CachedComplex in = CachedComplex.in(feed.cache(), heap);
          cached.add(in);
          FeedTicket t = feed.submit(in, stack.layers(), false, "a cached complex");
          assertTrue(t.uploadedInPlace(), "uploaded from the cache at " + x.shapeString());
          byte[] out = new byte[(int) heap.pairBytes()];
          t.drain(HeapComplex.into(out));
          inPlace += heap.pairBytes();
          assertArrayEquals(run(feed, heap, stack, false), out, "cached vs copied through the pool at "
              + x.shapeString());
        }
        assertEquals(inPlace, feed.stats().bytesInPlace(), "every cached complex skipped the host copy");
        assertTrue(feed.stats().cachedBytes() >= inPlace, "the spans are held while reachable");
        // a span that only holds part of the values (or none): copied through the pool as before
        HeapComplex other = HeapComplex.of(PairTensor.random(1, 64, 32, 3, 0));
        FeedTicket t = feed.submit(other, LayerStack.randomAlternating(1, 32, 2, true).layers(), false, "heap");
        assertTrue(!t.uploadedInPlace(), "a heap complex is copied");
        t.drain(HeapComplex.into(new byte[(int) other.pairBytes()]));
        cached.clear();
      }
    }
    assertTrue(MemoryLeakCheck.openHandlesSince(mark).isEmpty(), "the cache's spans are freed at close: "
        + MemoryLeakCheck.report());
  }

  @Test
  void nanAndInfAreFoundOnTheDeviceAndNamedBeforeAnyOutput() {
    assumeGpu();
    try (GpuTriMul gpu = new GpuTriMul(); PinnedTransfers transfers = SMALL.openTransfers(gpu.device());
        StackFeed feed = new StackFeed(gpu.device(), gpu.layerCache(), transfers, SMALL, 0)) {
      LayerStack stack = LayerStack.randomAlternating(2, 32, 3, false);
      PairTensor x = PairTensor.random(2, 70, 32, 9, 0);
      x.row(1, 5)[3 * 32 + 7] = (short) 0x7FC0;  // NaN at (1, 5, 3, 7)
      x.row(1, 60)[0] = (short) 0xFF80;          // -Inf later
      HeapComplex in = HeapComplex.of(x);
      byte[] out = new byte[(int) in.pairBytes()];
      NonFiniteInputException e = assertThrows(NonFiniteInputException.class,
          () -> feed.submit(in, stack.layers(), false, "the pair tensor of complex 'n'").drain(HeapComplex.into(out)));
      assertEquals(2, e.count());
      assertArrayEquals(new int[] {1, 5, 3, 7}, e.first());
      assertTrue(e.getMessage().contains("complex 'n'"), e.getMessage());
      for (byte v : out) {
        assertEquals(0, v, "nothing handed over");
      }
      // allowed: the values go through, and the feed (slots, pool) is still usable
      run(feed, in, stack, true);
      PairTensor ok = PairTensor.random(1, 64, 32, 2, 0);
      assertArrayEquals(HeapComplex.of(gpu.forward(ok, stack)).pair(), run(feed, HeapComplex.of(ok), stack, false));
    }
  }

  /**
   * 200 complexes of mixed N, from three threads at once with three slots (so threads wait for
   * slots and blocks): each equals its backend forward, the pool never grows, device memory stays
   * at the slots' and workspace's bound, and everything is freed at close.
   */
  @Test
  void twoHundredMixedComplexesFromThreeThreadsStayBoundedAndExact() throws Exception {
    assumeGpu();
    long mark = MemoryLeakCheck.mark();
    int[] ns = {24, 200, 96, 129, 7, 160};
    int d = 64;
    LayerStack stack = LayerStack.randomAlternating(2, d, 5, true);
    try (GpuTriMul gpu = new GpuTriMul()) {
      List<HeapComplex> ins = new ArrayList<>();
      List<byte[]> want = new ArrayList<>();
      for (int k = 0; k < ns.length; k++) {
        PairTensor x = PairTensor.random(1, ns[k], d, 100 + k, k % 2 == 0 ? 0.1 : 0);
        ins.add(HeapComplex.of(x));
        want.add(HeapComplex.of(gpu.forward(x, stack)).pair());
      }
      try (PinnedTransfers transfers = SMALL.openTransfers(gpu.device());
          StackFeed feed = new StackFeed(gpu.device(), gpu.layerCache(), transfers, SMALL, 0)) {
        long freeBefore = gpu.device().memInfo().free();
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
          List<Future<String>> done = new ArrayList<>();
          for (int t = 0; t < 3; t++) {
            final int thread = t;
            done.add(pool.submit(() -> {
              // each thread keeps two complexes in the feed where a slot is free, as a task does
              FeedTicket held = null;
              int heldK = -1;
              for (int c = thread; c < 200; c += 3) {
                int k = c % ns.length;
                FeedTicket t2 = feed.trySubmit(ins.get(k), stack.layers(), false, "complex " + c);
                if (t2 == null) {
                  if (held != null) {
                    check(feed, held, heldK, ins, want);
                    held = null;
                  }
                  t2 = feed.submit(ins.get(k), stack.layers(), false, "complex " + c);
                }
                if (held != null) {
                  check(feed, held, heldK, ins, want);
                }
                held = t2;
                heldK = k;
              }
              if (held != null) {
                check(feed, held, heldK, ins, want);
              }
              return "ok";
            }));
          }
          for (Future<String> f : done) {
            assertEquals("ok", f.get());
          }
        } finally {
          pool.shutdownNow();
        }
        StackFeed.Stats s = feed.stats();
        assertEquals(200, s.complexes());
        // the feed is idle: its last burst was summarised from the complexes' events (GPU clock)
        FeedTimeline.Summary burst = feed.lastBurst();
        assertNotNull(burst, "a burst ended and was summarised");
        assertTrue(burst.complexes() >= 1 && burst.complexes() <= 200, burst.describe());
        assertTrue(burst.kernelsMs() > 0 && burst.uploadsMs() > 0 && burst.downloadsMs() > 0, burst.describe());
        assertEquals(burst.wallMs(), burst.kernelsMs() + burst.copiesAloneMs() + burst.idleMs(),
            1e-3 * burst.wallMs(), "kernels, copies alone and nothing running tile the wall: " + burst.describe());
        assertEquals(4L << 20, s.pinnedBytes(), "pinned memory is the pool's, fixed");
        assertEquals(4, feed.transfers().pool().available(), "every block back in the pool");
        long slotBound = 3 * (2L * 200 * 200 * d + 200L * 200);
        assertTrue(s.deviceBytes() <= slotBound + org.foldcp.ops.gpu.NativeTriMul.workspaceSize(1, 200, d),
            "device memory bounded by 3 slots of the largest complex and one workspace: " + s.deviceBytes());
        long freeAfter = gpu.device().memInfo().free();
        assertTrue(freeBefore - freeAfter <= s.deviceBytes() + (64L << 20),
            "the device lost no more than the feed holds: " + (freeBefore - freeAfter) + " vs " + s.deviceBytes());
      }
    }
    assertTrue(MemoryLeakCheck.openHandlesSince(mark).isEmpty(), MemoryLeakCheck.report());
  }

  /**
   * Drains {@code t} and compares: even complexes into a pinned run where one is free (the download
   * lands in it, at an offset as an output row's pair field has), the others block by block.
   */
  private static void check(StackFeed feed, FeedTicket t, int k, List<HeapComplex> ins, List<byte[]> want) {
    long bytes = ins.get(k).pairBytes();
    byte[] out = new byte[(int) bytes];
    PinnedPool.Run run = k % 2 == 0 ? feed.transfers().pool().tryAcquireRun(bytes + 24) : null;
    if (run != null) {
      try {
        t.drainInto(run, 24);
        HostCopy.fromAddress(run.address() + 24, out, 0, bytes);
      } finally {
        feed.transfers().pool().release(run);
      }
    } else {
      t.drain(HeapComplex.into(out));
    }
    assertArrayEquals(want.get(k), out, "complex of N = " + ins.get(k).n() + (run != null ? ", into a run" : ""));
  }

  @Test
  void aComplexWhoseSlotsCannotFitIsLeftToTheBackendAndAnAbandonedTicketFreesItsSlot() {
    assumeGpu();
    try (GpuTriMul gpu = new GpuTriMul(); PinnedTransfers transfers = SMALL.openTransfers(gpu.device());
        StackFeed feed = new StackFeed(gpu.device(), gpu.layerCache(), transfers, SMALL, 1L << 30)) {
      assertTrue(feed.fits(1, 256, 128, 128), "3 x 16 MiB and a workspace fit in 1 GiB");
      assertTrue(!feed.fits(1, 4096, 128, 128), "3 x 4 GiB do not fit in a 1 GiB budget");
      assertTrue(!feed.fits(1, 1024, 32, 256), "3 x 64 MiB fit in 1 GiB, but not beside a, b and z of H = 256 channels");
      LayerStack stack = LayerStack.randomAlternating(1, 32, 1, false);
      HeapComplex in = HeapComplex.of(PairTensor.random(1, 16, 32, 1, 0));
      List<FeedTicket> held = new ArrayList<>();
      for (int k = 0; k < 3; k++) {
        FeedTicket t = feed.trySubmit(in, stack.layers(), false, "held " + k);
        assertNotNull(t, "slot " + k + " is free");
        held.add(t);
      }
      assertNull(feed.trySubmit(in, stack.layers(), false, "one too many"), "no slot free: null at once");
      held.get(0).abandon();
      held.get(0).abandon(); // once only
      assertThrows(IllegalStateException.class, () -> held.get(0).drain(HeapComplex.into(new byte[2 * 16 * 16 * 32])));
      FeedTicket again = feed.trySubmit(in, stack.layers(), false, "after abandon");
      assertNotNull(again, "the abandoned slot is free again");
      again.abandon();
      held.get(1).abandon();
      held.get(2).abandon();
    }
  }
}
