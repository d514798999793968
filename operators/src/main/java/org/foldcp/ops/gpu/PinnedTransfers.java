package org.foldcp.ops.gpu;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.foldcp.ops.InvalidInputException;

/**
 * Host bytes to and from one GPU through a fixed pinned pool: the executor's only path between
 * host memory and its device, used by the single-GPU backend ({@link GpuTriMul}), the cp = 1 feed
 * ({@code org.foldcp.ops.gpu.feed.StackFeed}) and the CP ranks alike.
 * Bytes move in blocks of the pool: an upload's blocks are filled by the copy threads (and by the
 * calling thread, which copies its own blocks from the last one back instead of waiting) and each
 * is queued for the DMA engine as soon as it is full; a download keeps a few blocks' copies in
 * flight and hands each block over as soon as it has arrived. So host copies run on several cores
 * and overlap the DMA, and whatever the size of the data, pinned memory stays the pool's.
 *
 * <p>The owner (the executor's GPU) closes it after every user has finished with it.
 */
public final class PinnedTransfers implements AutoCloseable {
  /** Download blocks queued ahead of the one being handed over. */
  static final int DOWNLOAD_LOOKAHEAD = 4;
  /** How long close waits for transfers in flight. */
  static final long CLOSE_WAIT_MILLIS = 30_000;

  /** A bulk copy of bytes [offset, offset + len) of some source into raw memory at {@code dst}; safe to run concurrently. */
  @FunctionalInterface
  public interface Source {
    void copy(long offset, long dst, long len);
  }

  /** Takes bytes [offset, offset + len) of a download from the raw address {@code src}; called in order, once per block. */
  @FunctionalInterface
  public interface Sink {
    void take(long offset, long src, long len);
  }

  /**
   * What the copies of one transfer took: time spent waiting (for free pinned blocks, or for blocks
   * to arrive), and time spent copying bytes on the host (summed over the threads that copied).
   */
  public record Copied(long waitNanos, long copyNanos) {
    public static final Copied NONE = new Copied(0, 0);

    public Copied plus(Copied o) {
      return new Copied(waitNanos + o.waitNanos, copyNanos + o.copyNanos);
    }
  }

  private final GpuDevice device;
  private final PinnedPool pool;
  private final ThreadPoolExecutor copiers;
  private final Object copyOrder = new Object(); // held while one upload queues its blocks
  private final int copyThreads;
  private final Object uses = new Object(); // guards inFlight and closing
  private int inFlight; // uploads and downloads begun and not yet ended
  private boolean closing;

  /**
   * A pool of {@code blocks} pinned blocks of {@code blockBytes} on {@code device} and
   * {@code copyThreads} copy threads.
   */
  public PinnedTransfers(GpuDevice device, int blocks, long blockBytes, int copyThreads) {
    this.device = Objects.requireNonNull(device, "device");
    InvalidInputException.require(copyThreads >= 1 && copyThreads <= 256, "copy threads", copyThreads,
        "must lie in [1, 256]"); // before the pool: nothing pinned is left behind by a refusal
    this.copyThreads = copyThreads;
    this.pool = new PinnedPool(device, blocks, blockBytes);
    this.copiers = new ThreadPoolExecutor(copyThreads, copyThreads, 0L, TimeUnit.MILLISECONDS,
        new LinkedBlockingQueue<>(), copyThreadFactory(device.ordinal()));
  }

  private static ThreadFactory copyThreadFactory(int ordinal) {
    AtomicLong made = new AtomicLong();
    return r -> {
      Thread t = new Thread(r, "fold-cp feed copy " + ordinal + "-" + made.getAndIncrement());
      t.setDaemon(true); // never keeps an executor's JVM alive; close() stops them first anyway
      return t;
    };
  }

  public PinnedPool pool() {
    return pool;
  }

  public int copyThreads() {
    return copyThreads;
  }

  public GpuDevice device() {
    return device;
  }

