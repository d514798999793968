package org.foldcp.ops.cpu;

import java.util.Arrays;

/**
 * The pure-Java fp32 GEMM ({@link JavaKernels}; the native kernels in native/cpu/ follow the
 * same structure and arithmetic), {@code C (+)= A B} on flat row-major arrays with either operand
 * stored transposed ({@link #gemm}).
 *
 * <p>Structure (the usual one of BLIS/GotoBLAS): B is packed into panels of {@code nr} columns
 * and A into panels of {@code mr} rows, both k-major and zero-padded to whole panels, in blocks
 * that stay in L2 ({@link #KC} x {@link #NC} of B, {@link #MC} x {@link #KC} of A); a micro-kernel
 * then keeps an mr x nr tile of C in registers for the whole k-block, reading one broadcast of A
 * and nr/L vectors of B per k. The micro-kernel is {@link VectorSimd} (jdk.incubator.vector,
 * explicit FMA) when the JVM was started with {@code --add-modules jdk.incubator.vector}, else
 * {@link Simd.Scalar}; the choice is made once per JVM ({@link JavaKernels#describe()} names it).
 *
 * <p>Arithmetic, the same in both kernels: every element of C starts from 0 (or from C when
 * accumulating) and takes one fused multiply-add per k, {@code c = fma(a_ik, b_kj, c)}, in
 * ascending k; blocking over k only stores and reloads the exact fp32 value. An element's result
 * therefore depends neither on where its tile lies, nor on how M or N are split, nor on the
 * kernel or vector width (native or Java), nor on the form (A^T B equals A B on a transposed
 * copy of A): the
 * context-parallel decomposition reproduces the single-rank result bit for bit, and trailing
 * zero terms (padded, masked tokens) leave it unchanged.
 *
 * <p>Not thread-safe: one instance per thread (it owns its packing workspace).
 */
public final class Gemm {
  /** k-block: an A panel (mr x KC) and a B panel (KC x nr) stay in L1 together. */
  static final int KC = 256;
  /** Rows of A packed at once (a multiple of every kernel's mr): MC x KC floats, 96 KiB, in L2. */
  static final int MC = 96;
  /** Columns of B packed at once: KC x NC floats, 256 KiB, in L2. */
  static final int NC = 256;

  private static final ThreadLocal<Gemm> PER_THREAD = ThreadLocal.withInitial(Gemm::new);

  private final Simd kernel;
  private final int mr;
  private final int nr;
  private final float[] aPack = new float[MC * KC];
  private final float[] bPack;
  private final float[] edge;

  /** This thread's instance. */
  public static Gemm local() {
    return PER_THREAD.get();
  }

  public Gemm() {
    this(Simd.create());
  }

  /** With a given micro-kernel (tests compare the two). */
  Gemm(Simd kernel) {
    this.kernel = kernel;
    this.mr = kernel.mr();
    this.nr = kernel.nr();
    if (MC % mr != 0) {
      throw new IllegalArgumentException("MC = " + MC + " must be a multiple of the kernel's mr = " + mr);
    }
    this.bPack = new float[KC * ((NC + nr - 1) / nr) * nr];
    this.edge = new float[mr * nr];
  }

