package org.foldcp.ops.cpu;

import org.foldcp.ops.tensor.Bf16;

/**
 * The pure-Java kernels: the fallback where libfoldcp_cpu.so does not load (another platform, a
 * CPU without AVX2 + FMA, a jar built without gcc). The GEMM is {@link Gemm} with its
 * {@link Simd} micro-kernel (the Vector API where the JVM has {@code --add-modules
 * jdk.incubator.vector}, else plain Java); LayerNorm and the gates are written here, the
 * reference of the operation order that the native kernels reproduce.
 */
final class JavaKernels extends CpuKernels {
  private final Simd simd = Simd.create();

  @Override
  public String describe() {
    return "pure-Java kernels, GEMM " + simd.describe();
  }

  @Override
  public boolean isNative() {
    return false;
  }

  @Override
  void gemm0(boolean ta, boolean tb, int m, int n, int k, float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
             float[] c, int cOff, int ldc, boolean accumulate) {
    Gemm.local().gemm(ta, tb, m, n, k, a, aOff, lda, b, bOff, ldb, c, cOff, ldc, accumulate);
  }

  @Override
  void layerNormBf160(short[] x, int xOff, int cols, int d, float[] w, float[] bias, float eps, float[] out) {
    for (int j = 0; j < cols; j++) {
      int o = j * d;
      int src = xOff + j * d;
      for (int c = 0; c < d; c++) {
        out[o + c] = Bf16.toFloat(x[src + c]);
      }
      layerNorm(out, o, d, w, bias, eps, out, o);
    }
  }

  @Override
  void layerNorm0(float[] x, int cols, int d, float[] w, float[] bias, float eps, float[] out) {
    for (int j = 0; j < cols; j++) {
      layerNorm(x, j * d, d, w, bias, eps, out, j * d);
    }
  }

  @Override
  void gateProjection0(float[] proj, int cc, int cols, float[] bias4, int biasOff, byte[] mask, float[] a,
                       float[] b) {
    float[] g = new float[cols];
    for (int q = 0; q < cc; q++) {
      for (int half = 0; half < 2; half++) {
        int p = (4 * q + 2 * half) * cols;
        int gr = p + cols;
        float bp = bias4[biasOff + 4 * q + 2 * half];
        float bg = bias4[biasOff + 4 * q + 2 * half + 1];
        float[] o = half == 0 ? a : b;
        int oo = q * cols;
        for (int j = 0; j < cols; j++) {
          g[j] = proj[gr + j] + bg;
        }
        simd.sigmoid(g, cols);
        for (int j = 0; j < cols; j++) {
          o[oo + j] = mask != null && mask[j] == 0 ? 0f : g[j] * (proj[p + j] + bp);
        }
      }
    }
  }

  @Override
  void gateOutput0(float[] po, float[] go, int cols, int d, float[] pb, float[] gb, short[] x, int xOff,
                   boolean residual, short[] out, int outOff) {
    float[] g = new float[d];
    for (int j = 0; j < cols; j++) {
      int r = j * d;
      for (int c = 0; c < d; c++) {
        g[c] = go[r + c] + gb[c];
      }
      simd.sigmoid(g, d);
      for (int c = 0; c < d; c++) {
        float v = g[c] * (po[r + c] + pb[c]);
        if (residual) {
          v += Bf16.toFloat(x[xOff + r + c]);
        }
        out[outOff + r + c] = Bf16.fromFloat(v);
      }
    }
  }

  /** out[oOff + c] = LayerNorm(v[vOff ..])[c] over d values (out may be v). */
  static void layerNorm(float[] v, int vOff, int d, float[] w, float[] bias, float eps, float[] out, int oOff) {
    float mean = sum8(v, vOff, d, 0f, false) / d;
    float var = sum8(v, vOff, d, mean, true) / d;
    float inv = (float) (1.0 / Math.sqrt(var + eps));
    for (int c = 0; c < d; c++) {
      out[oOff + c] = (v[vOff + c] - mean) * inv * w[c] + bias[c];
    }
  }

  /**
   * sum over c < n of v[off + c] (or of (v - center)^2 when {@code squares}), in eight interleaved
   * partial sums (c mod 8; the tail past the last multiple of 8 into the first) added in the
   * fixed tree ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)): an order that depends only on c, never on
   * where the token lies, and the one a 256-bit vector accumulator gives.
   */
  static float sum8(float[] v, int off, int n, float center, boolean squares) {
    float[] s = new float[8];
    int c = 0;
    for (; c + 8 <= n; c += 8) {
      for (int l = 0; l < 8; l++) {
        float t = v[off + c + l];
        if (squares) {
          t -= center;
          t *= t;
        }
        s[l] += t;
      }
    }
    for (; c < n; c++) {
      float t = v[off + c];
      if (squares) {
        t -= center;
        t *= t;
      }
      s[0] += t;
    }
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  }
}
