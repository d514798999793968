package org.foldcp.ops.cpu;

import java.util.Arrays;

/**
 * fp32 GEMM in the two forms the TriMul stages need, on matrices held as arrays of rows:
 * "NT", {@code C[cRow0+i][cCol0+j] (+)= sum_k A[aRow0+i][aCol0+k] * B[bRow0+j][bCol0+k]}, and
 * "TN", the same with A and B stored k-major ({@link #tn}).
 *
 * <p>Structure (the usual one of BLIS/GotoBLAS): B is packed into panels of {@code nr} columns
 * and A into panels of {@code mr} rows, both k-major and zero-padded to whole panels, in blocks
 * that stay in L2 ({@link #KC} x {@link #NC} of B, {@link #MC} x {@link #KC} of A); a micro-kernel
 * then keeps an mr x nr tile of C in registers for the whole k-block, reading one broadcast of A
 * and nr/L vectors of B per k. The micro-kernel is {@link VectorSimd} (jdk.incubator.vector,
 * explicit FMA) when the JVM was started with {@code --add-modules jdk.incubator.vector}, else
 * {@link Simd.Scalar}; the choice is made once per JVM ({@link #kernelName()} says which).
 *
 * <p>Arithmetic, the same in both kernels: every element of C starts from 0 (or from C when
 * accumulating) and takes one fused multiply-add per k, {@code c = fma(a_ik, b_kj, c)}, in
 * ascending k; blocking over k only stores and reloads the exact fp32 value. An element's result
 * therefore depends neither on where its tile lies, nor on how M or N are split, nor on the
 * kernel or vector width, nor on the form (TN equals NT on transposed copies): the
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
  private final float[][] edge;

  /** This thread's instance. */
  public static Gemm local() {
    return PER_THREAD.get();
  }

  /** Which micro-kernel this JVM uses, e.g. "jdk.incubator.vector 256-bit, 6x16". */
  public static String kernelName() {
    return Simd.create().describe();
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
    this.edge = new float[mr][nr];
  }

  /**
   * C = A B^T (or C += A B^T when {@code accumulate}) for an m x n result with inner size k:
   * A is m x k at (aRow0, aCol0), B is n x k at (bRow0, bCol0).
   */
  public void nt(int m, int n, int k,
                 float[][] a, int aRow0, int aCol0,
                 float[][] b, int bRow0, int bCol0,
                 float[][] c, int cRow0, int cCol0,
                 boolean accumulate) {
    run(false, m, n, k, a, aRow0, aCol0, b, bRow0, bCol0, c, cRow0, cCol0, accumulate);
  }

  /**
   * C = A^T B (or C += A^T B) for an m x n result with inner size k: A is k x m and B is k x n,
   * both row-major. Only the packing differs from {@link #nt}, so A^T B here equals nt on
   * explicitly transposed copies bit for bit; the transposes are simply never made.
   */
  public void tn(int m, int n, int k,
                 float[][] a, int aRow0, int aCol0,
                 float[][] b, int bRow0, int bCol0,
                 float[][] c, int cRow0, int cCol0,
                 boolean accumulate) {
    run(true, m, n, k, a, aRow0, aCol0, b, bRow0, bCol0, c, cRow0, cCol0, accumulate);
  }

  private void run(boolean transposed, int m, int n, int k,
                   float[][] a, int aRow0, int aCol0,
                   float[][] b, int bRow0, int bCol0,
                   float[][] c, int cRow0, int cCol0,
                   boolean accumulate) {
    if (m <= 0 || n <= 0) {
      return;
    }
    if (k <= 0) {
      if (!accumulate) {
        for (int i = 0; i < m; i++) {
          Arrays.fill(c[cRow0 + i], cCol0, cCol0 + n, 0f);
        }
      }
      return;
    }
    for (int jc = 0; jc < n; jc += NC) {
      int nc = Math.min(NC, n - jc);
      for (int pc = 0; pc < k; pc += KC) {
        int kb = Math.min(KC, k - pc);
        if (transposed) {
          packRowsOfK(b, bRow0 + pc, bCol0 + jc, nc, kb, nr, bPack);
        } else {
          packRowsOfMn(b, bRow0 + jc, bCol0 + pc, nc, kb, nr, bPack);
        }
        boolean add = accumulate || pc > 0;
        for (int ic = 0; ic < m; ic += MC) {
          int mc = Math.min(MC, m - ic);
          if (transposed) {
            packRowsOfK(a, aRow0 + pc, aCol0 + ic, mc, kb, mr, aPack);
          } else {
            packRowsOfMn(a, aRow0 + ic, aCol0 + pc, mc, kb, mr, aPack);
          }
          // jr outside ir: one B panel stays in L1 while the A panels stream past it.
          for (int jr = 0; jr < nc; jr += nr) {
            int nb = Math.min(nr, nc - jr);
            int bOff = jr * kb;
            int col = cCol0 + jc + jr;
            for (int ir = 0; ir < mc; ir += mr) {
              int mb = Math.min(mr, mc - ir);
              int aOff = ir * kb;
              int row = cRow0 + ic + ir;
              if (mb == mr && nb == nr) {
                kernel.gemmTile(kb, aPack, aOff, bPack, bOff, c, row, col, add);
              } else {
                if (add) {
                  for (int i = 0; i < mb; i++) {
                    System.arraycopy(c[row + i], col, edge[i], 0, nb);
                  }
                }
                kernel.gemmTile(kb, aPack, aOff, bPack, bOff, edge, 0, 0, add);
                for (int i = 0; i < mb; i++) {
                  System.arraycopy(edge[i], 0, c[row + i], col, nb);
                }
              }
            }
          }
        }
      }
    }
  }

  /**
   * Packs {@code len} rows of an operand stored with k along its rows (A of NT, B of NT), a
   * block of kb values from column col0 each, into panels of {@code w} rows:
   * {@code pack[s*kb*w + p*w + r] = x[row0 + s*w + r][col0 + p]}, zero rows past len. Four rows at
   * a time, so that each k writes four adjacent floats.
   */
  static void packRowsOfMn(float[][] x, int row0, int col0, int len, int kb, int w, float[] pack) {
    for (int s = 0; s < len; s += w) {
      int base = s * kb;
      int rows = Math.min(w, len - s);
      int r = 0;
      for (; r + 4 <= rows; r += 4) {
        float[] x0 = x[row0 + s + r];
        float[] x1 = x[row0 + s + r + 1];
        float[] x2 = x[row0 + s + r + 2];
        float[] x3 = x[row0 + s + r + 3];
        for (int p = 0, q = base + r; p < kb; p++, q += w) {
          pack[q] = x0[col0 + p];
          pack[q + 1] = x1[col0 + p];
          pack[q + 2] = x2[col0 + p];
          pack[q + 3] = x3[col0 + p];
        }
      }
      for (; r < w; r++) {
        float[] src = r < rows ? x[row0 + s + r] : null;
        for (int p = 0, q = base + r; p < kb; p++, q += w) {
          pack[q] = src != null ? src[col0 + p] : 0f;
        }
      }
    }
  }

  /**
   * Packs an operand stored k-major (A and B of TN): kb rows from row0, {@code len} values from
   * col0 each, into panels of {@code w} columns:
   * {@code pack[s*kb*w + p*w + r] = x[row0 + p][col0 + s*w + r]}, zeros past len.
   */
  static void packRowsOfK(float[][] x, int row0, int col0, int len, int kb, int w, float[] pack) {
    for (int s = 0; s < len; s += w) {
      int base = s * kb;
      int cols = Math.min(w, len - s);
      for (int p = 0, q = base; p < kb; p++, q += w) {
        float[] src = x[row0 + p];
        int from = col0 + s;
        for (int r = 0; r < cols; r++) {
          pack[q + r] = src[from + r];
        }
        for (int r = cols; r < w; r++) {
          pack[q + r] = 0f;
        }
      }
    }
  }
}
