package org.foldcp.ops.cpu;

import java.util.Arrays;

/**
 * The pure-Java path's inner loops ({@link JavaKernels}: where the native kernels do not load),
 * in two implementations chosen once per JVM: {@link VectorSimd}
 * (jdk.incubator.vector) where the JVM was started with {@code --add-modules
 * jdk.incubator.vector}, else {@link Scalar} (plain Java). Both do the very same IEEE operations
 * in the same order on every element, so they give the same bits, and neither result depends on
 * an element's position (vector lane or scalar tail): a CP tile and the whole tensor agree.
 */
abstract class Simd {
  /** Whether this JVM has jdk.incubator.vector: decided once, at class initialization. */
  static final boolean VECTOR = vectorUsable();
  /** For the stateless operations ({@link #sigmoidInPlace}). */
  private static final Simd SHARED = create();

  // sigmoid(v) = 1 / (1 + exp(-v)); exp as in Cephes expf: exp(t) = 2^n exp(r), n = round(t log2 e),
  // r = t - n ln 2 in two parts, exp(r) by a degree-7 polynomial (relative error ~1e-7).
  static final float EXP_MIN = -87.0f;
  static final float EXP_MAX = 88.0f;
  static final float LOG2E = 1.44269504088896341f;
  /** 1.5 * 2^23: t log2 e + ROUND rounds to an integer held in the low mantissa bits. */
  static final float ROUND = 12582912f;
  static final int ROUND_BITS = 0x4B400000;
  static final float LN2_HI = 0.693359375f;
  static final float LN2_LO = -2.12194440e-4f;
  static final float P0 = 1.9875691500e-4f;
  static final float P1 = 1.3981999507e-3f;
  static final float P2 = 8.3334519073e-3f;
  static final float P3 = 4.1665795894e-2f;
  static final float P4 = 1.6666665459e-1f;
  static final float P5 = 5.0000001201e-1f;

  private final int mr;
  private final int nr;

  /** An implementation whose GEMM register tile is {@code mr} x {@code nr}. */
  Simd(int mr, int nr) {
    this.mr = mr;
    this.nr = nr;
  }

  /** A new instance (the Scalar one owns GEMM buffers: one per thread). */
  static Simd create() {
    return VECTOR ? VectorSimd.create() : new Scalar();
  }

  /** x[j] = sigmoid(x[j]) for j < n. */
  static void sigmoidInPlace(float[] x, int n) {
    SHARED.sigmoid(x, n);
  }

  /**
   * The sigmoid every implementation computes, element by element: each line is one IEEE fp32
   * operation (fma fused), the vector version does the same ones lane-wise. NaN stays NaN;
   * |v| past 87 saturates to 0 or 1 (to within 1e-38).
   */
  static float sigmoid(float v) {
    float t = -v;
    t = t < EXP_MIN ? EXP_MIN : t; // compare and select, not Math.max: NaN passes through
    t = t > EXP_MAX ? EXP_MAX : t;
    float k = Math.fma(t, LOG2E, ROUND);
    float n = k - ROUND;
    float r = Math.fma(n, -LN2_HI, t);
    r = Math.fma(n, -LN2_LO, r);
    float p = Math.fma(P0, r, P1);
    p = Math.fma(p, r, P2);
    p = Math.fma(p, r, P3);
    p = Math.fma(p, r, P4);
    p = Math.fma(p, r, P5);
    float e = Math.fma(p, r * r, r) + 1f;
    e *= Float.intBitsToFloat((Float.floatToRawIntBits(k) - (ROUND_BITS - 127)) << 23);
    return 1f / (1f + e);
  }

  /** Rows of the GEMM register tile. */
  final int mr() {
    return mr;
  }

  /** Columns of the GEMM register tile. */
  final int nr() {
    return nr;
  }

  abstract String describe();

  /**
   * The GEMM micro-kernel: C(i, j) = c[cOff + i*ldc + j] = (add ? C(i, j) : 0) followed by
   * {@code fma(a[aOff + p*mr + i], b[bOff + p*nr + j], .)} for p = 0..kb-1 in order, for the
   * whole mr x nr tile.
   */
  abstract void gemmTile(int kb, float[] a, int aOff, float[] b, int bOff, float[] c, int cOff, int ldc,
                         boolean add);

  /** x[j] = {@link #sigmoid(float)} of x[j] for j < n. */
  abstract void sigmoid(float[] x, int n);

  private static boolean vectorUsable() {
    if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
      return false;
    }
    try {
      return VectorSimd.create() != null;
    } catch (LinkageError e) {
      return false;
    }
  }

  /**
   * The fallback kernel (a JVM without {@code --add-modules jdk.incubator.vector}): plain Java, a
   * 4 x 64 tile in four row buffers updated by AXPYs with {@link Math#fma}, which C2
   * auto-vectorizes only when every array in the loop has the same index (hence the copy of each
   * B row). Same operations in the same order as {@link VectorSimd}, so the same bits, at about
   * a third of its speed. Owns GEMM buffers: one per Gemm.
   */
  static final class Scalar extends Simd {
    private static final int MR = 4;
    private static final int NR = 64;
    private final float[] c0 = new float[NR];
    private final float[] c1 = new float[NR];
    private final float[] c2 = new float[NR];
    private final float[] c3 = new float[NR];
    private final float[] y = new float[NR];

    Scalar() {
      super(MR, NR);
    }

    @Override
    String describe() {
      return "plain Java Math.fma, " + MR + "x" + NR + " (this JVM lacks --add-modules jdk.incubator.vector)";
    }

    @Override
    void gemmTile(int kb, float[] a, int aOff, float[] b, int bOff, float[] c, int cOff, int ldc, boolean add) {
      float[][] acc = {c0, c1, c2, c3};
      for (int i = 0; i < MR; i++) {
        if (add) {
          System.arraycopy(c, cOff + i * ldc, acc[i], 0, NR);
        } else {
          Arrays.fill(acc[i], 0f);
        }
      }
      for (int p = 0; p < kb; p++) {
        int ai = aOff + MR * p;
        System.arraycopy(b, bOff + NR * p, y, 0, NR);
        axpy4(a[ai], a[ai + 1], a[ai + 2], a[ai + 3], y, c0, c1, c2, c3);
      }
      for (int i = 0; i < MR; i++) {
        System.arraycopy(acc[i], 0, c, cOff + i * ldc, NR);
      }
    }

    private static void axpy4(float x0, float x1, float x2, float x3, float[] y,
                              float[] r0, float[] r1, float[] r2, float[] r3) {
      for (int j = 0; j < NR; j++) {
        float v = y[j];
        r0[j] = Math.fma(x0, v, r0[j]);
        r1[j] = Math.fma(x1, v, r1[j]);
        r2[j] = Math.fma(x2, v, r2[j]);
        r3[j] = Math.fma(x3, v, r3[j]);
      }
    }

    @Override
    void sigmoid(float[] x, int n) {
      for (int j = 0; j < n; j++) {
        x[j] = Simd.sigmoid(x[j]);
      }
    }
  }
}
