package org.foldcp.ops.gpu;

import org.foldcp.ops.tensor.PairTensor;

/**
 * A {@link PairTensor} seen as the bytes the device holds: its bf16 values row after row
 * ([B][rows][cols][D], little-endian) and its mask as one byte per position, 1 where valid and 0
 * where not (what the kernels read, and what PairTensor holds). Copies of any byte range, so that a tile can stream through
 * pinned blocks whose edges fall anywhere in a row; each call reads or writes only its range, so
 * several may run at once on disjoint ranges.
 */
public final class TensorBytes {
  private TensorBytes() {}

  /** Bytes of the values. */
  public static long valueBytes(PairTensor t) {
    return 2L * t.elementCount();
  }

  /** Bytes of the mask (one per position). */
  public static long maskBytes(PairTensor t) {
    return (long) t.batch() * t.rows() * t.cols();
  }

  /** Copies bytes [offset, offset + len) of {@code t}'s values to the raw address {@code dst}. */
  public static void copyValues(PairTensor t, long offset, long dst, long len) {
    eachRowPiece(t, offset, dst, len, (row, at, raw, n) -> HostCopy.shortsToAddress(row, at, raw, n));
  }

  /** Fills bytes [offset, offset + len) of {@code t}'s values from the raw address {@code src}. */
  public static void takeValues(PairTensor t, long offset, long src, long len) {
    eachRowPiece(t, offset, src, len, (row, at, raw, n) -> HostCopy.shortsFromAddress(raw, row, at, n));
  }

  /** One piece of a value range that lies in one row: the row, the piece's first byte in it, its raw address, its length. */
  @FunctionalInterface
  private interface RowPiece {
    void copy(short[] row, long byteInRow, long raw, long len);
  }

  /** Cuts bytes [offset, offset + len) of the values, raw memory from {@code raw} on, into pieces of one row each. */
  private static void eachRowPiece(PairTensor t, long offset, long raw, long len, RowPiece piece) {
    long rowBytes = 2L * t.cols() * t.dim();
    checkRange(offset, len, valueBytes(t));
    while (len > 0) {
      int r = (int) (offset / rowBytes);
      long in = offset - r * rowBytes;
      long n = Math.min(len, rowBytes - in);
      piece.copy(t.row(r / t.rows(), r % t.rows()), in, raw, n);
      offset += n;
      raw += n;
      len -= n;
    }
  }

  /**
   * Copies bytes [offset, offset + len) of {@code t}'s mask (0 or 1 per position, as PairTensor
   * keeps it; 1 everywhere for a tensor without a mask) to the raw address {@code dst}.
   */
  public static void copyMask(PairTensor t, long offset, long dst, long len) {
    int cols = t.cols();
    checkRange(offset, len, maskBytes(t));
    if (!t.hasMask()) {
      HostCopy.fill(dst, len, (byte) 1);
      return;
    }
    while (len > 0) {
      int r = (int) (offset / cols);
      int in = (int) (offset - (long) r * cols);
      int n = (int) Math.min(len, cols - in);
      HostCopy.toAddress(t.maskRow(r / t.rows(), r % t.rows()), in, dst, n);
      offset += n;
      dst += n;
      len -= n;
    }
  }

  private static void checkRange(long offset, long len, long size) {
    if (offset < 0 || len < 0 || offset > size - len) {
      throw new IndexOutOfBoundsException("bytes [" + offset + ", " + offset + " + " + len + ") of " + size);
    }
  }
}
