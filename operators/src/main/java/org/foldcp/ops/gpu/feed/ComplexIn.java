package org.foldcp.ops.gpu.feed;

/**
 * One whole complex as bytes wherever they live (a Spark row, a file, a heap array): its shape,
 * and bulk copies of its bf16 pair values ([B][N][N][D], little-endian) and its uint8 mask
 * ([B][N][N]) into raw host memory. The feed calls the copies block by block on its copy threads,
 * several blocks at once and in no set order (so the copies must be safe to run concurrently: plain
 * reads of the source), and is done with the source when {@link StackFeed#submit} returns.
 */
public interface ComplexIn {
  int batch();

  int n();

  int dim();

  /** Whether a mask comes with the values (else every position is valid). */
  boolean hasMask();

  /** Copies bytes [offset, offset + len) of the pair values to the raw address {@code dst}. */
  void copyPair(long offset, long dst, long len);

  /** Copies bytes [offset, offset + len) of the mask to the raw address {@code dst}. */
  void copyMask(long offset, long dst, long len);

  /**
   * The raw address of the pair values where they lie contiguously outside the Java heap (a row
   * cached in the feed's {@link PinnedCache}), else 0. Where it falls in a span of the feed's cache,
   * the feed uploads the values from there and copies nothing on the host.
   */
  default long pairAddress() {
    return 0;
  }

  /** Bytes of the bf16 pair values. */
  default long pairBytes() {
    return 2L * batch() * n() * n() * dim();
  }

  /** Bytes of the uint8 mask. */
  default long maskBytes() {
    return (long) batch() * n() * n();
  }
}
