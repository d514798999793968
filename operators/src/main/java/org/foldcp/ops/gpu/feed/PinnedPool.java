package org.foldcp.ops.gpu.feed;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.Closeables;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.GpuEvent;
import org.foldcp.ops.gpu.GpuStream;
import org.foldcp.ops.gpu.PinnedHostBuffer;

/**
 * A fixed set of equal pinned host blocks, allocated once when the executor's GPU opens and
 * reused by every complex: the only host memory the DMA engines read from or write to. A complex
 * larger than the pool streams through it block by block, so the pool bounds pinned memory
 * whatever the complexes are.
 *
 * <p>A block is held by one thread between {@link #acquire} and {@link #release}. A block given
 * back with a stream carries an event recorded after the copy that uses it; the next
 * {@link #acquire} of that block waits for the event first, so the host never rewrites a block the
 * DMA engine is still reading. Blocks come back in the order they were given (FIFO), which makes
 * that wait rare.
 */
public final class PinnedPool implements AutoCloseable {
  /** How often a thread waiting for a block checks whether the pool closed. */
  private static final long WAIT_CHECK_MILLIS = 200;

  /** One block and the event of its last asynchronous use. */
  static final class Block {
    final PinnedHostBuffer buffer;
    final GpuEvent lastUse;

    Block(PinnedHostBuffer buffer, GpuEvent lastUse) {
      this.buffer = buffer;
      this.lastUse = lastUse;
    }

    long address() {
      return buffer.address();
    }
  }

  private final long blockBytes;
  private final List<Block> all = new ArrayList<>();
  private final ArrayBlockingQueue<Block> free;
  private volatile boolean closed;

  /**
   * {@code blocks} pinned blocks of {@code blockBytes} each on {@code device}'s context.
   *
   * @throws InvalidInputException for fewer than 2 blocks or a block size outside [1 MiB, 1 GiB]
   */
  public PinnedPool(GpuDevice device, int blocks, long blockBytes) {
    InvalidInputException.require(blocks >= 2, "pinned pool blocks", blocks,
        "must be >= 2 (one block fills while the DMA engine copies another)");
    InvalidInputException.require(blockBytes >= (1L << 20) && blockBytes <= (1L << 30), "pinned block bytes",
        blockBytes, "must lie in [1 MiB, 1 GiB]");
    this.blockBytes = blockBytes;
    this.free = new ArrayBlockingQueue<>(blocks, true);
    try {
      for (int k = 0; k < blocks; k++) {
        PinnedHostBuffer buf = PinnedHostBuffer.allocate(device, blockBytes, "pinned pool block " + k);
        GpuEvent ev;
        try {
          ev = GpuEvent.create(device, false, "pinned pool block " + k);
        } catch (RuntimeException e) {
          Closeables.closeAll(e, buf);
          throw e;
        }
        Block b = new Block(buf, ev);
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
    return free.size();
  }

  /** A block, waiting while every block is in use; the copy that last used it has finished. */
  Block acquire() {
    try {
      Block b;
      while ((b = free.poll(WAIT_CHECK_MILLIS, TimeUnit.MILLISECONDS)) == null) {
        requireOpen();
      }
      b.lastUse.synchronize();
      return b;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for a pinned block", e);
    }
  }

  /** A free block, or null at once when none is (for work ahead that must never wait holding blocks). */
  Block tryAcquire() {
    Block b = free.poll();
    if (b != null) {
      b.lastUse.synchronize();
    }
    return b;
  }

  /** Gives a block back whose contents nothing reads or writes any more. */
  void release(Block b) {
    free.add(b);
  }

  /** Gives a block back that the copy just queued on {@code stream} still uses. */
  void release(Block b, GpuStream stream) {
    b.lastUse.record(stream);
    free.add(b);
  }

  private void requireOpen() {
    if (closed) {
      throw new IllegalStateException("the pinned pool is closed: its executor's GPU shut down");
    }
  }

  /**
   * Frees every block after its last copy. The owner first makes sure no thread holds a block
   * (the feed closes after its streams have drained).
   */
  @Override
  public void close() {
    closed = true;
    List<AutoCloseable> steps = new ArrayList<>();
    for (Block b : all) {
      steps.add(b.lastUse::synchronize);
      steps.add(b.lastUse);
      steps.add(b.buffer);
    }
    all.clear();
    free.clear();
    RuntimeException e = Closeables.closeAll(null, steps.toArray(new AutoCloseable[0]));
    if (e != null) {
      throw e;
    }
  }
}
