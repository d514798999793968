package org.foldcp.ops.gpu;

import java.nio.ByteBuffer;
import org.foldcp.ops.NonFiniteInputException;

/**
 * The host side of the device's non-finite scan ({@link NativeTriMul#nonFiniteScan}): its two
 * uint64 results, copied back into pinned memory, turned into the error that names the first
 * (b, i, j, c). One decoder for every path that scans on the device (the GPU feed, the CP ranks).
 */
public final class ScanResult {
  /** Bytes the scan writes: the count, then (flat index << 16) | bits of the first. */
  public static final long BYTES = 16;

  private ScanResult() {}

  /**
   * Throws when the scan found NaN or Inf in a (B, rows, cols, dim) tensor.
   *
   * @param result the scan's 16 bytes, little-endian, from position 0
   * @param what names the tensor in the message (e.g. "the pair tile of rank 1")
   * @throws NonFiniteInputException with the count and the first (b, i, j, c) and its bits
   */
  public static void throwIfFound(ByteBuffer result, int rows, int cols, int dim, String what) {
    long count = result.getLong(0);
    if (count == 0) {
      return;
    }
    long key = result.getLong(8);
    long idx = key >>> 16;
    short bits = (short) (key & 0xFFFF);
    int c = (int) (idx % dim);
    long rest = idx / dim;
    int j = (int) (rest % cols);
    rest /= cols;
    int i = (int) (rest % rows);
    int b = (int) (rest / rows);
    throw new NonFiniteInputException(what, count, new int[] {b, i, j, c}, bits, NonFiniteInputException.LIBRARY_HINT);
  }
}
