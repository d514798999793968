package org.foldcp.ops.io;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.Bf16;
import org.foldcp.ops.tensor.PairTensor;

/**
 * Pair tensors and pair masks as NumPy .npy files, the format the PyTorch side of a comparison
 * produces with {@code np.save(path, t.float().numpy())}.
 *
 * <p>Pair values are read from float32 ({@code '<f4'}) or float16 ({@code '<f2'}) and rounded to
 * bf16 (numpy has no bf16 dtype); they are written as float32, which holds every bf16 exactly.
 * A float16 input is narrowed with a warning (once per file read) that counts the values whose
 * precision changed: bf16 keeps 8 significant bits where float16 has 11, but its range holds every
 * float16 (largest 65504), so no value overflows.
 * Data is streamed in bounded chunks, never gathered into one array, because a pair tensor may
 * hold more than 2^31 values.
 */
public final class Npy {
  private static final System.Logger LOG = System.getLogger(Npy.class.getName());
  private static final List<String> PAIR_DTYPES = List.of("<f4", "<f2");
  private static final List<String> MASK_DTYPES = List.of("|u1", "|b1", "<f4");
  /** Elements per read or write; bounds the buffer whatever the row length. */
  private static final int CHUNK = 1 << 18;

  private Npy() {}

  /**
   * Reads a square pair tensor of shape (B, N, N, D), or (N, N, D) meaning B = 1, from float32
   * or float16 data in C order. The result has no mask.
   */
  public static PairTensor readPair(Path file) {
    try (FileChannel ch = FileReads.openRead(file)) {
      NpyHeader h = NpyHeader.read(ch, file);
      h.requireCOrder(file);
      String dtype = h.requireDtype(file, PAIR_DTYPES);
      long[] s = h.shape;
      String shape = FileReads.shown(NpyHeader.shapeString(s));
      InvalidInputException.require(s.length == 3 || s.length == 4, "shape of " + file, shape,
          "a pair tensor must have rank 4 (B, N, N, D) or rank 3 (N, N, D), not rank " + s.length);
      int off = s.length - 3;
      int batch = dimension(file, s, off == 1 ? s[0] : 1);
      int rows = dimension(file, s, s[off]);
      int cols = dimension(file, s, s[off + 1]);
      int dim = dimension(file, s, s[off + 2]);
      InvalidInputException.require(rows == cols, "shape of " + file, shape,
          "a pair tensor must be square (N, N): rows " + rows + " != cols " + cols);
      int itemSize = dtype.equals("<f4") ? 4 : 2;
      h.requireDataSize(FileReads.size(ch, file), itemSize, file);

      PairTensor t = PairTensor.zeros(batch, rows, cols, dim);
      long rounded = 0; // float16 values that bf16 holds only rounded
      ByteBuffer buf = ByteBuffer.allocate(Math.min(cols * dim, CHUNK) * itemSize).order(ByteOrder.LITTLE_ENDIAN);
      long pos = h.dataOffset;
      for (int b = 0; b < batch; b++) {
        for (int i = 0; i < rows; i++) {
          short[] row = t.row(b, i);
          for (int q0 = 0; q0 < row.length; q0 += CHUNK) {
            int len = Math.min(CHUNK, row.length - q0);
            buf.clear().limit(len * itemSize);
            FileReads.readFully(ch, buf, pos, file);
            pos += (long) len * itemSize;
            if (itemSize == 4) {
              for (int k = 0; k < len; k++) {
                row[q0 + k] = Bf16.fromFloat(buf.getFloat(4 * k));
              }
            } else {
              for (int k = 0; k < len; k++) {
                float f = Bf16.halfToFloat(buf.getShort(2 * k));
                short bits = Bf16.fromFloat(f);
                row[q0 + k] = bits;
                if (Bf16.toFloat(bits) != f && !Float.isNaN(f)) {
                  rounded++;
                }
              }
            }
          }
        }
      }
      if (itemSize == 2) {
        LOG.log(System.Logger.Level.WARNING, float16Warning(file, rounded, t.elementCount()));
      }
      return t;
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file, e);
    }
  }

  /** The warning a float16 pair tensor gets: its values are rounded to bf16, none overflows. */
  static String float16Warning(Path file, long rounded, long total) {
    return "pair tensor " + file + " is float16 ('<f2'); fold-cp computes in bf16, so its values are rounded to bf16"
        + " (8 significant bits instead of float16's 11): " + rounded + " of " + total + " values changed. None"
        + " overflows: bf16's range holds every float16 (largest 65504); only precision changes.";
  }

  /** Reads a pair tensor and attaches the mask from {@code maskFile} (see {@link #readMask}). */
  public static PairTensor readPair(Path file, Path maskFile) {
    PairTensor t = readPair(file);
    t.setMask(readMask(maskFile, t.batch(), t.rows(), t.cols()));
    return t;
  }

  /** Reads a square mask (B, N, N), or (N, N) when B = 1; see {@link #readMask(Path, int, int, int)}. */
  public static byte[][] readMask(Path file, int batch, int n) {
    return readMask(file, batch, n, n);
  }

  /**
   * Reads a pair mask of dtype uint8 ({@code '|u1'}), bool ({@code '|b1'}) or float32
   * ({@code '<f4'}) whose shape must be (batch, rows, cols), or (rows, cols) when batch = 1.
   * Every value must be 0 (masked) or 1 (valid).
   *
   * @return the [batch * rows][cols] layout {@link PairTensor#setMask} takes
   */
  public static byte[][] readMask(Path file, int batch, int rows, int cols) {
    try (FileChannel ch = FileReads.openRead(file)) {
      NpyHeader h = NpyHeader.read(ch, file);
      h.requireCOrder(file);
      String dtype = h.requireDtype(file, MASK_DTYPES);
      long[] s = h.shape;
      boolean full = s.length == 3 && s[0] == batch && s[1] == rows && s[2] == cols;
      boolean flat = s.length == 2 && batch == 1 && s[0] == rows && s[1] == cols;
      if (!full && !flat) {
        throw InvalidInputException.of("shape of " + file, FileReads.shown(NpyHeader.shapeString(s)),
            "the mask must have shape (B, rows, cols) = (" + batch + ", " + rows + ", " + cols + ")"
                + (batch == 1 ? " or (rows, cols) = (" + rows + ", " + cols + ")" : "")
                + " to match its pair tensor");
      }
      int itemSize = dtype.equals("<f4") ? 4 : 1;
      h.requireDataSize(FileReads.size(ch, file), itemSize, file);

      byte[][] mask = new byte[batch * rows][cols];
      ByteBuffer buf = ByteBuffer.allocate(cols * itemSize).order(ByteOrder.LITTLE_ENDIAN);
      long pos = h.dataOffset;
      for (int r = 0; r < mask.length; r++) {
        buf.clear();
        FileReads.readFully(ch, buf, pos, file);
        pos += buf.capacity();
        for (int j = 0; j < cols; j++) {
          mask[r][j] = maskValue(file, buf, itemSize, j, r / rows, r % rows);
        }
      }
      return mask;
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file, e);
    }
  }

  private static byte maskValue(Path file, ByteBuffer buf, int itemSize, int j, int b, int i) {
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
    throw InvalidInputException.of("mask[" + b + ", " + i + ", " + j + "] in " + file, bad,
        "mask values must be 0 (masked) or 1 (valid)");
  }

  /**
   * The rank of the pair tensor in {@code file}: 4 for (B, N, N, D), 3 for (N, N, D). Reads only
   * the header; {@link #writePair(Path, PairTensor, int)} writes an output in the same rank.
   */
  public static int pairRank(Path file) {
    try (FileChannel ch = FileReads.openRead(file)) {
      long[] s = NpyHeader.read(ch, file).shape;
      InvalidInputException.require(s.length == 3 || s.length == 4, "shape of " + file,
          FileReads.shown(NpyHeader.shapeString(s)),
          "a pair tensor must have rank 4 (B, N, N, D) or rank 3 (N, N, D), not rank " + s.length);
      return s.length;
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file, e);
    }
  }

  /**
   * Writes the values as float32 of shape (B, rows, cols, D): exact, since every bf16 is a float32.
   * The mask, if any, is not written; see {@link #writeMask}.
   */
  public static void writePair(Path file, PairTensor t) {
    writePair(file, t, 4);
  }

  /**
   * As {@link #writePair(Path, PairTensor)}, in {@code rank} 4 (B, rows, cols, D) or 3 (rows, cols,
   * D, for B = 1): the rank of the input the tensor came from ({@link #pairRank}), so that an
   * (N, N, D) input gives an (N, N, D) output.
   */
  public static void writePair(Path file, PairTensor t, int rank) {
    InvalidInputException.require(rank == 4 || (rank == 3 && t.batch() == 1), "rank of " + file, rank,
        "a pair tensor is written with rank 4 (B, N, N, D), or rank 3 (N, N, D) when B = 1; this one is "
            + t.shapeString());
    long[] shape = rank == 4 ? new long[] {t.batch(), t.rows(), t.cols(), t.dim()}
        : new long[] {t.rows(), t.cols(), t.dim()};
    try (AtomicWrite w = AtomicWrite.open(file)) {
      FileChannel ch = w.channel();
      FileReads.writeFully(ch, ByteBuffer.wrap(NpyHeader.encode("<f4", shape)), file);
      int rowLen = t.cols() * t.dim();
      ByteBuffer buf = ByteBuffer.allocate(Math.min(rowLen, CHUNK) * 4).order(ByteOrder.LITTLE_ENDIAN);
      for (int b = 0; b < t.batch(); b++) {
        for (int i = 0; i < t.rows(); i++) {
          short[] row = t.row(b, i);
          for (int q0 = 0; q0 < rowLen; q0 += CHUNK) {
            int len = Math.min(CHUNK, rowLen - q0);
            buf.clear();
            for (int k = 0; k < len; k++) {
              buf.putInt((row[q0 + k] & 0xffff) << 16); // bf16 bits are the top half of float32
            }
            buf.flip();
            FileReads.writeFully(ch, buf, file);
          }
        }
      }
      w.commit();
    }
  }

  /** Writes the mask as uint8 of shape (B, rows, cols); all ones when the tensor has no mask. */
  public static void writeMask(Path file, PairTensor t) {
    long[] shape = {t.batch(), t.rows(), t.cols()};
    try (AtomicWrite w = AtomicWrite.open(file)) {
      FileChannel ch = w.channel();
      FileReads.writeFully(ch, ByteBuffer.wrap(NpyHeader.encode("|u1", shape)), file);
      byte[] ones = new byte[t.cols()];
      Arrays.fill(ones, (byte) 1);
      for (int b = 0; b < t.batch(); b++) {
        for (int i = 0; i < t.rows(); i++) {
          byte[] m = t.maskRow(b, i);
          FileReads.writeFully(ch, ByteBuffer.wrap(m == null ? ones : m), file);
        }
      }
      w.commit();
    }
  }

  /** A dimension as int, refusing 0 (an empty pair tensor is always a mistake) and overflow. */
  private static int dimension(Path file, long[] shape, long value) {
    InvalidInputException.require(value >= 1 && value <= Integer.MAX_VALUE - 8, "shape of " + file,
        FileReads.shown(NpyHeader.shapeString(shape)),
        "every dimension of a pair tensor must be between 1 and 2^31 - 9");
    return (int) value;
  }
}