  /**
   * Copies {@code bytes} of {@code src} into pinned blocks and queues each block's upload into
   * {@code dst} (from byte 0) on {@code stream} as soon as it is full; returns once every block's
   * upload is queued (the source may be reused then; the stream reads the blocks later, and each
   * block comes back to the pool only after its copy). The calling thread copies blocks too, from
   * the last one back, instead of waiting for the copy threads to reach them. A failed block fails
   * the upload after the others have finished.
   */
  public Copied upload(Source src, long bytes, DeviceBuffer dst, GpuStream stream) {
    Pending p = uploadAsync(src, bytes, dst, stream); // ends at its await, below
    for (int k = p.blocks.size() - 1; k >= 0; k--) {
      p.blocks.get(k).run(); // returns at once where a copy thread has taken (or finished) the block
    }
    return p.await();
  }

  /**
   * As {@link #upload}, but the copy threads alone copy the blocks and this returns at once: the
   * caller goes on (say, to wait for kernels) while its bytes are copied and queued, and calls
   * {@link Pending#await} before it records anything on {@code stream} that must follow the upload,
   * and before the source changes. One upload's blocks queue together, behind the blocks of
   * uploads that started earlier, so the first to start is on the device first.
   */
  public Pending uploadAsync(Source src, long bytes, DeviceBuffer dst, GpuStream stream) {
    begin();
    long block = pool.blockBytes();
    List<FutureTask<Copied>> blocks = new ArrayList<>();
    Pending p = new Pending(blocks);
    try {
      synchronized (copyOrder) {
        for (long off = 0; off < bytes; off += block) {
          long at = off;
          long len = Math.min(block, bytes - off);
          FutureTask<Copied> f = new FutureTask<>(() -> uploadBlock(src, at, len, dst, stream));
          blocks.add(f);
          copiers.execute(f);
        }
      }
    } catch (RuntimeException e) {
      blocks.forEach(f -> f.cancel(false)); // a queued block that has not started never will
      try {
        p.await(); // the started ones end first; ends this transfer
      } catch (RuntimeException cancelled) {
        e.addSuppressed(cancelled);
      }
      throw e;
    }
    return p;
  }

  /** An upload whose blocks the copy threads are copying and queueing. */
  public final class Pending {
    private final List<FutureTask<Copied>> blocks;
    private boolean ended;

    private Pending(List<FutureTask<Copied>> blocks) {
      this.blocks = blocks;
    }

    /**
     * Waits until every block is copied and its upload queued (or failed); returns what the copies
     * took, or throws the first block's failure after all blocks have finished.
     */
    public synchronized Copied await() {
      try {
        return awaitBlocks();
      } finally {
        if (!ended) {
          ended = true;
          end();
        }
      }
    }

    private Copied awaitBlocks() {
      Copied copied = Copied.NONE;
      RuntimeException failed = null;
      boolean interrupted = false;
      for (FutureTask<Copied> f : blocks) {
        while (true) {
          try {
            copied = copied.plus(f.get());
            break;
          } catch (InterruptedException e) {
            interrupted = true; // every block finishes before the caller may reuse the destination
          } catch (ExecutionException e) {
            if (failed == null) {
              failed = e.getCause() instanceof RuntimeException r ? r
                  : new IllegalStateException("a block copy to GPU " + device.ordinal() + " failed", e.getCause());
            }
            break;
          }
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
        if (failed == null) {
          failed = new IllegalStateException("interrupted while copying bytes to GPU " + device.ordinal());
        }
      }
      if (failed != null) {
        throw failed;
      }
      return copied;
    }
  }

  /** One block, on a copy thread or the calling one: a free pinned block, the bytes, the upload. */
  private Copied uploadBlock(Source src, long off, long len, DeviceBuffer dst, GpuStream stream) {
    long t0 = System.nanoTime();
    PinnedPool.Block b = pool.acquire();
    long t1 = System.nanoTime();
    try {
      device.makeCurrent(); // first: the block's release records its event on the stream, even after a failed copy
      src.copy(off, b.address(), len);
      long t2 = System.nanoTime();
      dst.copyFromHostAsync(off, b.arena, b.offset, len, stream);
      return new Copied(t1 - t0, t2 - t1);
    } finally {
      pool.release(b, stream); // back once its copy, if queued, has run
    }
  }

