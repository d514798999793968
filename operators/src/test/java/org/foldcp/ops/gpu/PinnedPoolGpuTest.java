package org.foldcp.ops.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The pinned pool's runs: adjacent free blocks only, a reserve kept for streaming, given back whole. Needs an sm_90 GPU. */
@Tag("gpu")
class PinnedPoolGpuTest {
  @Test
  void runsAreAdjacentBlocksTakenOnlyWhenFreeAndGivenBackWhole() {
    String why = GpuAvailability.availability();
    Assumptions.assumeTrue(why == null, why);
    long mark = MemoryLeakCheck.mark();
    long mib = 1L << 20;
    try (GpuTriMul gpu = new GpuTriMul()) {
      try (PinnedPool pool = new PinnedPool(gpu.device(), 8, mib)) { // a reserve of 2 blocks for streaming
        PinnedPool.Block single = pool.acquire(); // the first block comes back first: index 0
        PinnedPool.Run a = pool.tryAcquireRun(2 * mib + 1); // 3 blocks: the lowest free span is 1..3
        assertNotNull(a);
        assertEquals(3 * mib, a.bytes());
        assertEquals(single.address() + mib, a.address(), "the span right after the held block");
        assertNull(pool.tryAcquireRun(3 * mib), "4 free: a span of 3 would leave less than the reserve");
        assertNull(pool.tryAcquireRun(9 * mib), "larger than the pool");
        PinnedPool.Run b = pool.tryAcquireRun(2 * mib);
        assertNotNull(b);
        assertEquals(2, pool.available());
        pool.release(single);
        pool.release(a);
        pool.release(a); // idempotent
        assertEquals(6, pool.available());
        assertThrows(IllegalStateException.class, a::address, "a released run is not readable through its handle");
        PinnedPool.Run c = pool.tryAcquireRun(4 * mib);
        assertNotNull(c, "blocks 0..3 free again form one span");
        assertEquals(single.address(), c.address());
        pool.release(b);
        pool.release(c);
        assertEquals(8, pool.available());
      }
      try (PinnedPool pool = new PinnedPool(gpu.device(), 16, mib)) { // a reserve of 4
        List<PinnedPool.Block> all = new ArrayList<>();
        for (int k = 0; k < 16; k++) {
          all.add(pool.acquire());
        }
        for (int k = 1; k < 16; k += 2) {
          pool.release(all.get(k)); // 8 free, no two adjacent
        }
        assertNull(pool.tryAcquireRun(2 * mib), "no two free blocks are adjacent, and a run never waits");
        pool.release(all.get(2));
        PinnedPool.Run r = pool.tryAcquireRun(3 * mib);
        assertNotNull(r, "blocks 1, 2, 3 are free together now");
        assertEquals(all.get(1).address(), r.address());
        pool.release(r);
        for (int k = 0; k < 16; k += 2) {
          if (k != 2) {
            pool.release(all.get(k));
          }
        }
        assertEquals(16, pool.available());
      }
    }
    assertTrue(MemoryLeakCheck.openHandlesSince(mark).isEmpty(), MemoryLeakCheck.report());
  }
}
