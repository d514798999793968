package org.foldcp.spark.sql;

import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.feed.ComplexOut;

/**
 * Output rows of PairTiles.SCHEMA written straight into one reused UnsafeRow buffer: the header
 * fields, then the pair values copied in bulk from wherever the GPU feed hands them over (one copy
 * per byte, no array of values in between), then the mask. One per task: the returned row is
 * rewritten by the next {@link #begin}, as Spark's own projections reuse their rows (operators
 * that keep a row copy it).
 *
 * <p>The layout is UnsafeRow's: a null bitset of one word (9 fields), one 8-byte slot per field
 * (an INT in the slot's low 4 bytes, a variable-length field as offset << 32 | size), then the
 * variable-length bytes, each padded with zeros to a multiple of 8.
 */
final class UnsafeTileRows {
  private static final int FIELDS = TileRows.FIELDS;
  private static final int FIXED = 8 + 8 * FIELDS;
  /**
   * Buffers given back by earlier tasks of this executor, for the next ones: a 64 MiB to 1 GiB
   * array is zeroed by the JVM when made, a pass over its memory as costly as filling it. Bounded
   * to a quarter of the heap.
   */
  private static final java.util.concurrent.ConcurrentLinkedDeque<byte[]> SPARE =
      new java.util.concurrent.ConcurrentLinkedDeque<>();
  private static final java.util.concurrent.atomic.AtomicLong SPARE_BYTES = new java.util.concurrent.atomic.AtomicLong();
  private static final long SPARE_LIMIT = Runtime.getRuntime().maxMemory() / 4;
  private byte[] buffer = new byte[0];
  private final UnsafeRow row = new UnsafeRow(FIELDS);
  private int pairStart;
  private long pairBytes;

  /** Bytes a whole-complex row takes, or -1 when it would not fit a Java array (the caller cuts bands). */
  static long rowBytes(String complexId, long pairBytes, byte[] mask) {
    long total = FIXED + pad(complexId.getBytes(StandardCharsets.UTF_8).length) + pad(pairBytes)
        + (mask == null ? 0 : pad(mask.length));
    return total <= Integer.MAX_VALUE - 16 ? total : -1;
  }

  /**
   * Starts the row of a whole complex: header and mask written, the pair bytes to come through
   * {@link #pairSink()}; then {@link #row()} returns it.
   */
  void begin(String complexId, int nTokens, int dim, long pairBytes, byte[] mask) {
    byte[] id = complexId.getBytes(StandardCharsets.UTF_8);
    long total = rowBytes(complexId, pairBytes, mask);
    InvalidInputException.require(total > 0, "output row of complex '" + complexId + "'", pairBytes + " pair bytes",
        "must stay below 2 GiB in one row");
    if (buffer.length < total) {
      buffer = spareOrNew((int) total);
    }
    Object base = buffer;
    long at = Platform.BYTE_ARRAY_OFFSET;
    for (int k = 0; k < FIXED; k += 8) {
      Platform.putLong(base, at + k, 0L);
    }
    int cursor = FIXED;
    cursor = putBytes(0, cursor, id, id.length);
    int[] ints = {nTokens, 0, 0, nTokens, nTokens, dim};
    for (int f = 1; f <= 6; f++) {
      Platform.putInt(base, at + 8 + 8L * f, ints[f - 1]);
    }
    this.pairStart = cursor;
    this.pairBytes = pairBytes;
    Platform.putLong(base, at + 8 + 8L * TileRows.PAIR, ((long) cursor << 32) | pairBytes);
    long padded = pad(pairBytes);
    for (long k = pairBytes; k < padded; k++) {
      Platform.putByte(base, at + cursor + k, (byte) 0);
    }
    cursor += (int) padded;
    if (mask == null) {
      Platform.putLong(base, at, 1L << TileRows.MASK); // null bit of the mask
    } else {
      cursor = putBytes(TileRows.MASK, cursor, mask, mask.length);
    }
    row.pointTo(buffer, cursor);
  }

  private int putBytes(int field, int cursor, byte[] src, int len) {
    long at = Platform.BYTE_ARRAY_OFFSET;
    Platform.putLong(buffer, at + 8 + 8L * field, ((long) cursor << 32) | len);
    long padded = pad(len);
    if (padded > len) {
      Platform.putLong(buffer, at + cursor + padded - 8, 0L); // zero the padding before the bytes cover their part
    }
    Platform.copyMemory(src, Platform.BYTE_ARRAY_OFFSET, buffer, at + cursor, len);
    return cursor + (int) padded;
  }

  /** Where the feed hands the pair bytes of the row begun last. */
  ComplexOut pairSink() {
    return (offset, src, len) -> {
      if (offset < 0 || len < 0 || offset > pairBytes - len) {
        throw new IndexOutOfBoundsException("pair bytes [" + offset + ", " + offset + " + " + len + ") of "
            + pairBytes);
      }
      Platform.copyMemory(null, src, buffer, Platform.BYTE_ARRAY_OFFSET + pairStart + offset, len);
    };
  }

  /** The row begun last (valid until the next {@link #begin}). */
  UnsafeRow row() {
    return row;
  }

  /** A spare buffer of at least {@code bytes} (the first found), or a new one. */
  private static byte[] spareOrNew(int bytes) {
    for (java.util.Iterator<byte[]> it = SPARE.iterator(); it.hasNext();) {
      byte[] b = it.next();
      if (b.length >= bytes && SPARE.removeFirstOccurrence(b)) {
        SPARE_BYTES.addAndGet(-b.length);
        return b;
      }
    }
    return new byte[bytes];
  }

  /** Gives this writer's buffer to a later task (when the spare buffers stay under their bound); the last row is void. */
  void release() {
    byte[] b = buffer;
    buffer = new byte[0];
    if (b.length > 0 && SPARE_BYTES.addAndGet(b.length) <= SPARE_LIMIT) {
      SPARE.add(b);
    } else if (b.length > 0) {
      SPARE_BYTES.addAndGet(-b.length);
    }
  }

  private static long pad(long len) {
    return (len + 7) & ~7L;
  }
}
