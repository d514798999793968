package org.foldcp.ops.tensor;

import java.io.Serializable;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.foldcp.ops.InvalidInputException;

/**
 * A block of a pair representation: bf16 values of shape (B, rows, cols, D) and an optional
 * uint8 pair mask of shape (B, rows, cols) (1 = valid, 0 = masked; null = all valid).
 *
 * <p>A whole pair tensor has rows == cols == N; a context-parallel tile has the extent of its
 * shard. Storage is one {@code short[]} of cols*D values per (batch, row), so tensors far beyond
 * 2^31 elements (N = 8192, D = 256) fit, and a row is the unit every stage works on.
 */
public final class PairTensor implements Serializable {
  private static final long serialVersionUID = 1L;

  private final int batch;
  private final int rows;
  private final int cols;
  private final int dim;
  private final short[][] data; // [b * rows + i][j * dim + c]
  private byte[][] mask; // [b * rows + i][j], or null when every position is valid

  private PairTensor(int batch, int rows, int cols, int dim, short[][] data, byte[][] mask) {
    this.batch = batch;
    this.rows = rows;
    this.cols = cols;
    this.dim = dim;
    this.data = data;
    this.mask = mask;
  }

  /** A zero-filled (B, rows, cols, D) block without a mask. */
  public static PairTensor zeros(int batch, int rows, int cols, int dim) {
    checkShape(batch, rows, cols, dim);
    short[][] data = new short[batch * rows][];
    for (int r = 0; r < data.length; r++) {
      data[r] = new short[Math.multiplyExact(cols, dim)];
    }
    return new PairTensor(batch, rows, cols, dim, data, null);
  }

  /** A zero-filled square (B, N, N, D) pair tensor. */
  public static PairTensor zeros(int batch, int n, int dim) {
    return zeros(batch, n, n, dim);
  }

  /** Wraps bf16 rows without copying; every row must hold cols*D values. */
  public static PairTensor wrap(int batch, int rows, int cols, int dim, short[][] data, byte[][] mask) {
    checkShape(batch, rows, cols, dim);
    InvalidInputException.require(data.length == batch * rows, "pair row count", data.length,
        "must equal B * rows = " + batch + " * " + rows);
    for (int r = 0; r < data.length; r++) {
      InvalidInputException.require(data[r] != null && data[r].length == cols * dim,
          "pair row " + r + " length", data[r] == null ? "null" : data[r].length,
          "must equal cols * D = " + cols + " * " + dim);
    }
    PairTensor t = new PairTensor(batch, rows, cols, dim, data, null);
    t.setMask(mask);
    return t;
  }

  /** Converts a dense float array laid out [B][N][N][D] to a square bf16 pair tensor. */
  public static PairTensor fromFloats(float[] values, int batch, int n, int dim) {
    checkShape(batch, n, n, dim);
    long expect = (long) batch * n * n * dim;
    InvalidInputException.require(values.length == expect, "float value count", values.length,
        "must equal B*N*N*D = " + expect + " for (B, N, D) = (" + batch + ", " + n + ", " + dim + ")");
    PairTensor t = zeros(batch, n, n, dim);
    int rowLen = n * dim;
    for (int r = 0; r < batch * n; r++) {
      short[] row = t.data[r];
      int off = r * rowLen;
      for (int q = 0; q < rowLen; q++) {
        row[q] = Bf16.fromFloat(values[off + q]);
      }
    }
    return t;
  }

  /**
   * Fresh random data: values ~ N(0, 1) rounded to bf16 and, when {@code maskedFraction > 0},
   * a mask where roughly that fraction of positions is 0.
   */
  public static PairTensor random(int batch, int n, int dim, long seed, double maskedFraction) {
    PairTensor t = zeros(batch, n, n, dim);
    SplittableRandom rng = new SplittableRandom(seed);
    for (short[] row : t.data) {
      for (int q = 0; q < row.length; q++) {
        row[q] = Bf16.fromFloat((float) gaussian(rng));
      }
    }
    if (maskedFraction > 0) {
      byte[][] m = new byte[batch * n][n];
      for (byte[] mr : m) {
        for (int j = 0; j < n; j++) {
          mr[j] = rng.nextDouble() < maskedFraction ? (byte) 0 : (byte) 1;
        }
      }
      t.setMask(m);
    }
    return t;
  }

  static double gaussian(SplittableRandom rng) {
    double u1 = rng.nextDouble();
    double u2 = rng.nextDouble();
    return Math.sqrt(-2.0 * Math.log(1.0 - u1)) * Math.cos(2.0 * Math.PI * u2);
  }

