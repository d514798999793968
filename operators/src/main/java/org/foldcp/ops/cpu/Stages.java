package org.foldcp.ops.cpu;

import org.foldcp.ops.tensor.Bf16;
import org.foldcp.ops.tensor.PairTensor;

/**
 * The per-row building blocks of a TriMul layer on the CPU. Each works on one row of a pair
 * block (a whole tensor or a CP tile), so the single-rank backend and every context-parallel
 * route run the very same arithmetic and differ only in where a and b go and where z comes from.
 * The gates use {@link Simd#sigmoid(float)} (fp32, ~1e-7 relative error), whose value does not
 * depend on an element's position either.
 */
public final class Stages {
  private Stages() {}

  /** Receives the gated, masked projections of one tile row for a channel range. */
  public interface ProjectionSink {
    /**
     * @param localRow row of the tile (0-based)
     * @param c0 first channel of the range (absolute, 0..D-1)
     * @param a a[c - c0][j] for the tile's columns j
     * @param b b[c - c0][j]
     */
    void accept(int localRow, int c0, float[][] a, float[][] b);
  }

  /** Scratch buffers of one thread, sized for (cols, D, channel range). */
  public static final class Scratch {
    final float[][] xn;
    final float[][] pa;
    final float[][] ga;
    final float[][] pb;
    final float[][] gb;
    final float[][] lz;
    final float[][] po;
    final float[][] go;
    /** Row views for the one projection GEMM of a row: weight rows in, [pa; ga; pb; gb] rows out. */
    final float[][] projW;
    final float[][] projOut;
    /** Row views of z for the local gather: zRows[c] = z[c][i]. */
    final float[][] zRows;
    /** z of one row, token-major [j][c], filled by whoever brings z (local gather or reshard). */
    public final float[][] zt;
    private final int cols;
    private final int dim;
    private final int channels;

    private static final ThreadLocal<Scratch> PER_THREAD = new ThreadLocal<>();

    /** This thread's scratch for the given sizes, reallocated only when the sizes change. */
    public static Scratch local(int cols, int dim, int channels) {
      Scratch s = PER_THREAD.get();
      if (s == null || s.cols != cols || s.dim != dim || s.channels != channels) {
        s = new Scratch(cols, dim, channels);
        PER_THREAD.set(s);
      }
      return s;
    }

    public Scratch(int cols, int dim, int channels) {
      this.cols = cols;
      this.dim = dim;
      this.channels = channels;
      zt = new float[cols][dim];
      xn = new float[cols][dim];
      pa = new float[channels][cols];
      ga = new float[channels][cols];
      pb = new float[channels][cols];
      gb = new float[channels][cols];
      lz = new float[cols][dim];
      po = new float[cols][dim];
      go = new float[cols][dim];
      projW = new float[4 * channels][];
      projOut = new float[4 * channels][];
      zRows = new float[dim][];
    }
  }

  /** LayerNorm over the D channels of every token of one row of x, into xn[j][c]. */
  static void layerNormRow(short[] xRow, int cols, int dim, float[] w, float[] bias, float eps, float[][] xn) {
    for (int j = 0; j < cols; j++) {
      float[] out = xn[j];
      int off = j * dim;
      for (int c = 0; c < dim; c++) {
        out[c] = Bf16.toFloat(xRow[off + c]);
      }
      layerNorm(out, dim, w, bias, eps, out);
    }
  }

  /** out[c] = LayerNorm(v)[c] over v[0..dim) (out may be v). */
  static void layerNorm(float[] v, int dim, float[] w, float[] bias, float eps, float[] out) {
    float mean = sum8(v, dim) / dim;
    float var = sumSquares8(v, dim, mean) / dim;
    float inv = (float) (1.0 / Math.sqrt(var + eps));
    for (int c = 0; c < dim; c++) {
      out[c] = (v[c] - mean) * inv * w[c] + bias[c];
    }
  }

  /**
   * sum over c < n of v[c], in eight interleaved partial sums (c mod 8) added in a fixed tree:
   * eight independent chains instead of one, in an order that depends only on c (never on where
   * the token lies).
   */
  static float sum8(float[] v, int n) {
    float s0 = 0f;
    float s1 = 0f;
    float s2 = 0f;
    float s3 = 0f;
    float s4 = 0f;
    float s5 = 0f;
    float s6 = 0f;
    float s7 = 0f;
    int c = 0;
    for (; c + 8 <= n; c += 8) {
      s0 += v[c];
      s1 += v[c + 1];
      s2 += v[c + 2];
      s3 += v[c + 3];
      s4 += v[c + 4];
      s5 += v[c + 5];
      s6 += v[c + 6];
      s7 += v[c + 7];
    }
    for (; c < n; c++) {
      s0 += v[c];
    }
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
  }

