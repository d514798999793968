package org.foldcp.spark.sql;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.HostCopy;
import org.foldcp.ops.gpu.feed.ComplexBytes;
import org.foldcp.spark.tiles.PairTiles;

/**
 * A whole-complex tile row seen as bytes, for the GPU feed: the header fields are read and
 * checked as {@link PairTiles#fromRow} checks them, and the pair values are copied in bulk
 * straight out of the row's memory. For an {@link UnsafeRow} (what Spark's row operators and
 * cached tables hand over) that is the row's own buffer: no copy of the bytes in between, and no
 * decoding into values. Any other InternalRow costs one {@code getBinary} copy.
 *
 * <p>Valid only until the row's iterator moves on (Spark reuses row buffers): the feed copies
 * everything before {@code submit} returns, and {@link #mask()} is a copy of its own (the output row
 * carries the input's mask).
 */
final class TileRowBytes extends ComplexBytes {
  final String complexId;
  final int nTokens;
  private final Object pairBase;
  private final long pairOffset;
  private final long pairBytes;

  private TileRowBytes(String complexId, int nTokens, int n, int dim, Object pairBase, long pairOffset,
                       long pairBytes, byte[] mask) {
    super(1, n, dim, mask);
    this.complexId = complexId;
    this.nTokens = nTokens;
    this.pairBase = pairBase;
    this.pairOffset = pairOffset;
    this.pairBytes = pairBytes;
  }

  /**
   * The row as bytes when it holds a whole complex (the tile (0, 0, N, N)), else null (a row band
   * or a tile, which the decoding path handles). Checks what {@link TileRows#decode} and
   * PairTiles check, with the same messages: nulls, the pair and mask sizes against the header.
   */
  static TileRowBytes ofWholeComplex(InternalRow row, int[] ordinals) {
    for (int f = 0; f < TileRows.MASK; f++) {
      if (row.isNullAt(ordinals[f])) {
        throw InvalidInputException.of("column '" + PairTiles.SCHEMA.fields()[f].name() + "' of a tile row", "null",
            "only the mask of a tile may be null");
      }
    }
    int nTokens = row.getInt(ordinals[1]);
    int row0 = row.getInt(ordinals[2]);
    int col0 = row.getInt(ordinals[3]);
    int rows = row.getInt(ordinals[4]);
    int cols = row.getInt(ordinals[5]);
    int d = row.getInt(ordinals[6]);
    if (row0 != 0 || col0 != 0 || rows != nTokens || cols != nTokens) {
      return null;
    }
    String id = row.getUTF8String(ordinals[TileRows.COMPLEX_ID]).toString();
    long want = 2L * rows * cols * d;
    Object base;
    long offset;
    long size;
    if (row instanceof UnsafeRow u) {
      long offsetAndSize = u.getLong(ordinals[TileRows.PAIR]);
      base = u.getBaseObject();
      offset = u.getBaseOffset() + (offsetAndSize >>> 32);
      size = (int) offsetAndSize;
    } else {
      byte[] pair = row.getBinary(ordinals[TileRows.PAIR]);
      base = pair;
      offset = Platform.BYTE_ARRAY_OFFSET;
      size = pair.length;
    }
    InvalidInputException.require(size == want, "pair bytes of complex '" + id + "'", size,
        "must be 2 * rows * cols * dim = 2 * " + rows + " * " + cols + " * " + d + " = " + want + " (bf16)");
    byte[] mask = row.isNullAt(ordinals[TileRows.MASK]) ? null : row.getBinary(ordinals[TileRows.MASK]);
    if (mask != null) {
      InvalidInputException.require(mask.length == (long) rows * cols, "mask bytes of complex '" + id + "'",
          mask.length, "must be rows * cols = " + rows + " * " + cols + " = " + ((long) rows * cols)
              + " (one uint8 per position)");
    }
    return new TileRowBytes(id, nTokens, rows, d, base, offset, size, mask);
  }

  /** The address of the values where the row lies outside the heap (a row of the pinned cache), else 0. */
  @Override
  public long pairAddress() {
    return pairBase == null ? pairOffset : 0;
  }

  @Override
  public void copyPair(long offset, long dst, long len) {
    checkRange(offset, len, pairBytes);
    HostCopy.copy(pairBase, pairOffset + offset, null, dst, len);
  }

  @Override
  public void copyMask(long offset, long dst, long len) {
    byte[] mask = mask();
    checkRange(offset, len, mask == null ? 0 : mask.length);
    HostCopy.copy(mask, HostCopy.BYTE_ARRAY_OFFSET + offset, null, dst, len);
  }

  private static void checkRange(long offset, long len, long size) {
    if (offset < 0 || len < 0 || offset > size - len) {
      throw new IndexOutOfBoundsException("bytes [" + offset + ", " + offset + " + " + len + ") of " + size);
    }
  }
}
