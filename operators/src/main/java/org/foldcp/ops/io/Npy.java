package org.foldcp.ops.io;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.Arrays;
import org.foldcp.ops.InvalidInputException;
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
  /** Elements per read or write; bounds the buffer whatever the row length. */
  private static final int CHUNK = 1 << 18;

  private Npy() {}

  /**
   * Reads a square pair tensor of shape (B, N, N, D), or (N, N, D) meaning B = 1, from float32
   * or float16 data in C order. The result has no mask.
   */
  public static PairTensor readPair(Path file) {
    try (FileChannel ch = FileReads.openRead(file)) {
      NpyPairFile f = NpyPairFile.open(ch, file);
      PairTensor t = PairTensor.zeros(f.batch(), f.n(), f.n(), f.dim());
      for (int b = 0; b < f.batch(); b++) {
        f.readRows(b, 0, t, b);
      }
      if (f.isFloat16()) {
        LOG.log(System.Logger.Level.WARNING, float16Warning(file, f.roundedValues(), t.elementCount()));
      }
      return t;
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file, e);
    }
  }

  /** The warning a float16 pair tensor gets: its values are rounded to bf16, none overflows. */
  public static String float16Warning(Object file, long rounded, long total) {
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
      NpyMaskFile m = NpyMaskFile.open(ch, file, batch, rows, cols); // checks the shape before we allocate
      byte[][] mask = new byte[batch * rows][cols];
      for (int b = 0; b < batch; b++) {
        m.readRows(b, 0, rows, mask, b * rows);
      }
      return mask;
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file, e);
    }
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
}
