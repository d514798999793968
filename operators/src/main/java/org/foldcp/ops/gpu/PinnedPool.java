package org.foldcp.ops.gpu;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.foldcp.ops.InvalidInputException;

/**
 * A fixed pinned arena cut into equal blocks, allocated once when the executor's GPU opens and
 * reused by every complex: the only host memory the DMA engines read from or write to. A complex
 * larger than the pool streams through it block by block, so the pool bounds pinned memory
 * whatever the complexes are.
 *
 * <p>Two uses. A {@link Block} is one block, the unit of streaming copies: held by one thread
 * between {@link #acquire} and {@link #release}. A {@link Run} is a span of adjacent blocks, taken
 * only with {@link #tryAcquireRun} (never waited for): the contiguous memory a whole output row
 * lives in, so that the download writes the row's values where Spark reads them, with no host copy.
 * Runs are taken from the lowest free span and single blocks in the order they came back, which
 * keeps low spans free for runs while streaming blocks cycle through the rest.
 *
 * <p>A block given back with a stream carries an event recorded after the copy that uses it; the
 * next acquire of that block waits for the event first, so the host never rewrites a block the DMA
 * engine is still reading. Single blocks come back first in, first out, which makes that wait rare.
 */
public final class PinnedPool implements AutoCloseable {
  /** How often a thread waiting for a block checks whether the pool closed. */
  private static final long WAIT_CHECK_MILLIS = 200;

  /** One block of the arena and the event of its last asynchronous use. */
  static final class Block {
    final PinnedHostBuffer arena;
    final int index;
    final long offset;
    final GpuEvent lastUse;

    Block(PinnedHostBuffer arena, int index, long offset, GpuEvent lastUse) {
      this.arena = arena;
      this.index = index;
      this.offset = offset;
      this.lastUse = lastUse;
    }

    long address() {
      return arena.address() + offset;
    }
  }

  /**
   * Adjacent blocks held as one span of pinned memory, for {@link #release(Run)} once nothing reads
   * or writes it (its copies done, the row built in it consumed).
   */
  public static final class Run {
    final PinnedHostBuffer arena;
    final int first;
    final int count;
    final long offset;
    final long bytes;
    private boolean released;

    Run(PinnedHostBuffer arena, int first, int count, long offset, long bytes) {
      this.arena = arena;
      this.first = first;
      this.count = count;
      this.offset = offset;
      this.bytes = bytes;
    }

    /** The raw address of the run's first byte (valid until released). */
    public long address() {
      if (released) {
        throw new IllegalStateException("this pinned run was released");
      }
      return arena.address() + offset;
    }

    /** Bytes the run spans (whole blocks, at least what was asked for). */
    public long bytes() {
      return bytes;
    }

    /** Queues on {@code stream} the copy of {@code len} bytes of {@code src} (from byte 0) into the run from byte {@code at}. */
    public void downloadFrom(DeviceBuffer src, long at, long len, GpuStream stream) {
      if (released || at < 0 || len < 0 || at > bytes - len) {
        throw new IndexOutOfBoundsException("a download of " + len + " bytes at byte " + at + " of a pinned run of "
            + bytes + " bytes" + (released ? " that was released" : ""));
      }
      src.copyToHostAsync(0, arena, offset + at, len, stream);
    }
  }

  private final long blockBytes;
  private final PinnedHostBuffer arena;
  private final List<Block> all = new ArrayList<>();
  private final boolean[] held;
  private final ArrayDeque<Block> free = new ArrayDeque<>(); // single blocks, oldest returned first
  private final ReentrantLock lock = new ReentrantLock(true);
  private final Condition returned = lock.newCondition();
  /** Blocks a run may not take: a quarter of the pool, at most 64 (1 GiB of 16 MiB blocks). */
  private final int runReserve;
  private volatile boolean closed;

  /**
   * {@code blocks} pinned blocks of {@code blockBytes} each, in one arena on {@code device}'s context.
   *
   * @throws InvalidInputException for fewer than 2 blocks or a block size outside [1 MiB, 1 GiB]
   */
  public PinnedPool(GpuDevice device, int blocks, long blockBytes) {
    InvalidInputException.require(blocks >= 2, "pinned pool blocks", blocks,
        "must be >= 2 (one block fills while the DMA engine copies another)");
    InvalidInputException.require(blockBytes >= (1L << 20) && blockBytes <= (1L << 30), "pinned block bytes",
        blockBytes, "must lie in [1 MiB, 1 GiB]");
    this.blockBytes = blockBytes;
    this.held = new boolean[blocks];
    this.runReserve = Math.min(blocks / 4, 64);
    this.arena = PinnedHostBuffer.allocate(device, blocks * blockBytes, "pinned pool (" + blocks + " blocks)");
    try {
      for (int k = 0; k < blocks; k++) {
        Block b = new Block(arena, k, k * blockBytes, GpuEvent.create(device, false, "pinned pool block " + k));
        all.add(b);
        free.add(b);
      }
    } catch (RuntimeException e) {
      Closeables.closeAll(e, this);
      throw e;
    }
  }

