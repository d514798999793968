package org.foldcp.ops.gpu.feed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.HostCopy;
import org.junit.jupiter.api.Test;

/**
 * The pinned cache's bookkeeping over plain memory (the GPU's page-locked allocator is the only
 * part left to StackFeedGpuTest): the capacity holds, lookups find exactly the spans that hold a
 * range, unreachable spans are freed by the cleaner (and make room on a full cache), close frees
 * the rest, and every allocation is freed once.
 */
class PinnedCacheTest {
  /** Plain memory that remembers what is open, so the test sees every free. */
  private static final class Malloc implements PinnedCache.HostMemory {
    final Set<Long> open = ConcurrentHashMap.newKeySet();
    volatile int frees;

    @Override
    public PinnedCache.Allocation allocate(long bytes, String purpose) {
      long a = HostCopy.allocateRaw(bytes);
      assertTrue(a != 0, "malloc of " + bytes);
      open.add(a);
      return new PinnedCache.Allocation(a, () -> {
        assertTrue(open.remove(a), "freed once: " + a);
        frees++;
        HostCopy.freeRaw(a);
      });
    }
  }

  private static void eventually(BooleanSupplier done, String what) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "within 20 s: " + what);
      System.gc();
      Thread.sleep(20);
    }
  }

  @Test
  void theCapacityHoldsAndLookupsFindTheSpanThatHoldsARange() {
    Malloc m = new Malloc();
    try (PinnedCache c = new PinnedCache(m, 1000, "test")) {
      PinnedCache.Span a = c.tryAllocate(600, "a");
      assertNotNull(a);
      assertEquals(600, a.bytes());
      assertNull(c.tryAllocate(401, "b"), "600 + 401 > 1000");
      PinnedCache.Span b = c.tryAllocate(400, "b");
      assertNotNull(b, "600 + 400 = 1000 fits");
      assertNull(c.tryAllocate(1, "c"), "full");
      assertNull(c.tryAllocate(1001, "d"), "larger than the whole cache");
      assertEquals(1000, c.heldBytes());
      assertEquals(2, c.openSpans());
      assertEquals(3, c.stats().refused());

      assertSame(a, c.find(a.address(), 600), "the whole span");
      assertSame(a, c.find(a.address() + 100, 500), "a range inside it");
      assertNull(c.find(a.address() + 100, 501), "a range that runs past its end");
      assertNull(c.find(a.address() - 1, 2), "a range that starts before it (spans never overlap)");
      assertNull(c.find(0, 10), "no address");
      assertSame(b, c.find(b.address() + 399, 1), "the last byte of the other span");
      assertNull(c.find(b.address() + 400, 1), "the byte after it, when it is no span's");

      // bytes written through one span are there when read through the address it was found by
      HostCopy.copy(new byte[] {1, 2, 3}, HostCopy.BYTE_ARRAY_OFFSET, null, a.address() + 7, 3);
      byte[] back = new byte[3];
      HostCopy.copy(null, c.find(a.address() + 7, 3).address() + 7, back, HostCopy.BYTE_ARRAY_OFFSET, 3);
      assertEquals(2, back[1]);
    }
    assertEquals(0, m.open.size(), "close freed every span");
  }

  @Test
  void anUnreachableSpanIsFreedAndAFullCacheMakesRoomFromDroppedSpans() throws InterruptedException {
    Malloc m = new Malloc();
    try (PinnedCache c = new PinnedCache(m, 1 << 20, "test")) {
      List<PinnedCache.Span> held = new ArrayList<>();
      for (int k = 0; k < 4; k++) {
        held.add(c.tryAllocate(256 << 10, "row " + k));
      }
      assertNull(c.tryAllocate(1, "one more"), "full; the four spans are reachable, so no collection frees them");
      long kept = held.get(0).address();
      held.subList(1, 4).clear(); // a cache that Spark dropped: its batches become garbage
      eventually(() -> c.heldBytes() == 256 << 10, "the three dropped spans freed by the cleaner");
      assertEquals(3, m.frees);
      assertNotNull(c.find(kept, 1), "the reachable one is still there");

      held.clear();
      // a full cache whose spans are all garbage: the allocation itself asks for a collection
      PinnedCache.Span big = null;
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (big == null && System.nanoTime() < deadline) {
        big = c.tryAllocate(1 << 20, "the whole cache");
        Thread.sleep(big == null ? 50 : 0);
      }
      assertNotNull(big, "the dropped span made room");
      assertEquals(1 << 20, c.heldBytes());
    }
    assertEquals(0, m.open.size());
  }

  @Test
  void aClosedCacheRefusesAndFindsNothingAndBadSizesAreNamed() {
    Malloc m = new Malloc();
    PinnedCache c = new PinnedCache(m, 4096, "GPU 9");
    PinnedCache.Span s = c.tryAllocate(100, "x");
    c.close();
    assertEquals(0, c.heldBytes());
    assertNull(c.find(s.address(), 1));
    assertNull(c.tryAllocate(10, "after close"));
    c.close(); // idempotent
    assertEquals(1, m.frees, "freed once");

    InvalidInputException e = assertThrows(InvalidInputException.class, () -> new PinnedCache(m, -1, "x"));
    assertTrue(e.getMessage().contains("-1") && e.getMessage().contains(">= 0"), e.getMessage());
    try (PinnedCache none = new PinnedCache(m, 0, "no cache")) {
      assertNull(none.tryAllocate(1, "x"), "capacity 0: everything stays on the heap");
      e = assertThrows(InvalidInputException.class, () -> none.tryAllocate(0, "empty"));
      assertTrue(e.getMessage().contains("0") && e.getMessage().contains(">= 1"), e.getMessage());
    }
  }
}
