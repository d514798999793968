package org.foldcp.ops.io;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SeekableByteChannel;
import java.util.List;
import org.foldcp.ops.InvalidInputException;

/**
 * An open .npy pair mask of dtype uint8, bool or float32, shape (B, rows, cols) or (rows, cols)
 * when B = 1, checked against its pair tensor's shape when it opens and read a band of rows at a
 * time (every value must be 0 or 1). Shared by {@link Npy#readMask} and the tile readers on
 * Spark's executors. It does not own the channel.
 */
public final class NpyMaskFile {
  private static final List<String> MASK_DTYPES = List.of("|u1", "|b1", "<f4");

  private final SeekableByteChannel ch;
  private final Object source;
  private final long dataOffset;
  private final int rows;
  private final int cols;
  private final int itemSize;
  private final ByteBuffer buf;

  private NpyMaskFile(SeekableByteChannel ch, Object source, long dataOffset, int rows, int cols, int itemSize) {
    this.ch = ch;
    this.source = source;
    this.dataOffset = dataOffset;
    this.rows = rows;
    this.cols = cols;
    this.itemSize = itemSize;
    this.buf = ByteBuffer.allocate(cols * itemSize).order(ByteOrder.LITTLE_ENDIAN);
  }

  /** Reads and checks the header of the mask in {@code ch} for a (batch, rows, cols) pair tensor. */
  public static NpyMaskFile open(SeekableByteChannel ch, Object source, int batch, int rows, int cols) {
    NpyHeader h = NpyHeader.read(ch, source);
    h.requireCOrder(source);
    String dtype = h.requireDtype(source, MASK_DTYPES);
    long[] s = h.shape;
    boolean full = s.length == 3 && s[0] == batch && s[1] == rows && s[2] == cols;
    boolean flat = s.length == 2 && batch == 1 && s[0] == rows && s[1] == cols;
    if (!full && !flat) {
      throw InvalidInputException.of("shape of " + source, FileReads.shown(NpyHeader.shapeString(s)),
          "the mask must have shape (B, rows, cols) = (" + batch + ", " + rows + ", " + cols + ")"
              + (batch == 1 ? " or (rows, cols) = (" + rows + ", " + cols + ")" : "")
              + " to match its pair tensor");
    }
    int itemSize = dtype.equals("<f4") ? 4 : 1;
    h.requireDataSize(FileReads.size(ch, source), itemSize, source);
    return new NpyMaskFile(ch, source, h.dataOffset, rows, cols, itemSize);
  }

  /**
   * Fills {@code dst[dst0 + k]} (each of length cols) with row {@code i0 + k} of batch element
   * {@code b}, for k in [0, count).
   */
  public void readRows(int b, int i0, int count, byte[][] dst, int dst0) {
    long pos = dataOffset + ((long) b * rows + i0) * cols * itemSize;
    for (int k = 0; k < count; k++) {
      buf.clear();
      FileReads.readFully(ch, buf, pos, source);
      pos += buf.capacity();
      for (int j = 0; j < cols; j++) {
        dst[dst0 + k][j] = value(j, b, i0 + k);
      }
    }
  }

  private byte value(int j, int b, int i) {
    Object bad;
    if (itemSize == 1) {
      int v = buf.get(j) & 0xff;
      if (v <= 1) {
        return (byte) v;
      }
      bad = v;
    } else {
      float v = buf.getFloat(4 * j);
      if (v == 0f || v == 1f) {
        return v == 1f ? (byte) 1 : (byte) 0;
      }
      bad = v;
    }
    throw InvalidInputException.of("mask[" + b + ", " + i + ", " + j + "] in " + source, bad,
        "mask values must be 0 (masked) or 1 (valid)");
  }
}
