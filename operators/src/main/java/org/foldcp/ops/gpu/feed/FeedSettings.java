package org.foldcp.ops.gpu.feed;

import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.PinnedTransfers;

/**
 * The sizes of an executor's GPU feed, fixed when it opens: the pinned pool (blocks x block bytes),
 * the device slots (complexes on the device at once: one being uploaded, one computed, one
 * downloaded, plus one per extra task that feeds the GPU at the same time) and the copy threads.
 *
 * @param poolBytes pinned host bytes of the pool, rounded down to whole blocks (at least 2 blocks)
 * @param blockBytes bytes of one pinned block: the unit of every host copy and DMA transfer
 * @param slots device slots (>= 2): how many complexes may be between upload and download at once
 * @param copyThreads threads that copy submitted complexes into pinned blocks, block by block in
 *     submission order, so that the first complex is on the device soonest and one complex's copy
 *     runs at several threads' memory bandwidth
 * @param cacheBytes the most pinned host bytes that cached rows may take ({@link PinnedCache}):
 *     allocated span by span as rows are cached, none before; 0 keeps every cached row on the heap
 */
public record FeedSettings(long poolBytes, long blockBytes, int slots, int copyThreads, long cacheBytes) {
  /** 16 MiB blocks: large enough for the DMA engines' full rate, small enough to stream through. */
  public static final long DEFAULT_BLOCK_BYTES = 16L << 20;
  /** 1 GiB of pinned memory: 64 blocks, a few in flight for each of up to 16 host threads. */
  public static final long DEFAULT_POOL_BYTES = 1L << 30;
  public static final int DEFAULT_SLOTS = 4;
  /** Half of a 16-core host: 8 threads reached 49-57 GB/s of host copies there (bench/host_memcpy.c). */
  public static final int DEFAULT_COPY_THREADS = 8;
  /** 8 GiB: 128 complexes of (512, 512, 128), or 8 of (2048, 2048, 128); nothing is pinned until rows are cached. */
  public static final long DEFAULT_CACHE_BYTES = 8L << 30;
  public static final FeedSettings DEFAULT = new FeedSettings(DEFAULT_POOL_BYTES, DEFAULT_BLOCK_BYTES, DEFAULT_SLOTS,
      DEFAULT_COPY_THREADS, DEFAULT_CACHE_BYTES);

  public FeedSettings {
    InvalidInputException.require(blockBytes >= (1L << 20) && blockBytes <= (1L << 30), "pinned block bytes",
        blockBytes, "must lie in [1 MiB, 1 GiB]");
    InvalidInputException.require(poolBytes >= 2 * blockBytes, "pinned pool bytes", poolBytes,
        "must hold at least two blocks of " + blockBytes + " bytes");
    InvalidInputException.require(poolBytes / blockBytes <= 65536, "pinned pool bytes", poolBytes,
        "must hold at most 65536 blocks of " + blockBytes + " bytes");
    InvalidInputException.require(slots >= 2, "device slots", slots,
        "must be >= 2 (one complex computes while another one's bytes move)");
    InvalidInputException.require(copyThreads >= 1 && copyThreads <= 256, "feed copy threads", copyThreads,
        "must lie in [1, 256]");
    InvalidInputException.require(cacheBytes >= 0, "pinned cache bytes", cacheBytes, "must be >= 0");
  }

  /** Whole blocks in the pool. */
  public int blocks() {
    return (int) (poolBytes / blockBytes);
  }

  /** The pinned pool and copy threads of these settings on {@code device} (the caller owns them). */
  public PinnedTransfers openTransfers(GpuDevice device) {
    return new PinnedTransfers(device, blocks(), blockBytes, copyThreads);
  }
}