  /**
   * C = A B (or C += A B when {@code accumulate}) for an m x n result with inner size k, on flat
   * row-major arrays: A(i, p) = {@code ta ? a[aOff + p*lda + i] : a[aOff + i*lda + p]}, B(p, j) =
   * {@code tb ? b[bOff + j*ldb + p] : b[bOff + p*ldb + j]}, C(i, j) = {@code c[cOff + i*ldc + j]}.
   * The forms differ only in the packing, so every form gives the same bits as any other on
   * correspondingly transposed copies. Offsets and lengths are not checked here
   * ({@link CpuKernels#gemm} checks them).
   */
  public void gemm(boolean ta, boolean tb, int m, int n, int k,
                   float[] a, int aOff, int lda,
                   float[] b, int bOff, int ldb,
                   float[] c, int cOff, int ldc,
                   boolean accumulate) {
    if (m <= 0 || n <= 0) {
      return;
    }
    if (k <= 0) {
      if (!accumulate) {
        for (int i = 0; i < m; i++) {
          Arrays.fill(c, cOff + i * ldc, cOff + i * ldc + n, 0f);
        }
      }
      return;
    }
    for (int jc = 0; jc < n; jc += NC) {
      int nc = Math.min(NC, n - jc);
      for (int pc = 0; pc < k; pc += KC) {
        int kb = Math.min(KC, k - pc);
        if (tb) {
          packKAlongRows(b, bOff + jc * ldb + pc, ldb, nc, kb, nr, bPack);
        } else {
          packKAlongColumns(b, bOff + pc * ldb + jc, ldb, nc, kb, nr, bPack);
        }
        boolean add = accumulate || pc > 0;
        for (int ic = 0; ic < m; ic += MC) {
          int mc = Math.min(MC, m - ic);
          if (ta) {
            packKAlongColumns(a, aOff + pc * lda + ic, lda, mc, kb, mr, aPack);
          } else {
            packKAlongRows(a, aOff + ic * lda + pc, lda, mc, kb, mr, aPack);
          }
          // jr outside ir: one B panel stays in L1 while the A panels stream past it.
          for (int jr = 0; jr < nc; jr += nr) {
            int nb = Math.min(nr, nc - jr);
            int bOffPanel = jr * kb;
            for (int ir = 0; ir < mc; ir += mr) {
              int mb = Math.min(mr, mc - ir);
              int aOffPanel = ir * kb;
              int ct = cOff + (ic + ir) * ldc + jc + jr;
              if (mb == mr && nb == nr) {
                kernel.gemmTile(kb, aPack, aOffPanel, bPack, bOffPanel, c, ct, ldc, add);
              } else {
                if (add) {
                  for (int i = 0; i < mb; i++) {
                    System.arraycopy(c, ct + i * ldc, edge, i * nr, nb);
                  }
                }
                kernel.gemmTile(kb, aPack, aOffPanel, bPack, bOffPanel, edge, 0, nr, add);
                for (int i = 0; i < mb; i++) {
                  System.arraycopy(edge, i * nr, c, ct + i * ldc, nb);
                }
              }
            }
          }
        }
      }
    }
  }

  /**
   * Packs {@code len} rows of an operand stored with k along its rows (row r, value p at
   * {@code x[off + r*ld + p]}) into panels of {@code w} rows:
   * {@code pack[s*kb*w + p*w + r] = x[off + (s*w + r)*ld + p]}, zero rows past len. Four rows at a
   * time, so that each p writes four adjacent floats.
   */
  static void packKAlongRows(float[] x, int off, int ld, int len, int kb, int w, float[] pack) {
    for (int s = 0; s < len; s += w) {
      int base = s * kb;
      int rows = Math.min(w, len - s);
      int r = 0;
      for (; r + 4 <= rows; r += 4) {
        int x0 = off + (s + r) * ld;
        int x1 = x0 + ld;
        int x2 = x1 + ld;
        int x3 = x2 + ld;
        for (int p = 0, q = base + r; p < kb; p++, q += w) {
          pack[q] = x[x0 + p];
          pack[q + 1] = x[x1 + p];
          pack[q + 2] = x[x2 + p];
          pack[q + 3] = x[x3 + p];
        }
      }
      for (; r < w; r++) {
        int src = off + (s + r) * ld;
        boolean real = r < rows;
        for (int p = 0, q = base + r; p < kb; p++, q += w) {
          pack[q] = real ? x[src + p] : 0f;
        }
      }
    }
  }

  /**
   * Packs an operand stored k-major (value p of column r at {@code x[off + p*ld + r]}), kb values
   * of {@code len} columns, into panels of {@code w} columns:
   * {@code pack[s*kb*w + p*w + r] = x[off + p*ld + s*w + r]}, zeros past len.
   */
  static void packKAlongColumns(float[] x, int off, int ld, int len, int kb, int w, float[] pack) {
    for (int s = 0; s < len; s += w) {
      int base = s * kb;
      int cols = Math.min(w, len - s);
      for (int p = 0, q = base; p < kb; p++, q += w) {
        int from = off + p * ld + s;
        System.arraycopy(x, from, pack, q, cols);
        for (int r = cols; r < w; r++) {
          pack[q + r] = 0f;
        }
      }
    }
  }
}
