package org.foldcp.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.HostCopy;
import org.foldcp.ops.gpu.PinnedHostBuffer;

/**
 * The floor of the feed's host copy, measured in Java: T threads each copy their own Java heap
 * array into their own pinned buffer, as the feed copies a Spark row's bytes into its pinned pool
 * (same {@link HostCopy#copy}, same 16 MiB blocks), pages touched first, best of 5 rounds. Beside
 * bench/host_memcpy.c (C memcpy between malloc'd buffers) it tells whether a slow feed copy is the
 * JVM's heap memory, the pinned memory, or neither (then the cost is elsewhere: threads, contention).
 *
 * <p>Usage: {@code HostCopyFloor [MiB per thread, default 256]}; needs a GPU (the pinned memory).
 * Prints one line per thread count and kind: heap -> pinned, heap -> malloc, malloc -> pinned.
 */
public final class HostCopyFloor {
  private static final long BLOCK = 16L << 20;
  private static final int[] THREADS = {1, 2, 4, 8, 12, 16};

  private HostCopyFloor() {}

  public static void main(String[] args) throws Exception {
    long bytes = (args.length > 0 ? Long.parseLong(args[0]) : 256) << 20;
    int maxThreads = THREADS[THREADS.length - 1];
    try (GpuDevice device = GpuDevice.open(0)) {
      List<byte[]> heap = new ArrayList<>();
      List<PinnedHostBuffer> pinned = new ArrayList<>();
      long[] raw = new long[maxThreads];
      try {
        for (int k = 0; k < maxThreads; k++) {
          byte[] a = new byte[(int) bytes];
          java.util.Arrays.fill(a, (byte) (k + 1));
          heap.add(a);
          PinnedHostBuffer p = PinnedHostBuffer.allocate(device, bytes, "host copy floor");
          pinned.add(p);
          raw[k] = HostCopy.allocateRaw(bytes);
          if (raw[k] == 0) {
            throw new OutOfMemoryError("malloc of " + bytes + " bytes for the host copy floor");
          }
          HostCopy.copy(a, HostCopy.BYTE_ARRAY_OFFSET, null, p.address(), bytes);
          HostCopy.copy(a, HostCopy.BYTE_ARRAY_OFFSET, null, raw[k], bytes);
        }
        System.out.printf("host copy floor (Java, HostCopy.copy in %d MiB blocks: %s; %d MiB per thread, %d cores)%n",
            BLOCK >> 20, HostCopy.describe(), bytes >> 20, Runtime.getRuntime().availableProcessors());
        for (int t : THREADS) {
          double hp = rate(t, bytes, k -> copy(heap.get(k), HostCopy.BYTE_ARRAY_OFFSET, null, pinned.get(k).address(), bytes));
          double hm = rate(t, bytes, k -> copy(heap.get(k), HostCopy.BYTE_ARRAY_OFFSET, null, raw[k], bytes));
          double mp = rate(t, bytes, k -> copy(null, raw[k], null, pinned.get(k).address(), bytes));
          System.out.printf("host copy: %2d threads  heap->pinned %6.1f GB/s  heap->malloc %6.1f GB/s  malloc->pinned %6.1f GB/s%n",
              t, hp, hm, mp);
        }
      } finally {
        for (PinnedHostBuffer p : pinned) {
          p.close();
        }
        for (long r : raw) {
          if (r != 0) {
            HostCopy.freeRaw(r);
          }
        }
      }
    }
  }

  private interface Copier {
    void copy(int thread);
  }

  private static void copy(Object srcBase, long srcOffset, Object dstBase, long dst, long bytes) {
    for (long at = 0; at < bytes; at += BLOCK) {
      HostCopy.copy(srcBase, srcOffset + at, dstBase, dst + at, Math.min(BLOCK, bytes - at));
    }
  }

  /** GB/s copied by {@code threads} threads at once, the best of 5 rounds. */
  private static double rate(int threads, long bytes, Copier copier) throws Exception {
    double best = Double.MAX_VALUE;
    for (int round = 0; round < 5; round++) {
      CyclicBarrier start = new CyclicBarrier(threads + 1);
      CyclicBarrier end = new CyclicBarrier(threads + 1);
      Thread[] ts = new Thread[threads];
      for (int k = 0; k < threads; k++) {
        int id = k;
        ts[k] = new Thread(() -> {
          try {
            start.await();
            copier.copy(id);
            end.await();
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
        ts[k].start();
      }
      start.await();
      long t0 = System.nanoTime();
      end.await();
      best = Math.min(best, (System.nanoTime() - t0) * 1e-9);
      for (Thread th : ts) {
        th.join();
      }
    }
    return threads * (double) bytes / best / 1e9;
  }
}
