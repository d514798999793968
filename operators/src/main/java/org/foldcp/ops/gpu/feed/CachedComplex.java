package org.foldcp.ops.gpu.feed;

import org.foldcp.ops.gpu.HostCopy;

/**
 * A complex whose pair values lie in a span of the feed's pinned cache, as a cached Spark row's
 * do (RowCachedBatchSerializer on a GPU executor): the feed uploads them from where they lie,
 * with no host copy. Its mask stays on the heap. Holding the record holds the span.
 */
public record CachedComplex(HeapComplex heap, PinnedCache.Span span) implements ComplexIn {
  /**
   * Copies {@code heap}'s pair values into a new span of {@code cache}.
   *
   * @throws IllegalStateException when the cache has no room for them
   */
  public static CachedComplex in(PinnedCache cache, HeapComplex heap) {
    PinnedCache.Span span = cache.tryAllocate(heap.pairBytes(), "a cached complex");
    if (span == null) {
      throw new IllegalStateException("the pinned cache has no room for " + heap.pairBytes() + " bytes ("
          + cache + ")");
    }
    HostCopy.copy(heap.pair(), HostCopy.BYTE_ARRAY_OFFSET, null, span.address(), heap.pairBytes());
    return new CachedComplex(heap, span);
  }

  @Override public int batch() { return heap.batch(); }

  @Override public int n() { return heap.n(); }

  @Override public int dim() { return heap.dim(); }

  @Override public boolean hasMask() { return heap.hasMask(); }

  @Override public long pairAddress() { return span.address(); }

  @Override
  public void copyPair(long offset, long dst, long len) {
    HostCopy.copy(null, span.address() + offset, null, dst, len);
  }

  @Override
  public void copyMask(long offset, long dst, long len) {
    heap.copyMask(offset, dst, len);
  }
}
