package org.foldcp.ops.io;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.foldcp.ops.InvalidInputException;

/**
 * A float32 .npy pair tensor written to a stream a row at a time, in the layout of
 * {@link Npy#writePair(java.nio.file.Path, org.foldcp.ops.tensor.PairTensor, int)}: for writers
 * that cannot seek (HDFS, S3) and get a complex's rows in order. {@link #finish} checks that
 * every row came, so a file is never completed short.
 */
public final class NpyPairOutput {
  /** Values per write; bounds the buffer whatever the row length. */
  private static final int CHUNK = 1 << 18;

  private final OutputStream out;
  private final Object target;
  private final int n;
  private final int dim;
  private final long rowLen;
  private final long rowsWanted;
  private final ByteBuffer buf;
  private long valuesWritten;

  /**
   * Writes the header of a (batch, n, n, dim) tensor, or (n, n, dim) for {@code rank} 3 and
   * batch 1, to {@code out}; {@code target} names the file in messages.
   */
  public NpyPairOutput(OutputStream out, Object target, int rank, int batch, int n, int dim) throws IOException {
    InvalidInputException.require(rank == 4 || (rank == 3 && batch == 1), "rank of " + target, rank,
        "a pair tensor is written with rank 4 (B, N, N, D), or rank 3 (N, N, D) when B = 1; this one is ("
            + batch + ", " + n + ", " + n + ", " + dim + ")");
    this.out = out;
    this.target = target;
    this.n = n;
    this.dim = dim;
    this.rowLen = (long) n * dim;
    this.rowsWanted = (long) batch * n;
    this.buf = ByteBuffer.allocate((int) Math.min(rowLen, CHUNK) * 4).order(ByteOrder.LITTLE_ENDIAN);
    long[] shape = rank == 4 ? new long[] {batch, n, n, dim} : new long[] {n, n, dim};
    out.write(NpyHeader.encode("<f4", shape));
  }

  /** Writes {@code len} bf16 values of the next row, starting at {@code src[off]}; a row may come in pieces. */
  public void write(short[] src, int off, int len) throws IOException {
    for (int q0 = 0; q0 < len; q0 += CHUNK) {
      int m = Math.min(CHUNK, len - q0);
      buf.clear();
      for (int k = 0; k < m; k++) {
        buf.putInt((src[off + q0 + k] & 0xffff) << 16); // bf16 bits are the top half of float32
      }
      out.write(buf.array(), 0, buf.position());
    }
    valuesWritten += len;
  }

  /** N of the tensor being written. */
  public int n() {
    return n;
  }

  /** D of the tensor being written. */
  public int dim() {
    return dim;
  }

  /** Fails unless exactly every value of the tensor has been written. */
  public void finish() {
    InvalidInputException.require(valuesWritten == rowsWanted * rowLen, "rows written to " + target,
        valuesWritten / (double) rowLen, "a pair tensor of " + rowsWanted + " rows needs all of them, whole");
  }
}
