package org.foldcp.ops.cpu;

import java.util.Arrays;

/**
 * fp32 GEMM in the one form every TriMul stage needs, "NT":
 * {@code C[cRow0+i][cCol0+j] (+)= sum_k A[aRow0+i][aCol0+k] * B[bRow0+j][bCol0+k]}
 * on matrices held as arrays of rows.
 *
 * <p>Why this shape of loop: C2 vectorizes a loop only when every array in it is indexed by the
 * loop variable plus nothing it cannot prove aligned, so B is packed into a k-major panel of
 * separate row arrays, and four rows of C are accumulated in four separate arrays; the inner
 * loop is then four AXPYs sharing one load of B. K is blocked so the panel stays in L2 and the
 * four C rows stay in L1. The sum over k runs in ascending k for every element, so the result
 * does not depend on how M or N are split: the context-parallel decomposition reproduces the
 * single-rank result bit for bit.
 *
 * <p>Not thread-safe: one instance per thread (it owns its packing workspace).
 */
public final class Gemm {
  static final int KC = 256;
  static final int NC = 512;
  private static final int MR = 4;

  private final float[][] panel = new float[KC][NC];
  private final float[][] acc = new float[MR][NC];

  private static final ThreadLocal<Gemm> PER_THREAD = ThreadLocal.withInitial(Gemm::new);

  /** This thread's instance. */
  public static Gemm local() {
    return PER_THREAD.get();
  }

  /**
   * C = A B^T (or C += A B^T when {@code accumulate}) for an m x n result with inner size k.
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
   * both row-major. Each element sums over k in ascending order with the very operations of
   * {@link #nt}, so A^T B here equals nt on explicitly transposed copies bit for bit; the
   * transposes are simply never made.
   */
  public void tn(int m, int n, int k,
                 float[][] a, int aRow0, int aCol0,
                 float[][] b, int bRow0, int bCol0,
                 float[][] c, int cRow0, int cCol0,
                 boolean accumulate) {
    run(true, m, n, k, a, aRow0, aCol0, b, bRow0, bCol0, c, cRow0, cCol0, accumulate);
  }

  /** The blocking shared by both forms; only the packing of B and the reads of A differ. */
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
    for (int j0 = 0; j0 < n; j0 += NC) {
      int nb = Math.min(NC, n - j0);
      for (int k0 = 0; k0 < k; k0 += KC) {
        int kb = Math.min(KC, k - k0);
        if (transposed) {
          for (int kk = 0; kk < kb; kk++) {
            System.arraycopy(b[bRow0 + k0 + kk], bCol0 + j0, panel[kk], 0, nb);
          }
        } else {
          pack(b, bRow0 + j0, bCol0 + k0, nb, kb);
        }
        boolean add = accumulate || k0 > 0;
        int i = 0;
        for (; i + MR <= m; i += MR) {
          load(c, cRow0 + i, cCol0 + j0, nb, MR, add);
          if (transposed) {
            kernel4t(acc[0], acc[1], acc[2], acc[3], nb, a, aRow0 + k0, aCol0 + i, kb, panel);
          } else {
            kernel4(acc[0], acc[1], acc[2], acc[3], nb,
                a[aRow0 + i], a[aRow0 + i + 1], a[aRow0 + i + 2], a[aRow0 + i + 3], aCol0 + k0, kb, panel);
          }
          store(c, cRow0 + i, cCol0 + j0, nb, MR);
        }
        for (; i < m; i++) {
          load(c, cRow0 + i, cCol0 + j0, nb, 1, add);
          if (transposed) {
            kernel1t(acc[0], nb, a, aRow0 + k0, aCol0 + i, kb, panel);
          } else {
            kernel1(acc[0], nb, a[aRow0 + i], aCol0 + k0, kb, panel);
          }
          store(c, cRow0 + i, cCol0 + j0, nb, 1);
        }
      }
    }
  }

  /** panel[kk][jj] = B[row0 + jj][col0 + kk]. */
  private void pack(float[][] b, int row0, int col0, int nb, int kb) {
    for (int jj = 0; jj < nb; jj++) {
      float[] br = b[row0 + jj];
      for (int kk = 0; kk < kb; kk++) {
        panel[kk][jj] = br[col0 + kk];
      }
    }
  }

  private void load(float[][] c, int row0, int col0, int nb, int rows, boolean add) {
    for (int r = 0; r < rows; r++) {
      if (add) {
        System.arraycopy(c[row0 + r], col0, acc[r], 0, nb);
      } else {
        Arrays.fill(acc[r], 0, nb, 0f);
      }
    }
  }

  private void store(float[][] c, int row0, int col0, int nb, int rows) {
    for (int r = 0; r < rows; r++) {
      System.arraycopy(acc[r], 0, c[row0 + r], col0, nb);
    }
  }

  private static void kernel4(float[] c0, float[] c1, float[] c2, float[] c3, int nb,
                              float[] a0, float[] a1, float[] a2, float[] a3, int ak, int kb, float[][] panel) {
    for (int kk = 0; kk < kb; kk++) {
      float x0 = a0[ak + kk];
      float x1 = a1[ak + kk];
      float x2 = a2[ak + kk];
      float x3 = a3[ak + kk];
      float[] p = panel[kk];
      for (int j = 0; j < nb; j++) {
        float y = p[j];
        c0[j] += x0 * y;
        c1[j] += x1 * y;
        c2[j] += x2 * y;
        c3[j] += x3 * y;
      }
    }
  }

  private static void kernel4t(float[] c0, float[] c1, float[] c2, float[] c3, int nb,
                               float[][] a, int aRow, int aCol, int kb, float[][] panel) {
    for (int kk = 0; kk < kb; kk++) {
      float[] ar = a[aRow + kk];
      float x0 = ar[aCol];
      float x1 = ar[aCol + 1];
      float x2 = ar[aCol + 2];
      float x3 = ar[aCol + 3];
      float[] p = panel[kk];
      for (int j = 0; j < nb; j++) {
        float y = p[j];
        c0[j] += x0 * y;
        c1[j] += x1 * y;
        c2[j] += x2 * y;
        c3[j] += x3 * y;
      }
    }
  }

  private static void kernel1t(float[] c0, int nb, float[][] a, int aRow, int aCol, int kb, float[][] panel) {
    for (int kk = 0; kk < kb; kk++) {
      float x0 = a[aRow + kk][aCol];
      float[] p = panel[kk];
      for (int j = 0; j < nb; j++) {
        c0[j] += x0 * p[j];
      }
    }
  }

  private static void kernel1(float[] c0, int nb, float[] a0, int ak, int kb, float[][] panel) {
    for (int kk = 0; kk < kb; kk++) {
      float x0 = a0[ak + kk];
      float[] p = panel[kk];
      for (int j = 0; j < nb; j++) {
        c0[j] += x0 * p[j];
      }
    }
  }
}
