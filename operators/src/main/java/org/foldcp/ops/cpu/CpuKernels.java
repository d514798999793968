package org.foldcp.ops.cpu;

import java.util.Locale;

/**
 * The CPU backend's compute kernels on flat row-major arrays: the GEMM, LayerNorm and the gates.
 * Two implementations: {@link NativeKernels} (libfoldcp_cpu.so, AVX-512 or AVX2 + FMA, chosen from
 * the CPU's features) and {@link JavaKernels} (pure Java, the fallback where the native library
 * does not load). They perform the same IEEE operations in the same order on every element, so
 * they give the same bits: a CP rank on a machine without the library still agrees with one that
 * has it, and the choice never changes a result. (A NaN stays NaN; its sign and payload are not
 * promised, as no compiler keeps the operand order of NaN + NaN.)
 *
 * <p>Which one runs is decided once per JVM ({@link #selected()}) and said once in the log. The
 * system property {@value #PROPERTY} (read then, never in a forward) forces a choice: {@code java},
 * {@code avx512}, {@code avx2}; default {@code auto}, the fastest this CPU runs.
 *
 * <p>Every method checks its offsets and lengths against the arrays first (an
 * {@link IndexOutOfBoundsException} names the operand), so that a native kernel never writes past
 * an array. Implementations are thread-safe (any per-thread workspace is the thread's own).
 */
public abstract class CpuKernels {
  /** System property choosing the kernels: auto (default), java, avx512, avx2. */
  public static final String PROPERTY = "foldcp.cpu.kernels";

  private static final class Holder {
    static final CpuKernels SELECTED = select(System.getProperty(PROPERTY, "auto"));
  }

  /** The kernels of this JVM: chosen at the first call, logged once. */
  public static CpuKernels selected() {
    return Holder.SELECTED;
  }

  /** What runs, e.g. "native avx2+fma, 6x16 fp32 tile (libfoldcp_cpu.so)". */
  public abstract String describe();

  /** Whether these are the native kernels. */
  public abstract boolean isNative();

  /**
   * C (m x n, {@code c[cOff + i*ldc + j]}) = (accumulate ? C : 0) + A B, with A(i, p) =
   * {@code ta ? a[aOff + p*lda + i] : a[aOff + i*lda + p]} and B(p, j) =
   * {@code tb ? b[bOff + j*ldb + p] : b[bOff + p*ldb + j]}. Every element of C is the sequential
   * chain {@code c = fma(A(i,p), B(p,j), c)} over p = 0..k-1 from 0 (or from C): its value does
   * not depend on the form, on how M or N are split, or on the implementation.
   */
  public final void gemm(boolean ta, boolean tb, int m, int n, int k, float[] a, int aOff, int lda,
                         float[] b, int bOff, int ldb, float[] c, int cOff, int ldc, boolean accumulate) {
    if (m <= 0 || n <= 0) {
      return;
    }
    if (k > 0) {
      checkMatrix("A", a, aOff, lda, ta ? k : m, ta ? m : k);
      checkMatrix("B", b, bOff, ldb, tb ? n : k, tb ? k : n);
    }
    checkMatrix("C", c, cOff, ldc, m, n);
    gemm0(ta, tb, m, n, Math.max(k, 0), a, aOff, lda, b, bOff, ldb, c, cOff, ldc, accumulate);
  }

  /**
   * out[j*d + c] = LayerNorm over the d channels of the bf16 token x[xOff + j*d ..], for j < cols:
   * mean and variance as eight interleaved partial sums (c mod 8) added in a fixed tree, then
   * {@code (v - mean) * inv * w + bias}, {@code inv = (float) (1 / sqrt((double) (var + eps)))}.
   */
  public final void layerNormBf16(short[] x, int xOff, int cols, int d, float[] w, float[] bias, float eps,
                                  float[] out) {
    checkRange("x", x.length, xOff, (long) cols * d);
    checkRange("out", out.length, 0, (long) cols * d);
    checkRange("weight", w.length, 0, d);
    checkRange("bias", bias.length, 0, d);
    layerNormBf160(x, xOff, cols, d, w, bias, eps, out);
  }

  /** As {@link #layerNormBf16} on fp32 tokens x[j*d ..] (LN_out on z). */
  public final void layerNorm(float[] x, int cols, int d, float[] w, float[] bias, float eps, float[] out) {
    checkRange("x", x.length, 0, (long) cols * d);
    checkRange("out", out.length, 0, (long) cols * d);
    checkRange("weight", w.length, 0, d);
    checkRange("bias", bias.length, 0, d);
    layerNorm0(x, cols, d, w, bias, eps, out);
  }

