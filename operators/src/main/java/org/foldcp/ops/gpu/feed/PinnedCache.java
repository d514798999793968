package org.foldcp.ops.gpu.feed;

import java.lang.ref.Cleaner;
import java.lang.ref.WeakReference;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.foldcp.ops.InvalidInputException;

/**
 * Page-locked host memory in which cached data lives, so that the GPU's DMA engines read it where
 * it is: a complex cached here goes to the device with no host copy at all (the feed looks its
 * address up with {@link #find} and uploads straight from the span). Bounded by a byte capacity:
 * {@link #tryAllocate} answers null when a span would not fit, and the caller keeps its data on
 * the Java heap instead (the feed then copies it through its pool, as before).
 *
 * <p>A span is freed when nothing references it any more (a {@link Cleaner}: Spark drops a cached
 * block by dropping its objects, with no call back), or at {@link #close}, which frees every span
 * left: the memory belongs to the executor's CUDA context, which is destroyed right after, so
 * cached rows die with the executor's GPU. When the capacity is reached the cache asks the JVM
 * for a collection once (at most once a second) and tries again, as the JDK does before it refuses
 * a direct buffer: spans of a cache that was dropped but not yet collected come back that way.
 */
public final class PinnedCache implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create(r -> {
    Thread t = new Thread(r, "fold-cp pinned cache cleaner");
    t.setDaemon(true);
    return t;
  });
  /** How a span's page-locked buffer is described (MemoryLeakCheck), before the caller's purpose. */
  public static final String SPAN = "pinned cache span";
  private static final long GC_RETRY_MILLIS = 1000;
  private static final long GC_WAIT_MILLIS = 100;

  /** Where spans come from: page-locked memory of the executor's GPU, or plain memory in tests. */
  public interface HostMemory {
    /** {@code bytes} of page-locked memory; {@code free} gives them back (called once). */
    Allocation allocate(long bytes, String purpose);
  }

  /** One allocation: its first byte, and how to free it. */
  public record Allocation(long address, AutoCloseable free) {}

  /** One span of the cache: its bytes stay valid as long as the span is reachable and the cache open. */
  public static final class Span {
    private final long address;
    private final long bytes;

    private Span(long address, long bytes) {
      this.address = address;
      this.bytes = bytes;
    }

    public long address() {
      return address;
    }

    public long bytes() {
      return bytes;
    }

    /** Whether [address, address + len) lies inside this span. */
    boolean holds(long at, long len) {
      return len >= 0 && at >= address && at - address <= bytes - len;
    }
  }

  /** Frees one span once, from the cleaner or from close (it must not reference the span). */
  private static final class Release implements Runnable {
    private final PinnedCache cache;
    private final long address;
    private final long bytes;
    private final AutoCloseable free;
    private final AtomicBoolean done = new AtomicBoolean();
    private volatile Cleaner.Cleanable cleanable;
    /** The span this frees, weakly: {@link #find} hands out the span itself, which keeps it alive. */
    private volatile WeakReference<Span> span;

    Release(PinnedCache cache, long address, long bytes, AutoCloseable free) {
      this.cache = cache;
      this.address = address;
      this.bytes = bytes;
      this.free = free;
    }

    @Override
    public void run() {
      if (!done.compareAndSet(false, true)) {
        return;
      }
      cache.spans.remove(address);
      try {
        free.close();
      } catch (Exception e) {
        cache.lastFreeFailure = e;
      } finally {
        cache.held.addAndGet(-bytes);
        cache.freed.incrementAndGet();
      }
    }
  }

  private final HostMemory memory;
  private final long capacity;
  private final String owner;
  /** Open spans by address, for {@link #find}; the values are the releases, not the spans. */
  private final ConcurrentSkipListMap<Long, Release> spans = new ConcurrentSkipListMap<>();
  private final AtomicLong held = new AtomicLong();
  private final AtomicLong made = new AtomicLong();
  private final AtomicLong freed = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();
  private final AtomicLong lastGcNanos = new AtomicLong(Long.MIN_VALUE / 2);
  private volatile Exception lastFreeFailure;
  private volatile boolean closed;

  /**
   * A cache of at most {@code capacity} bytes (0: none is ever allocated) from {@code memory}.
   *
   * @param owner names the cache in messages (e.g. "GPU 0")
   */
  public PinnedCache(HostMemory memory, long capacity, String owner) {
    InvalidInputException.require(capacity >= 0, "pinned cache bytes", capacity, "must be >= 0");
    this.memory = Objects.requireNonNull(memory, "memory");
    this.capacity = capacity;
    this.owner = Objects.requireNonNull(owner, "owner");
  }

  /** The byte capacity this cache was made with. */
  public long capacity() {
    return capacity;
  }

  /**
   * A span of {@code bytes}, or null when it would take the cache past its capacity (after one
   * collection of unreachable spans, at most once a second) or the cache is closed.
   */
  public Span tryAllocate(long bytes, String purpose) {
    InvalidInputException.require(bytes >= 1, "pinned cache span", bytes, "must be >= 1 byte");
    if (closed || bytes > capacity) {
      refused.incrementAndGet();
      return null;
    }
    if (!reserve(bytes) && !(collectUnreachable() && reserve(bytes))) {
      refused.incrementAndGet();
      return null;
    }
    Allocation a;
    try {
      a = memory.allocate(bytes, purpose);
    } catch (RuntimeException | Error e) {
      held.addAndGet(-bytes);
      throw e;
    }
    Release release = new Release(this, a.address(), bytes, a.free());
    Span span = new Span(a.address(), bytes);
    release.span = new WeakReference<>(span);
    release.cleanable = CLEANER.register(span, release);
    spans.put(a.address(), release);
    made.incrementAndGet();
    if (closed) { // close ran while this span was being made: it is not handed out
      release.cleanable.clean();
      return null;
    }
    return span;
  }

  private boolean reserve(long bytes) {
    while (true) {
      long h = held.get();
      if (h > capacity - bytes) {
        return false;
      }
      if (held.compareAndSet(h, h + bytes)) {
        return true;
      }
    }
  }

  /** Asks for a collection and waits briefly for the cleaner; false when one ran within the last second. */
  private boolean collectUnreachable() {
    long now = System.nanoTime();
    long last = lastGcNanos.get();
    if (now - last < GC_RETRY_MILLIS * 1_000_000L || !lastGcNanos.compareAndSet(last, now)) {
      return false;
    }
    long before = freed.get();
    System.gc();
    long deadline = now + GC_WAIT_MILLIS * 1_000_000L;
    while (freed.get() == before && System.nanoTime() < deadline) {
      Thread.onSpinWait();
      Thread.yield();
    }
    return true;
  }

  /**
   * The span that holds every byte of [address, address + len), or null: how the feed tells that a
   * complex's bytes can be uploaded where they lie. The span returned keeps them alive while held.
   */
  public Span find(long address, long len) {
    if (address == 0 || closed) {
      return null;
    }
    Map.Entry<Long, Release> e = spans.floorEntry(address);
    if (e == null) {
      return null;
    }
    Release r = e.getValue();
    Span s = r.span.get(); // null once unreachable: its memory may be freed any moment, so not handed out
    return s != null && s.holds(address, len) ? s : null;
  }

  /** Bytes held in spans now. */
  public long heldBytes() {
    return held.get();
  }

  /** Spans open now. */
  public int openSpans() {
    return spans.size();
  }

  /** What the cache has done: spans made, freed, allocations refused (full or closed). */
  public record Stats(long heldBytes, long capacity, long made, long freed, long refused) {}

  public Stats stats() {
    return new Stats(held.get(), capacity, made.get(), freed.get(), refused.get());
  }

  /**
   * Frees every span still open (their data must no longer be read: the executor's GPU is shutting
   * down) and refuses new ones. Idempotent.
   *
   * @throws IllegalStateException when a span could not be freed (the native message as cause)
   */
  @Override
  public void close() {
    closed = true;
    for (Release r : spans.values()) {
      r.cleanable.clean(); // runs the release once, here or never again
    }
    Exception e = lastFreeFailure;
    if (e != null) {
      lastFreeFailure = null;
      throw new IllegalStateException("freeing a span of the pinned cache of " + owner + " failed", e);
    }
  }

  @Override
  public String toString() {
    return "pinned cache of " + owner + " (" + held.get() + " of " + capacity + " bytes held)";
  }
}