  /** sum over c < n of (v[c] - center)^2, in the order of {@link #sum8}. */
  static float sumSquares8(float[] v, int n, float center) {
    float s0 = 0f;
    float s1 = 0f;
    float s2 = 0f;
    float s3 = 0f;
    float s4 = 0f;
    float s5 = 0f;
    float s6 = 0f;
    float s7 = 0f;
    int c = 0;
    for (; c + 8 <= n; c += 8) {
      float d0 = v[c] - center;
      float d1 = v[c + 1] - center;
      float d2 = v[c + 2] - center;
      float d3 = v[c + 3] - center;
      float d4 = v[c + 4] - center;
      float d5 = v[c + 5] - center;
      float d6 = v[c + 6] - center;
      float d7 = v[c + 7] - center;
      s0 += d0 * d0;
      s1 += d1 * d1;
      s2 += d2 * d2;
      s3 += d3 * d3;
      s4 += d4 * d4;
      s5 += d5 * d5;
      s6 += d6 * d6;
      s7 += d7 * d7;
    }
    for (; c < n; c++) {
      float d = v[c] - center;
      s0 += d * d;
    }
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
  }

  /**
   * LN_in, projection and gating of row {@code i} of batch {@code b} of {@code x}, for channels
   * [c0, c1): a = sigmoid(xn g_in^T) * (xn p_in^T) * m, and the same for b with rows D + c.
   */
  public static void projectRow(PairTensor x, int b, int i, PreparedLayer l, int c0, int c1,
                         Scratch s, Gemm gemm, ProjectionSink sink) {
    int cols = x.cols();
    int d = l.dim;
    int cc = c1 - c0;
    layerNormRow(x.row(b, i), cols, d, l.normInW, l.normInB, l.eps, s.xn);
    // Transposed form (channels x tokens): each output row is one channel across the tile row,
    // which is exactly the channel-major order the triangle product wants.
    // The four projections (p and g of a, p and g of b) share xn: one GEMM over row views of the
    // weights and of the outputs, so xn is packed once; each element is computed as by four calls.
    for (int q = 0; q < cc; q++) {
      s.projW[q] = l.pIn[c0 + q];
      s.projW[cc + q] = l.gIn[c0 + q];
      s.projW[2 * cc + q] = l.pIn[d + c0 + q];
      s.projW[3 * cc + q] = l.gIn[d + c0 + q];
      s.projOut[q] = s.pa[q];
      s.projOut[cc + q] = s.ga[q];
      s.projOut[2 * cc + q] = s.pb[q];
      s.projOut[3 * cc + q] = s.gb[q];
    }
    gemm.nt(4 * cc, cols, d, s.projW, 0, 0, s.xn, 0, 0, s.projOut, 0, 0, false);
    byte[] m = x.maskRow(b, i);
    for (int q = 0; q < cc; q++) {
      int c = c0 + q;
      float[] pa = s.pa[q];
      float[] ga = s.ga[q];
      float[] pb = s.pb[q];
      float[] gb = s.gb[q];
      float bpa = l.pInB[c];
      float bga = l.gInB[c];
      float bpb = l.pInB[d + c];
      float bgb = l.gInB[d + c];
      for (int j = 0; j < cols; j++) {
        ga[j] += bga;
        gb[j] += bgb;
      }
      Simd.sigmoidInPlace(ga, cols);
      Simd.sigmoidInPlace(gb, cols);
      for (int j = 0; j < cols; j++) {
        if (m != null && m[j] == 0) {
          pa[j] = 0f;
          pb[j] = 0f;
        } else {
          pa[j] = ga[j] * (pa[j] + bpa);
          pb[j] = gb[j] * (pb[j] + bpb);
        }
      }
    }
    sink.accept(i, c0, s.pa, s.pb);
  }

  /**
   * LN_out, output projection, gate and residual for row {@code i}: z[j][c] holds the triangle
   * product of the row's tokens (token-major); the bf16 result goes to row i of {@code out}.
   */
  public static void outputRow(PairTensor x, int b, int i, PreparedLayer l, float[][] z, Scratch s, Gemm gemm,
                        PairTensor out) {
    int cols = x.cols();
    int d = l.dim;
    short[] xRow = x.row(b, i);
    for (int j = 0; j < cols; j++) {
      layerNorm(z[j], d, l.normOutW, l.normOutB, l.eps, s.lz[j]);
    }
    layerNormRow(xRow, cols, d, l.normInW, l.normInB, l.eps, s.xn);
    gemm.nt(cols, d, d, s.lz, 0, 0, l.pOut, 0, 0, s.po, 0, 0, false);
    gemm.nt(cols, d, d, s.xn, 0, 0, l.gOut, 0, 0, s.go, 0, 0, false);
    short[] oRow = out.row(b, i);
    for (int j = 0; j < cols; j++) {
      float[] po = s.po[j];
      float[] go = s.go[j];
      int off = j * d;
      for (int c = 0; c < d; c++) {
        go[c] += l.gOutB[c];
      }
      Simd.sigmoidInPlace(go, d);
      for (int c = 0; c < d; c++) {
        float v = go[c] * (po[c] + l.pOutB[c]);
        if (l.residual) {
          v += Bf16.toFloat(xRow[off + c]);
        }
        oRow[off + c] = Bf16.fromFloat(v);
      }
    }
  }
}
