package org.foldcp.ops.gpu.feed;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.HostCopy;
import org.foldcp.ops.tensor.PairTensor;

/**
 * A complex held as bytes in Java arrays (bf16 little-endian values, uint8 mask), the form the
 * feed reads and writes without decoding: for callers that have their data as bytes (a file's,
 * a benchmark's), and for checking the feed against the tensor API.
 */
public final class HeapComplex extends ComplexBytes {
  private final byte[] pair;

  /**
   * @param pair 2 B N^2 D bytes of bf16 values, [B][N][N][D] little-endian
   * @param mask B N^2 bytes of uint8 (nonzero = valid), or null for all valid
   */
  public HeapComplex(int batch, int n, int dim, byte[] pair, byte[] mask) {
    super(batch, n, dim, mask);
    this.pair = pair;
    InvalidInputException.require(pair.length == pairBytes(), "pair bytes", pair.length,
        "must be 2 * B * N * N * D = " + pairBytes());
    InvalidInputException.require(mask == null || mask.length == maskBytes(), "mask bytes",
        mask == null ? 0 : mask.length, "must be B * N * N = " + maskBytes());
  }

  /** The values and mask of a square tensor as bytes (one pass over its rows). */
  public static HeapComplex of(PairTensor x) {
    InvalidInputException.require(x.rows() == x.cols(), "tensor shape", x.shapeString(), "must be square (B, N, N, D)");
    int b = x.batch();
    int n = x.n();
    int d = x.dim();
    long bytes = 2L * b * n * n * d;
    InvalidInputException.require(bytes <= Integer.MAX_VALUE - 8, "tensor bytes", bytes, "must fit one Java array");
    ByteBuffer buf = ByteBuffer.allocate((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
    byte[] mask = x.hasMask() ? new byte[b * n * n] : null;
    for (int bb = 0; bb < b; bb++) {
      for (int i = 0; i < n; i++) {
        buf.asShortBuffer().position((bb * n + i) * n * d).put(x.row(bb, i));
        if (mask != null) {
          System.arraycopy(x.maskRow(bb, i), 0, mask, (bb * n + i) * n, n);
        }
      }
    }
    return new HeapComplex(b, n, d, buf.array(), mask);
  }

  /** Bytes of bf16 values (as the feed hands them over) back into a tensor of this complex's shape and mask. */
  public PairTensor tensorOf(byte[] values) {
    int batch = batch();
    int n = n();
    int dim = dim();
    byte[] mask = mask();
    PairTensor y = PairTensor.zeros(batch, n, dim);
    ByteBuffer buf = ByteBuffer.wrap(values).order(ByteOrder.LITTLE_ENDIAN);
    for (int bb = 0; bb < batch; bb++) {
      for (int i = 0; i < n; i++) {
        buf.asShortBuffer().position((bb * n + i) * n * dim).get(y.row(bb, i));
      }
    }
    if (mask != null) {
      byte[][] m = new byte[batch * n][n];
      for (int r = 0; r < batch * n; r++) {
        System.arraycopy(mask, r * n, m[r], 0, n);
      }
      y.setMask(m);
    }
    return y;
  }

  /** A sink that writes the output values into {@code dst} (at least {@link #pairBytes()} long). */
  public static ComplexOut into(byte[] dst) {
    return (offset, src, len) -> HostCopy.fromAddress(src, dst, Math.toIntExact(offset), len);
  }

  /** The bf16 values as bytes (the array itself). */
  public byte[] pair() {
    return pair;
  }

  @Override
  public void copyPair(long offset, long dst, long len) {
    HostCopy.toAddress(pair, Math.toIntExact(offset), dst, len);
  }

  @Override
  public void copyMask(long offset, long dst, long len) {
    HostCopy.toAddress(mask(), Math.toIntExact(offset), dst, len);
  }
}