  /**
   * The input gates of cc channels over cols tokens. proj holds rows 4q + r of cols values (r = 0:
   * p of a, 1: g of a, 2: p of b, 3: g of b, channel q), bias4[biasOff + 4q + r] their biases:
   * {@code a[q*cols + j] = sigmoid(g + bg) * (p + bp)}, 0 where mask[j] == 0 (mask may be null),
   * the same for b.
   */
  public final void gateProjection(float[] proj, int cc, int cols, float[] bias4, int biasOff, byte[] mask,
                                   float[] a, float[] b) {
    checkRange("proj", proj.length, 0, 4L * cc * cols);
    checkRange("bias", bias4.length, biasOff, 4L * cc);
    if (mask != null) {
      checkRange("mask", mask.length, 0, cols);
    }
    checkRange("a", a.length, 0, (long) cc * cols);
    checkRange("b", b.length, 0, (long) cc * cols);
    gateProjection0(proj, cc, cols, bias4, biasOff, mask, a, b);
  }

  /**
   * The output gate of cols tokens of d channels, rounded to bf16:
   * {@code out[outOff + j*d + c] = bf16(sigmoid(go + gb[c]) * (po + pb[c]) (+ x[xOff + j*d + c]))}.
   */
  public final void gateOutput(float[] po, float[] go, int cols, int d, float[] pb, float[] gb, short[] x, int xOff,
                               boolean residual, short[] out, int outOff) {
    long len = (long) cols * d;
    checkRange("po", po.length, 0, len);
    checkRange("go", go.length, 0, len);
    checkRange("p_out bias", pb.length, 0, d);
    checkRange("g_out bias", gb.length, 0, d);
    checkRange("x", x.length, xOff, len);
    checkRange("out", out.length, outOff, len);
    gateOutput0(po, go, cols, d, pb, gb, x, xOff, residual, out, outOff);
  }

  abstract void gemm0(boolean ta, boolean tb, int m, int n, int k, float[] a, int aOff, int lda,
                      float[] b, int bOff, int ldb, float[] c, int cOff, int ldc, boolean accumulate);

  abstract void layerNormBf160(short[] x, int xOff, int cols, int d, float[] w, float[] bias, float eps,
                               float[] out);

  abstract void layerNorm0(float[] x, int cols, int d, float[] w, float[] bias, float eps, float[] out);

  abstract void gateProjection0(float[] proj, int cc, int cols, float[] bias4, int biasOff, byte[] mask,
                                float[] a, float[] b);

  abstract void gateOutput0(float[] po, float[] go, int cols, int d, float[] pb, float[] gb, short[] x, int xOff,
                            boolean residual, short[] out, int outOff);

  private static void checkMatrix(String what, float[] x, int off, int ld, int rows, int cols) {
    if (rows <= 0 || cols <= 0) {
      return;
    }
    if (ld < cols) {
      throw new IndexOutOfBoundsException(what + ": row stride " + ld + " < " + cols + " values per row");
    }
    checkRange(what, x.length, off, (long) (rows - 1) * ld + cols);
  }

  private static void checkRange(String what, int length, int off, long count) {
    if (off < 0 || count < 0 || off + count > length) {
      throw new IndexOutOfBoundsException(what + ": " + count + " values from offset " + off
          + " do not fit in an array of " + length);
    }
  }

  static CpuKernels select(String choice) {
    System.Logger log = System.getLogger(CpuKernels.class.getName());
    String c = choice.trim().toLowerCase(Locale.ROOT);
    CpuKernels k;
    switch (c) {
      case "java":
        k = new JavaKernels();
        log.log(System.Logger.Level.INFO, "fold-cp CPU backend: " + k.describe() + " (-D" + PROPERTY + "=java)");
        return k;
      case "auto":
      case "avx512":
      case "avx2":
        break;
      default:
        throw new IllegalArgumentException("-D" + PROPERTY + "=" + choice + ": must be auto, java, avx512 or avx2");
    }
    String why = NativeKernels.unavailableReason();
    if (why == null) {
      int variant = c.equals("auto") ? NativeKernels.bestVariant() : NativeKernels.variantNamed(c);
      if (variant >= 0) {
        k = new NativeKernels(variant);
        log.log(System.Logger.Level.INFO, "fold-cp CPU backend: " + k.describe() + "; CPU features: "
            + NativeKernels.cpuFeatures());
        return k;
      }
      why = "this CPU (features: " + NativeKernels.cpuFeatures() + ") runs "
          + (c.equals("auto") ? "neither AVX-512 nor AVX2 + FMA" : "no " + c);
    }
    k = new JavaKernels();
    log.log(System.Logger.Level.WARNING, "fold-cp CPU backend: no native kernels (" + why + "); running "
        + k.describe() + ", several times slower, same results");
    return k;
  }
}
