package org.foldcp.spark.udf;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.config.FoldCpConf;

/**
 * Decoded layer stacks kept by an executor JVM for reuse by later rows and tasks, least recently
 * used first out once more than {@link #capacity()} are held.
 *
 * <p>Tasks run on parallel threads and typically all ask for the same weights at the start of a
 * stage, so a miss is single-flight: the first caller reads the file while later callers for the
 * same key wait for that read instead of starting their own. The file is read outside the lock,
 * so a slow read of one key does not hold up hits on others. A failed read is not remembered:
 * the next call tries again (the caller may have fixed the file or the prefix).
 *
 * <p>Keys are cheap (a stat: {@link WeightsKey}); what a read produced is identified by its
 * content: a stack whose layers have the specs and weight digests of a stack already held (the
 * same file under another path, or a file touched but not changed) is not kept twice, the held
 * one is returned, so the GPU's layer cache, keyed by digest too, sees the same layers.
 */
public final class WeightsCache {
  private static final WeightsCache SHARED =
      new WeightsCache(FoldCpConf.WEIGHTS_CACHE_ENTRIES.parseDefault(), WeightsKey::load);

  private final Function<WeightsKey, LayerStack> loader;
  private final Object lock = new Object();
  /** Access-ordered: iteration starts at the least recently used entry. Guarded by lock. */
  private final LinkedHashMap<WeightsKey, CompletableFuture<LayerStack>> entries =
      new LinkedHashMap<>(16, 0.75f, true);
  private int capacity; // guarded by lock
  private final AtomicLong loads = new AtomicLong();

  WeightsCache(int capacity, Function<WeightsKey, LayerStack> loader) {
    this.loader = Objects.requireNonNull(loader, "loader");
    setCapacity(capacity);
  }

  /** The cache of this JVM (one executor, or the driver in local mode). */
  public static WeightsCache shared() {
    return SHARED;
  }

  /**
   * The stack for {@code key}, read from its file on a miss. Concurrent callers of one key share
   * one read; its failure is rethrown to each of them.
   */
  public LayerStack get(WeightsKey key) {
    CompletableFuture<LayerStack> pending;
    boolean reader = false;
    synchronized (lock) {
      if (capacity == 0) {
        pending = null;
      } else {
        pending = entries.get(key);
        if (pending == null) {
          pending = new CompletableFuture<>();
          entries.put(key, pending);
          evictBeyond(capacity);
          reader = true;
        }
      }
    }
    if (pending == null) {
      return read(key);
    }
    if (reader) {
      try {
        pending.complete(heldOr(read(key)));
      } catch (RuntimeException | Error e) {
        synchronized (lock) {
          entries.remove(key, pending);
        }
        pending.completeExceptionally(e);
        throw e;
      }
    }
    return await(pending);
  }

  private LayerStack read(WeightsKey key) {
    loads.incrementAndGet();
    return loader.apply(key);
  }

  /** The stack held already with the same layers as {@code read} (specs and weight digests), else {@code read}. */
  private LayerStack heldOr(LayerStack read) {
    synchronized (lock) {
      for (CompletableFuture<LayerStack> entry : entries.values()) {
        LayerStack held = entry.isDone() && !entry.isCompletedExceptionally() ? entry.join() : null;
        if (held != null && sameLayers(held, read)) {
          return held;
        }
      }
    }
    return read;
  }

  private static boolean sameLayers(LayerStack a, LayerStack b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (int l = 0; l < a.size(); l++) {
      if (!a.get(l).identity().equals(b.get(l).identity())) {
        return false;
      }
    }
    return true;
  }

  private static LayerStack await(CompletableFuture<LayerStack> pending) {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return pending.get();
        } catch (InterruptedException e) {
          // Spark interrupts a task it kills; the read in progress belongs to another task, so
          // keep waiting for it and restore the flag for this task's own next check.
          interrupted = true;
        } catch (ExecutionException e) {
          throw rethrowable(e.getCause());
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private static RuntimeException rethrowable(Throwable cause) {
    Throwable c = cause instanceof CompletionException && cause.getCause() != null ? cause.getCause() : cause;
    if (c instanceof Error) {
      throw (Error) c;
    }
    if (c instanceof RuntimeException) {
      // The reader's own exception: its message is the one to show (it names the key or file).
      return (RuntimeException) c;
    }
    return new IllegalStateException("reading layer weights failed", c);
  }

  /**
   * Sets how many stacks are kept, dropping the least recently used ones beyond it; 0 turns the
   * cache off (every call reads the file).
   */
  public void setCapacity(int entriesToKeep) {
    InvalidInputException.require(entriesToKeep >= 0, "weights cache entries", entriesToKeep,
        "must be an integer >= 0 (0 disables the cache)");
    synchronized (lock) {
      capacity = entriesToKeep;
      evictBeyond(entriesToKeep);
    }
  }

  private void evictBeyond(int max) {
    Iterator<Map.Entry<WeightsKey, CompletableFuture<LayerStack>>> it = entries.entrySet().iterator();
    while (entries.size() > max && it.hasNext()) {
      // An evicted read still in flight completes for the callers already waiting on it.
      it.next();
      it.remove();
    }
  }

  public int capacity() {
    synchronized (lock) {
      return capacity;
    }
  }

  /** Stacks held now, including reads in flight. */
  public int size() {
    synchronized (lock) {
      return entries.size();
    }
  }

  /** Whether a stack for {@code key} is held (or being read); does not count as a use. */
  public boolean contains(WeightsKey key) {
    synchronized (lock) {
      return entries.containsKey(key);
    }
  }

  /** How many times this cache has read weights from a file (misses, including failed reads). */
  public long loads() {
    return loads.get();
  }
}