  private static void checkShape(int batch, int rows, int cols, int dim) {
    InvalidInputException.require(batch >= 1, "B", batch, "batch size must be >= 1");
    InvalidInputException.require(rows >= 1, "N (rows)", rows, "the number of tokens must be >= 1");
    InvalidInputException.require(cols >= 1, "N (cols)", cols, "the number of tokens must be >= 1");
    InvalidInputException.require(dim >= 1, "D", dim, "the pair channel count must be >= 1");
    InvalidInputException.require((long) batch * rows <= Integer.MAX_VALUE - 8
            && (long) cols * dim <= Integer.MAX_VALUE - 8,
        "shape", "(" + batch + ", " + rows + ", " + cols + ", " + dim + ")",
        "B*rows and cols*D must each fit in a Java array");
  }

  public int batch() { return batch; }

  public int rows() { return rows; }

  public int cols() { return cols; }

  public int dim() { return dim; }

  /** N for a square pair tensor. */
  public int n() {
    InvalidInputException.require(rows == cols, "shape", shapeString(),
        "a whole pair tensor must be square (rows == cols)");
    return rows;
  }

  public boolean isSquare() { return rows == cols; }

  public long elementCount() { return (long) batch * rows * cols * dim; }

  public String shapeString() {
    return "(" + batch + ", " + rows + ", " + cols + ", " + dim + ")";
  }

  /** The bf16 values of row i of batch b, laid out [j][c]; live storage, not a copy. */
  public short[] row(int b, int i) { return data[b * rows + i]; }

  /** The mask of row i of batch b ([j], 1 = valid), or null when the tensor has no mask. */
  public byte[] maskRow(int b, int i) { return mask == null ? null : mask[b * rows + i]; }

  public boolean hasMask() { return mask != null; }

  /** Whether some position is masked out (a mask whose every entry is 1 masks nothing). */
  public boolean anyMasked() {
    if (mask != null) {
      for (byte[] r : mask) {
        for (byte v : r) {
          if (v == 0) {
            return true;
          }
        }
      }
    }
    return false;
  }

  public boolean valid(int b, int i, int j) {
    return mask == null || mask[b * rows + i][j] != 0;
  }

  public float get(int b, int i, int j, int c) {
    return Bf16.toFloat(data[b * rows + i][j * dim + c]);
  }

  public void set(int b, int i, int j, int c, float v) {
    data[b * rows + i][j * dim + c] = Bf16.fromFloat(v);
  }

  public short getBits(int b, int i, int j, int c) { return data[b * rows + i][j * dim + c]; }

  public void setBits(int b, int i, int j, int c, short bits) { data[b * rows + i][j * dim + c] = bits; }

  /** Replaces the mask ([B*rows][cols] of 0/1, null = all valid); values other than 0/1 are refused. */
  public void setMask(byte[][] newMask) {
    if (newMask != null) {
      InvalidInputException.require(newMask.length == batch * rows, "mask row count", newMask.length,
          "the mask must have shape (B, rows, cols) = (" + batch + ", " + rows + ", " + cols + ")");
      for (int r = 0; r < newMask.length; r++) {
        InvalidInputException.require(newMask[r] != null && newMask[r].length == cols,
            "mask row " + r + " length", newMask[r] == null ? "null" : newMask[r].length,
            "must equal cols = " + cols);
        for (int j = 0; j < cols; j++) {
          byte v = newMask[r][j];
          if (v != 0 && v != 1) { // not require(): its message would be built for every position
            throw InvalidInputException.of("mask[" + (r / rows) + ", " + (r % rows) + ", " + j + "]", v & 0xff,
                "mask values must be 0 (masked) or 1 (valid)");
          }
        }
      }
    }
    this.mask = newMask;
  }

  /** Sets one mask entry, creating an all-valid mask first if there is none. */
  public void setValid(int b, int i, int j, boolean valid) {
    if (mask == null) {
      byte[][] m = new byte[batch * rows][cols];
      for (byte[] r : m) {
        Arrays.fill(r, (byte) 1);
      }
      mask = m;
    }
    mask[b * rows + i][j] = valid ? (byte) 1 : (byte) 0;
  }

  /** Dense float copy laid out [B][rows][cols][D]; only for tensors below 2^31 elements. */
  public float[] toFloats() {
    long count = elementCount();
    InvalidInputException.require(count <= Integer.MAX_VALUE - 8, "element count", count,
        "toFloats() needs fewer than 2^31 elements; read rows with row(b, i) instead");
    float[] out = new float[(int) count];
    int rowLen = cols * dim;
    for (int r = 0; r < data.length; r++) {
      short[] row = data[r];
      int off = r * rowLen;
      for (int q = 0; q < rowLen; q++) {
        out[off + q] = Bf16.toFloat(row[q]);
      }
    }
    return out;
  }

