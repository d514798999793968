package org.foldcp.spark.udf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.junit.jupiter.api.Test;

class WeightsCacheTest {

  private static WeightsKey key(String name) {
    return new WeightsKey(WeightsFile.unopenable("file:/weights/" + name, 100, 1),
        List.of(new LayerRef("p.", Direction.OUTGOING, true)));
  }

  /** A loader that builds a tiny stack per key and counts its calls per key. */
  private static final class CountingLoader implements Function<WeightsKey, LayerStack> {
    final ConcurrentHashMap<WeightsKey, AtomicInteger> calls = new ConcurrentHashMap<>();
    volatile long delayMillis;

    @Override
    public LayerStack apply(WeightsKey k) {
      calls.computeIfAbsent(k, x -> new AtomicInteger()).incrementAndGet();
      if (delayMillis > 0) {
        try {
          Thread.sleep(delayMillis);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return LayerStack.randomAlternating(1, 2, k.hashCode(), false);
    }

    int calls(WeightsKey k) {
      AtomicInteger n = calls.get(k);
      return n == null ? 0 : n.get();
    }
  }

  @Test
  void aKeyIsReadOnceAndThenServedFromMemory() {
    CountingLoader loader = new CountingLoader();
    WeightsCache cache = new WeightsCache(4, loader);
    LayerStack first = cache.get(key("a"));
    assertSame(first, cache.get(key("a")));
    assertSame(first, cache.get(key("a")));
    assertEquals(1, loader.calls(key("a")));
    assertEquals(1, cache.loads());
    assertTrue(cache.contains(key("a")));
  }

  /** Two keys (two paths, or one file touched) whose files hold the same layers: read twice, held once. */
  @Test
  void keysWhoseLayersHaveTheSameDigestsShareOneStack() {
    WeightsCache cache = new WeightsCache(4, k -> LayerStack.randomAlternating(2, 4, 9, false)); // same values
    LayerStack first = cache.get(key("copy-1"));
    LayerStack second = cache.get(key("copy-2"));
    assertSame(first, second, "the stack already held, not a second copy of it");
    assertEquals(2, cache.loads(), "each key is read: a stat cannot tell the contents apart");

    WeightsCache other = new WeightsCache(4, k -> LayerStack.randomAlternating(2, 4, k.location().hashCode(), false));
    assertNotSame(other.get(key("model-a")), other.get(key("model-b")), "different weights stay apart");
  }

  @Test
  void concurrentMissesOfOneKeyShareOneRead() throws Exception {
    CountingLoader loader = new CountingLoader();
    loader.delayMillis = 300; // long enough that every thread arrives while the first read runs
    WeightsCache cache = new WeightsCache(4, loader);
    int threads = 8;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<LayerStack>> results = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        results.add(pool.submit(() -> {
          go.await();
          return cache.get(key("shared"));
        }));
      }
      go.countDown();
      LayerStack first = results.get(0).get(10, TimeUnit.SECONDS);
      for (Future<LayerStack> r : results) {
        assertSame(first, r.get(10, TimeUnit.SECONDS));
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(1, loader.calls(key("shared")));
    assertEquals(1, cache.loads());
  }

  @Test
  void theLeastRecentlyUsedKeyGoesFirst() {
    CountingLoader loader = new CountingLoader();
    WeightsCache cache = new WeightsCache(2, loader);
    cache.get(key("a"));
    cache.get(key("b"));
    cache.get(key("a")); // a is now more recent than b
    cache.get(key("c")); // evicts b
    assertEquals(2, cache.size());
    assertTrue(cache.contains(key("a")));
    assertFalse(cache.contains(key("b")));
    assertTrue(cache.contains(key("c")));
    cache.get(key("a"));
    assertEquals(1, loader.calls(key("a")));
    cache.get(key("b"));
    assertEquals(2, loader.calls(key("b")));
  }

  @Test
  void shrinkingDropsTheOldestAndZeroTurnsCachingOff() {
    CountingLoader loader = new CountingLoader();
    WeightsCache cache = new WeightsCache(3, loader);
    cache.get(key("a"));
    cache.get(key("b"));
    cache.get(key("c"));
    cache.setCapacity(1);
    assertEquals(1, cache.size());
    assertTrue(cache.contains(key("c")));

    cache.setCapacity(0);
    assertEquals(0, cache.size());
    LayerStack x = cache.get(key("d"));
    LayerStack y = cache.get(key("d"));
    assertNotSame(x, y);
    assertEquals(2, loader.calls(key("d")));
    assertEquals(0, cache.size());

    InvalidInputException e = assertThrows(InvalidInputException.class, () -> cache.setCapacity(-1));
    assertEquals("weights cache entries = -1: must be an integer >= 0 (0 disables the cache)", e.getMessage());
  }

  @Test
  void aFailedReadIsReportedToEveryWaiterAndNotRemembered() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    WeightsCache cache = new WeightsCache(4, k -> {
      if (calls.incrementAndGet() == 1) {
        try {
          Thread.sleep(300);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        throw InvalidInputException.of("key prefix", "'p.'", "no tensor has a name starting with it");
      }
      return LayerStack.randomAlternating(1, 2, 7, false);
    });
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<LayerStack>> results = new ArrayList<>();
      for (int t = 0; t < 3; t++) {
        results.add(pool.submit(() -> {
          go.await();
          return cache.get(key("bad"));
        }));
      }
      go.countDown();
      for (Future<LayerStack> r : results) {
        Throwable e = assertThrows(java.util.concurrent.ExecutionException.class, () -> r.get(10, TimeUnit.SECONDS))
            .getCause();
        assertTrue(e instanceof InvalidInputException, String.valueOf(e));
        assertEquals("key prefix = 'p.': no tensor has a name starting with it", e.getMessage());
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(1, calls.get());
    assertFalse(cache.contains(key("bad")));
    cache.get(key("bad")); // fixed meanwhile: read again, and succeeds
    assertEquals(2, calls.get());
    assertTrue(cache.contains(key("bad")));
  }
}
