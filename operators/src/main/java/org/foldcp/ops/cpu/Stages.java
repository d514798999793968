package org.foldcp.ops.cpu;

import org.foldcp.ops.tensor.PairTensor;

/**
 * The per-row building blocks of a TriMul layer on the CPU. Each works on one row of a pair
 * block (a whole tensor or a CP tile), so the single-rank backend and every context-parallel
 * route run the very same arithmetic and differ only in where a and b go and where z comes from.
 * The arithmetic is {@link CpuKernels}' (native or Java, the same bits), and no value depends
 * on an element's position in its row, tile or vector.
 */
public final class Stages {
  private Stages() {}

  /** Receives the gated, masked projections of one tile row for a channel range. */
  public interface ProjectionSink {
    /**
     * @param localRow row of the tile (0-based)
     * @param c0 first channel of the range (absolute, 0..H-1)
     * @param a a[(c - c0) * cols + j] for the tile's columns j
     * @param b b[(c - c0) * cols + j]
     * @param cols the tile's columns
     */
    void accept(int localRow, int c0, float[] a, float[] b, int cols);
  }

  /** Scratch buffers of one thread, sized for (cols, D, H, channel range); all flat row-major. */
  public static final class Scratch {
    /** LN_in of a row's tokens, [j][c]. */
    final float[] xn;
    /** The input projections of a row, rows 4q + r of cols values ({@link PreparedLayer#inW}). */
    final float[] proj;
    /** Gated a and b of a row, [q][j]. */
    final float[] a;
    final float[] b;
    /** LN_out ([j][c], H channels), p_out and g_out results ([j][c], D channels) of a row. */
    final float[] lz;
    final float[] po;
    final float[] go;
    /** z of one row, token-major: zt[j * H + c], filled by whoever brings z (local gather or reshard). */
    public final float[] zt;
    private final int cols;
    private final int dim;
    private final int hidden;
    private final int channels;

    private static final ThreadLocal<Scratch> PER_THREAD = new ThreadLocal<>();

    /** This thread's scratch for the given sizes, reallocated only when the sizes change. */
    public static Scratch local(int cols, int dim, int hidden, int channels) {
      Scratch s = PER_THREAD.get();
      if (s == null || s.cols != cols || s.dim != dim || s.hidden != hidden || s.channels != channels) {
        s = new Scratch(cols, dim, hidden, channels);
        PER_THREAD.set(s);
      }
      return s;
    }

    public Scratch(int cols, int dim, int hidden, int channels) {
      this.cols = cols;
      this.dim = dim;
      this.hidden = hidden;
      this.channels = channels;
      zt = new float[cols * hidden];
      xn = new float[cols * dim];
      proj = new float[4 * channels * cols];
      a = new float[channels * cols];
      b = new float[channels * cols];
      lz = new float[cols * hidden];
      po = new float[cols * dim];
      go = new float[cols * dim];
    }
  }

  /**
   * LN_in, projection and gating of row {@code i} of batch {@code b} of {@code x}, for channels
   * [c0, c1) of H: a = sigmoid(xn g_in^T) * (xn p_in^T) * m, and the same for b with rows H + c.
   */
  public static void projectRow(PairTensor x, int b, int i, PreparedLayer l, int c0, int c1,
                                Scratch s, CpuKernels k, ProjectionSink sink) {
    int cols = x.cols();
    int d = l.dim;
    int cc = c1 - c0;
    k.layerNormBf16(x.row(b, i), 0, cols, d, l.normInW, l.normInB, l.eps, s.xn);
    // Channels x tokens: each output row is one projection of one channel across the tile row,
    // the channel-major order the triangle product wants. The four projections of the channel
    // range are one GEMM (interleaved weight rows), so xn is packed once.
    k.gemm(false, true, 4 * cc, cols, d, l.inW, 4 * c0 * d, d, s.xn, 0, d, s.proj, 0, cols, false);
    k.gateProjection(s.proj, cc, cols, l.inB, 4 * c0, x.maskRow(b, i), s.a, s.b);
    sink.accept(i, c0, s.a, s.b, cols);
  }

  /**
   * LN_out, output projection, gate and residual for row {@code i}: z[j * H + c] holds the
   * triangle product of the row's tokens (token-major); the bf16 result goes to row i of
   * {@code out}.
   */
  public static void outputRow(PairTensor x, int b, int i, PreparedLayer l, float[] z, Scratch s, CpuKernels k,
                               PairTensor out) {
    outputRow(x, b, i, l, z, s, k, out.row(b, i));
  }

  /** As the form above, into {@code outRow} (cols * D values) instead of row i of a tensor. */
  public static void outputRow(PairTensor x, int b, int i, PreparedLayer l, float[] z, Scratch s, CpuKernels k,
                               short[] outRow) {
    int cols = x.cols();
    int d = l.dim;
    int h = l.hidden;
    short[] xRow = x.row(b, i);
    k.layerNorm(z, cols, h, l.normOutW, l.normOutB, l.eps, s.lz);
    k.layerNormBf16(xRow, 0, cols, d, l.normInW, l.normInB, l.eps, s.xn);
    k.gemm(false, true, cols, d, h, s.lz, 0, h, l.pOut, 0, h, s.po, 0, d, false);
    k.gemm(false, true, cols, d, d, s.xn, 0, d, l.gOut, 0, d, s.go, 0, d, false);
    k.gateOutput(s.po, s.go, cols, d, l.pOutB, l.gOutB, xRow, 0, l.residual, outRow, 0);
  }
}