  /** A copy of the mask rows, or null when there is no mask. */
  public byte[][] maskCopy() {
    if (mask == null) {
      return null;
    }
    byte[][] m = new byte[mask.length][];
    for (int r = 0; r < m.length; r++) {
      m[r] = mask[r].clone();
    }
    return m;
  }

  /** A deep copy (values and mask). */
  public PairTensor copy() {
    short[][] d = new short[data.length][];
    for (int r = 0; r < d.length; r++) {
      d[r] = data[r].clone();
    }
    byte[][] m = null;
    if (mask != null) {
      m = new byte[mask.length][];
      for (int r = 0; r < m.length; r++) {
        m[r] = mask[r].clone();
      }
    }
    return new PairTensor(batch, rows, cols, dim, d, m);
  }

  /** Batch element b as a (1, rows, cols, D) block (a copy). */
  public PairTensor batchElement(int b) {
    InvalidInputException.require(b >= 0 && b < batch, "batch index", b, "must lie in [0, " + batch + ")");
    PairTensor out = zeros(1, rows, cols, dim);
    for (int i = 0; i < rows; i++) {
      System.arraycopy(row(b, i), 0, out.row(0, i), 0, cols * dim);
    }
    if (mask != null) {
      byte[][] m = new byte[rows][];
      for (int i = 0; i < rows; i++) {
        m[i] = mask[b * rows + i].clone();
      }
      out.mask = m;
    }
    return out;
  }

  /** Copies the (rows x cols) window starting at (row0, col0) of every batch into a new block. */
  public PairTensor window(int row0, int col0, int nRows, int nCols) {
    InvalidInputException.require(row0 >= 0 && nRows >= 1 && row0 <= rows - nRows, "row window",
        "[" + row0 + ", " + ((long) row0 + nRows) + ")", "must lie inside [0, " + rows + ")");
    InvalidInputException.require(col0 >= 0 && nCols >= 1 && col0 <= cols - nCols, "column window",
        "[" + col0 + ", " + ((long) col0 + nCols) + ")", "must lie inside [0, " + cols + ")");
    PairTensor out = zeros(batch, nRows, nCols, dim);
    for (int b = 0; b < batch; b++) {
      for (int i = 0; i < nRows; i++) {
        System.arraycopy(row(b, row0 + i), col0 * dim, out.row(b, i), 0, nCols * dim);
        byte[] m = maskRow(b, row0 + i);
        if (m != null) {
          if (out.mask == null) {
            out.mask = new byte[batch * nRows][nCols];
          }
          System.arraycopy(m, col0, out.mask[b * nRows + i], 0, nCols);
        }
      }
    }
    return out;
  }

  /** Writes {@code block} into this tensor at (row0, col0), values and mask. */
  public void paste(PairTensor block, int row0, int col0) {
    InvalidInputException.require(block.batch == batch && block.dim == dim, "block shape", block.shapeString(),
        "must match B = " + batch + " and D = " + dim + " of the target " + shapeString());
    InvalidInputException.require(row0 >= 0 && col0 >= 0 && row0 <= rows - block.rows && col0 <= cols - block.cols,
        "block origin", "(" + row0 + ", " + col0 + ")",
        "block " + block.shapeString() + " must fit inside " + shapeString());
    for (int b = 0; b < batch; b++) {
      for (int i = 0; i < block.rows; i++) {
        System.arraycopy(block.row(b, i), 0, row(b, row0 + i), col0 * dim, block.cols * dim);
        byte[] m = block.maskRow(b, i);
        if (m != null || mask != null) {
          for (int j = 0; j < block.cols; j++) {
            boolean v = m == null || m[j] != 0;
            if (!v || mask != null) {
              setValid(b, row0 + i, col0 + j, v);
            }
          }
        }
      }
    }
  }

  /** Bitwise equality of values, and equality of the effective masks. */
  public boolean sameAs(PairTensor o) {
    if (o.batch != batch || o.rows != rows || o.cols != cols || o.dim != dim) {
      return false;
    }
    for (int r = 0; r < data.length; r++) {
      if (!Arrays.equals(data[r], o.data[r])) {
        return false;
      }
      for (int j = 0; j < cols; j++) {
        if (valid(r / rows, r % rows, j) != o.valid(r / rows, r % rows, j)) {
          return false;
        }
      }
    }
    return true;
  }

  @Override
  public String toString() {
    return "PairTensor" + shapeString() + (mask == null ? "" : " masked");
  }
}