  public long blockBytes() {
    return blockBytes;
  }

  public int blocks() {
    return all.size();
  }

  /** Pinned bytes the pool holds (fixed for its life). */
  public long totalBytes() {
    return blockBytes * all.size();
  }

  /** Blocks free now. */
  public int available() {
    lock.lock();
    try {
      return free.size();
    } finally {
      lock.unlock();
    }
  }

  /** A block, waiting while every block is in use; the copy that last used it has finished. */
  Block acquire() {
    Block b;
    lock.lock();
    try {
      while ((b = take()) == null) {
        requireOpen();
        if (!returned.await(WAIT_CHECK_MILLIS, TimeUnit.MILLISECONDS)) {
          requireOpen();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for a pinned block", e);
    } finally {
      lock.unlock();
    }
    b.lastUse.synchronize();
    return b;
  }

  /** A free block, or null at once when none is (for work ahead that must never wait holding blocks). */
  Block tryAcquire() {
    Block b;
    lock.lock();
    try {
      b = take();
    } finally {
      lock.unlock();
    }
    if (b != null) {
      b.lastUse.synchronize();
    }
    return b;
  }

  private Block take() {
    Block b = free.poll();
    if (b != null) {
      held[b.index] = true;
    }
    return b;
  }

  /**
   * Adjacent free blocks spanning at least {@code bytes}, the lowest such span; null at once when
   * there is none, or when taking it would leave fewer free blocks than the streaming reserve (a
   * quarter of the pool, at most 64). The caller then takes its streaming path: nothing ever waits
   * for a span, and rows held by Spark's consumers never starve the uploads.
   */
  public Run tryAcquireRun(long bytes) {
    InvalidInputException.require(bytes >= 1, "pinned run bytes", bytes, "must be >= 1");
    long want = (bytes + blockBytes - 1) / blockBytes;
    if (want > all.size()) {
      return null;
    }
    int count = (int) want;
    int first = -1;
    lock.lock();
    try {
      requireOpen();
      if (free.size() - count < runReserve) {
        return null; // the last blocks stay for streaming: uploads never wait on rows being read
      }
      int streak = 0;
      for (int k = 0; k < held.length; k++) {
        streak = held[k] ? 0 : streak + 1;
        if (streak == count) {
          first = k - count + 1;
          break;
        }
      }
      if (first < 0) {
        return null;
      }
      for (int k = first; k < first + count; k++) {
        held[k] = true;
        free.remove(all.get(k));
      }
    } finally {
      lock.unlock();
    }
    for (int k = first; k < first + count; k++) {
      all.get(k).lastUse.synchronize();
    }
    return new Run(arena, first, count, first * blockBytes, count * blockBytes);
  }

  /** Gives a run back whose memory nothing reads or writes any more; idempotent. */
  public void release(Run r) {
    lock.lock();
    try {
      if (r.released) {
        return;
      }
      r.released = true;
      for (int k = r.first; k < r.first + r.count; k++) {
        give(all.get(k));
      }
    } finally {
      lock.unlock();
    }
  }

  /** Gives a block back whose contents nothing reads or writes any more. */
  void release(Block b) {
    lock.lock();
    try {
      give(b);
    } finally {
      lock.unlock();
    }
  }

  /** Gives a block back that the copy just queued on {@code stream} still uses. */
  void release(Block b, GpuStream stream) {
    b.lastUse.record(stream);
    release(b);
  }

  private void give(Block b) {
    held[b.index] = false;
    free.add(b);
    returned.signal();
  }

  private void requireOpen() {
    if (closed) {
      throw new IllegalStateException("the pinned pool is closed: its executor's GPU shut down");
    }
  }

  /**
   * Frees the arena after every block's last copy. The owner first makes sure no thread holds a
   * block (the feed closes after its streams have drained).
   */
  @Override
  public void close() {
    closed = true;
    List<AutoCloseable> steps = new ArrayList<>();
    for (Block b : all) {
      steps.add(b.lastUse::synchronize);
      steps.add(b.lastUse);
    }
    steps.add(arena);
    lock.lock();
    try {
      all.clear();
      free.clear();
    } finally {
      lock.unlock();
    }
    RuntimeException e = Closeables.closeAll(null, steps.toArray(new AutoCloseable[0]));
    if (e != null) {
      throw e;
    }
  }
}
