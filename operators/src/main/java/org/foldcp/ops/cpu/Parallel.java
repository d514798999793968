package org.foldcp.ops.cpu;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;

/**
 * A fixed-size worker pool for the CPU stages. Its own pool, not the common one, so the thread
 * count is what the caller asked for (in Spark: the task's cores) and closing it frees them.
 */
public final class Parallel implements AutoCloseable {
  private final ForkJoinPool pool;
  private final int threads;

  public Parallel(int threads) {
    if (threads < 1) {
      throw new IllegalArgumentException("threads = " + threads + ": must be >= 1");
    }
    this.threads = threads;
    this.pool = threads == 1 ? null : new ForkJoinPool(threads);
  }

  public int threads() {
    return threads;
  }

  /** Runs body(0..n-1), each index once, on the pool; rethrows the first failure. */
  public void forEach(int n, IntConsumer body) {
    if (pool == null || n <= 1) {
      for (int q = 0; q < n; q++) {
        body.accept(q);
      }
      return;
    }
    try {
      pool.submit(() -> IntStream.range(0, n).parallel().forEach(body)).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while running CPU TriMul stages", e);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof RuntimeException) {
        throw (RuntimeException) c;
      }
      if (c instanceof Error) {
        throw (Error) c;
      }
      throw new IllegalStateException(c);
    }
  }

  @Override
  public void close() {
    if (pool != null) {
      pool.shutdown();
    }
  }
}