  /**
   * Downloads {@code bytes} of {@code src} (from byte 0), after the work already queued on
   * {@code stream}, and hands them to {@code out} block by block, in order, each as soon as it has
   * arrived, while the next blocks' copies are in flight. Returns when {@code out} has had every
   * byte; the calling thread does the host copies.
   */
  public Copied download(DeviceBuffer src, long bytes, GpuStream stream, Sink out) {
    begin();
    long waited = 0;
    long copying = 0;
    ArrayDeque<InFlight> pending = new ArrayDeque<>(); // queued downloads, oldest first
    InFlight current = null; // arrived, being handed over
    try {
      device.makeCurrent();
      long next = 0;
      long handed = 0;
      while (handed < bytes) {
        while (next < bytes && pending.size() < DOWNLOAD_LOOKAHEAD) {
          long t0 = System.nanoTime();
          PinnedPool.Block b = pending.isEmpty() ? pool.acquire() : pool.tryAcquire();
          waited += System.nanoTime() - t0;
          if (b == null) {
            break;
          }
          long len = Math.min(pool.blockBytes(), bytes - next);
          pending.add(new InFlight(b, next, len));
          src.copyToHostAsync(next, b.arena, b.offset, len, stream);
          b.lastUse.record(stream);
          next += len;
        }
        current = pending.poll();
        long t0 = System.nanoTime();
        current.block.lastUse.synchronize();
        long t1 = System.nanoTime();
        out.take(current.offset, current.block.address(), current.len);
        copying += System.nanoTime() - t1;
        waited += t1 - t0;
        pool.release(current.block);
        handed += current.len;
        current = null;
      }
      return new Copied(waited, copying);
    } finally {
      if (current != null) {
        pending.addFirst(current);
      }
      try {
        for (InFlight p : pending) {
          pool.release(p.block, stream); // after the copies still queued into it
        }
      } finally {
        end();
      }
    }
  }

  private void begin() {
    synchronized (uses) {
      if (closing) {
        throw new IllegalStateException("the host transfers of GPU " + device.ordinal() + " are closed: its executor"
            + " is shutting down");
      }
      inFlight++;
    }
  }

  private void end() {
    synchronized (uses) {
      inFlight--;
      uses.notifyAll();
    }
  }

  /** A block's download: where it goes in the output. */
  private record InFlight(PinnedPool.Block block, long offset, long len) {}

  /**
   * Refuses new transfers, waits up to {@link #CLOSE_WAIT_MILLIS} for those in flight (a task still
   * copying when its executor shuts down), then stops the copy threads and frees the pool after
   * every block's last copy. Transfers still in flight after the wait keep the pool: freeing memory
   * a thread may still write would crash the JVM, so it stays allocated until the process ends, and
   * close says so.
   */
  @Override
  public void close() {
    int left;
    synchronized (uses) {
      closing = true;
      long deadline = System.nanoTime() + CLOSE_WAIT_MILLIS * 1_000_000L;
      long now;
      while (inFlight > 0 && (now = System.nanoTime()) < deadline) {
        try {
          uses.wait(Math.max(1, (deadline - now) / 1_000_000L));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
      left = inFlight;
    }
    if (left > 0) {
      copiers.shutdownNow();
      throw new IllegalStateException(left + " transfer(s) to GPU " + device.ordinal() + " still in flight after "
          + CLOSE_WAIT_MILLIS + " ms: the pinned pool stays allocated until the process ends");
    }
    RuntimeException e = Closeables.closeAll(null, this::stopCopiers, pool);
    if (e != null) {
      throw e;
    }
  }

  private void stopCopiers() throws InterruptedException {
    copiers.shutdownNow();
    if (!copiers.awaitTermination(10, TimeUnit.SECONDS)) {
      throw new IllegalStateException("the copy threads of GPU " + device.ordinal() + " did not stop within 10 s");
    }
  }
}
