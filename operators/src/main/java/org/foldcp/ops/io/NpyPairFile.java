package org.foldcp.ops.io;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SeekableByteChannel;
import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.Bf16;
import org.foldcp.ops.tensor.PairTensor;

/**
 * An open .npy pair tensor, (B, N, N, D) or (N, N, D), read a band of rows at a time: the header
 * is checked when it opens (dtype float32 or float16, C order, rank, square, data size), and
 * {@link #readRows} then converts any rows to bf16 through a buffer of bounded size. The reader of
 * a whole file ({@link Npy#readPair}) and the readers of tiles on Spark's executors share it, so
 * both round every value the same way.
 *
 * <p>It does not own the channel; the caller closes it.
 */
public final class NpyPairFile {
  private static final List<String> PAIR_DTYPES = List.of("<f4", "<f2");
  /** Elements per read; bounds the buffer whatever the row length. */
  private static final int CHUNK = 1 << 18;

  private final SeekableByteChannel ch;
  private final Object source;
  private final NpyHeader header;
  private final int batch;
  private final int n;
  private final int dim;
  private final int itemSize;
  private final ByteBuffer buf;
  private long rounded;

  private NpyPairFile(SeekableByteChannel ch, Object source, NpyHeader header, int batch, int n, int dim,
                      int itemSize) {
    this.ch = ch;
    this.source = source;
    this.header = header;
    this.batch = batch;
    this.n = n;
    this.dim = dim;
    this.itemSize = itemSize;
    this.buf = ByteBuffer.allocate((int) Math.min((long) n * dim, CHUNK) * itemSize).order(ByteOrder.LITTLE_ENDIAN);
  }

  /**
   * Reads and checks the header of the pair tensor in {@code ch}; {@code source} names the file in
   * messages (a Path, a URI).
   */
  public static NpyPairFile open(SeekableByteChannel ch, Object source) {
    NpyHeader h = NpyHeader.read(ch, source);
    h.requireCOrder(source);
    String dtype = h.requireDtype(source, PAIR_DTYPES);
    long[] s = h.shape;
    String shape = FileReads.shown(NpyHeader.shapeString(s));
    InvalidInputException.require(s.length == 3 || s.length == 4, "shape of " + source, shape,
        "a pair tensor must have rank 4 (B, N, N, D) or rank 3 (N, N, D), not rank " + s.length);
    int off = s.length - 3;
    int batch = dimension(source, s, off == 1 ? s[0] : 1);
    int rows = dimension(source, s, s[off]);
    int cols = dimension(source, s, s[off + 1]);
    int dim = dimension(source, s, s[off + 2]);
    InvalidInputException.require(rows == cols, "shape of " + source, shape,
        "a pair tensor must be square (N, N): rows " + rows + " != cols " + cols);
    int itemSize = dtype.equals("<f4") ? 4 : 2;
    h.requireDataSize(FileReads.size(ch, source), itemSize, source);
    return new NpyPairFile(ch, source, h, batch, rows, dim, itemSize);
  }

  public int batch() {
    return batch;
  }

  /** N, the tokens of each complex (rows and columns). */
  public int n() {
    return n;
  }

  public int dim() {
    return dim;
  }

  /** 3 for (N, N, D), 4 for (B, N, N, D). */
  public int rank() {
    return header.shape.length;
  }

  /** Whether the data is float16 (rounded to bf16 as it is read) rather than float32 (exact). */
  public boolean isFloat16() {
    return itemSize == 2;
  }

  /** Float16 values read so far whose bf16 rounding changed them (always 0 for float32). */
  public long roundedValues() {
    return rounded;
  }

  /**
   * Fills rows {@code [0, dst.rows())} of batch element {@code dstB} of {@code dst} with rows
   * {@code [i0, i0 + dst.rows())} of batch element {@code b} of the file, rounded to bf16.
   */
  public void readRows(int b, int i0, PairTensor dst, int dstB) {
    if (b < 0 || b >= batch || i0 < 0 || i0 + dst.rows() > n || dst.cols() != n || dst.dim() != dim) {
      throw new IllegalArgumentException("rows [" + i0 + ", " + (i0 + dst.rows()) + ") of batch element " + b
          + " into a " + dst.shapeString() + " tensor: outside the (" + batch + ", " + n + ", " + n + ", " + dim
          + ") tensor of " + source);
    }
    long rowLen = (long) n * dim;
    long pos = header.dataOffset + ((long) b * n + i0) * rowLen * itemSize;
    for (int i = 0; i < dst.rows(); i++) {
      short[] row = dst.row(dstB, i);
      for (int q0 = 0; q0 < row.length; q0 += CHUNK) {
        int len = Math.min(CHUNK, row.length - q0);
        buf.clear().limit(len * itemSize);
        FileReads.readFully(ch, buf, pos, source);
        pos += (long) len * itemSize;
        convert(row, q0, len);
      }
    }
  }

  private void convert(short[] row, int q0, int len) {
    if (itemSize == 4) {
      for (int k = 0; k < len; k++) {
        row[q0 + k] = Bf16.fromFloat(buf.getFloat(4 * k));
      }
      return;
    }
    for (int k = 0; k < len; k++) {
      float f = Bf16.halfToFloat(buf.getShort(2 * k));
      short bits = Bf16.fromFloat(f);
      row[q0 + k] = bits;
      if (Bf16.toFloat(bits) != f && !Float.isNaN(f)) {
        rounded++;
      }
    }
  }

  /** A dimension as int, refusing 0 (an empty pair tensor is always a mistake) and overflow. */
  private static int dimension(Object source, long[] shape, long value) {
    InvalidInputException.require(value >= 1 && value <= Integer.MAX_VALUE - 8, "shape of " + source,
        FileReads.shown(NpyHeader.shapeString(shape)),
        "every dimension of a pair tensor must be between 1 and 2^31 - 9");
    return (int) value;
  }
}
