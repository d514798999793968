package org.foldcp.spark.sql;

import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.HostCopy;
import org.foldcp.ops.gpu.feed.ComplexOut;

/**
 * Output rows of PairTiles.SCHEMA written straight into one reused UnsafeRow buffer: the header
 * fields, then the pair values copied in bulk from wherever the GPU feed hands them over (one copy
 * per byte, no array of values in between), then the mask. Or, with {@link #beginAt}, the same
 * row laid out in raw (pinned) memory that the feed downloads the values into: no host copy at
 * all. One per task: the returned row is rewritten by the next begin, as Spark's own projections
 * reuse their rows (operators that keep a row copy it).
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
    long total = requireRowBytes(complexId, pairBytes, mask);
    if (buffer.length < total) {
      buffer = spareOrNew((int) total);
    }
    this.pairStart = layout(buffer, Platform.BYTE_ARRAY_OFFSET, complexId, nTokens, dim, pairBytes, mask);
    this.pairBytes = pairBytes;
    row.pointTo(buffer, (int) total);
  }

  /**
   * Starts the row of a whole complex in raw memory at {@code address} (pinned memory the feed
   * downloads into): header and mask written; returns the byte offset from {@code address} where
   * the pair bytes go, which the caller fills before handing {@link #row()} on. The memory must
   * hold {@link #rowBytes} bytes and stay untouched while the row is in use.
   */
  long beginAt(long address, String complexId, int nTokens, int dim, long pairBytes, byte[] mask) {
    long total = requireRowBytes(complexId, pairBytes, mask);
    long start = layout(null, address, complexId, nTokens, dim, pairBytes, mask);
    this.pairStart = -1; // no sink: the caller fills the pair bytes
    this.pairBytes = pairBytes;
    row.pointTo(null, address, (int) total);
    return start;
  }

  private static long requireRowBytes(String complexId, long pairBytes, byte[] mask) {
    long total = rowBytes(complexId, pairBytes, mask);
    InvalidInputException.require(total > 0, "output row of complex '" + complexId + "'", pairBytes + " pair bytes",
        "must stay below 2 GiB in one row");
    return total;
  }

  /**
   * Writes a row's header, id, the pair field's slot and padding, and the mask at {@code at} of
   * {@code base} (an array, or null for raw memory); returns the offset of the pair bytes.
   */
  private static int layout(Object base, long at, String complexId, int nTokens, int dim, long pairBytes,
                            byte[] mask) {
    byte[] id = complexId.getBytes(StandardCharsets.UTF_8);
    for (int k = 0; k < FIXED; k += 8) {
      Platform.putLong(base, at + k, 0L);
    }
    int cursor = FIXED;
    cursor = putBytes(base, at, 0, cursor, id, id.length);
    int[] ints = {nTokens, 0, 0, nTokens, nTokens, dim};
    for (int f = 1; f <= 6; f++) {
      Platform.putInt(base, at + 8 + 8L * f, ints[f - 1]);
    }
    int pairStart = cursor;
    Platform.putLong(base, at + 8 + 8L * TileRows.PAIR, ((long) cursor << 32) | pairBytes);
    long padded = pad(pairBytes);
    for (long k = pairBytes; k < padded; k++) {
      Platform.putByte(base, at + cursor + k, (byte) 0);
    }
    cursor += (int) padded;
    if (mask == null) {
      Platform.putLong(base, at, 1L << TileRows.MASK); // null bit of the mask
    } else {
      putBytes(base, at, TileRows.MASK, cursor, mask, mask.length);
    }
    return pairStart;
  }

  private static int putBytes(Object base, long at, int field, int cursor, byte[] src, int len) {
    Platform.putLong(base, at + 8 + 8L * field, ((long) cursor << 32) | len);
    long padded = pad(len);
    if (padded > len) {
      Platform.putLong(base, at + cursor + padded - 8, 0L); // zero the padding before the bytes cover their part
    }
    Platform.copyMemory(src, Platform.BYTE_ARRAY_OFFSET, base, at + cursor, len);
    return cursor + (int) padded;
  }

  /** Where the feed hands the pair bytes of the row begun last. */
  ComplexOut pairSink() {
    if (pairStart < 0) {
      throw new IllegalStateException("the row begun last lives in raw memory: its caller fills the pair bytes");
    }
    return (offset, src, len) -> {
      if (offset < 0 || len < 0 || offset > pairBytes - len) {
        throw new IndexOutOfBoundsException("pair bytes [" + offset + ", " + offset + " + " + len + ") of "
            + pairBytes);
      }
      HostCopy.copy(null, src, buffer, HostCopy.BYTE_ARRAY_OFFSET + pairStart + offset, len);
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
