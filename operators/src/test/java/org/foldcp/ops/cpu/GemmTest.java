package org.foldcp.ops.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The GEMM against a float64 reference (odd sizes, offsets, both forms, sizes across the MR, NR,
 * MC, KC and NC block edges), and the exact arithmetic it promises: each element is the
 * sequential fp32 FMA chain over k, whatever the kernel, the form or the split of M and N.
 */
class GemmTest {
  /** Sizes: tiny, odd, one short of / one past the register tile (6 x 16) and the cache blocks, large. */
  @ParameterizedTest(name = "nt m={0} n={1} k={2} accumulate={3}")
  @CsvSource(value = {"1,1,1,false", "3,5,7,false", "4,4,4,true", "6,16,1,false", "7,17,3,true",
      "17,513,9,false", "9,600,300,true", "130,70,520,false", "97,257,257,false", "96,256,256,true",
      "191,33,129,true", "5,300,2,false"})
  void ntMatchesFloat64WithOffsets(int m, int n, int k, boolean accumulate) {
    SplittableRandom r = new SplittableRandom(m * 31L + n * 7L + k);
    float[][] a = rand(r, m + 2, k + 3); // A is m x k at (2, 3)
    float[][] b = rand(r, n + 1, k + 5); // B is n x k at (1, 5)
    float[][] c = rand(r, m + 3, n + 4); // C is m x n at (1, 2); the rest must stay untouched
    float[][] expect = copy(c);
    double[][] abs = new double[c.length][c[0].length];
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        double s = accumulate ? c[1 + i][2 + j] : 0;
        double t = Math.abs(s);
        for (int q = 0; q < k; q++) {
          double p = (double) a[2 + i][3 + q] * b[1 + j][5 + q];
          s += p;
          t += Math.abs(p);
        }
        expect[1 + i][2 + j] = (float) s;
        abs[1 + i][2 + j] = t;
      }
    }
    new Gemm().nt(m, n, k, a, 2, 3, b, 1, 5, c, 1, 2, accumulate);
    assertClose(expect, abs, c, k);
  }

  @ParameterizedTest(name = "tn m={0} n={1} k={2} accumulate={3}")
  @CsvSource(value = {"1,1,1,false", "3,5,7,true", "6,16,1,false", "7,17,3,true", "17,513,9,false",
      "9,600,300,true", "130,70,520,false", "97,257,257,false", "256,256,256,false", "191,33,129,true"})
  void tnMatchesFloat64WithOffsets(int m, int n, int k, boolean accumulate) {
    SplittableRandom r = new SplittableRandom(m * 17L + n * 3L + k);
    float[][] a = rand(r, k + 1, m + 2); // A is k x m at (1, 2)
    float[][] b = rand(r, k + 3, n + 1); // B is k x n at (3, 1)
    float[][] c = rand(r, m + 2, n + 3); // C is m x n at (2, 3)
    float[][] expect = copy(c);
    double[][] abs = new double[c.length][c[0].length];
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        double s = accumulate ? c[2 + i][3 + j] : 0;
        double t = Math.abs(s);
        for (int q = 0; q < k; q++) {
          double p = (double) a[1 + q][2 + i] * b[3 + q][1 + j];
          s += p;
          t += Math.abs(p);
        }
        expect[2 + i][3 + j] = (float) s;
        abs[2 + i][3 + j] = t;
      }
    }
    new Gemm().tn(m, n, k, a, 1, 2, b, 3, 1, c, 2, 3, accumulate);
    assertClose(expect, abs, c, k);
  }

  /**
   * Bit for bit: every element is c = fma(a_k, b_k, c) in ascending k from 0 (or from C). This is
   * what makes CP equal cp = 1: it cannot depend on the tile, the split or the padding.
   */
  @ParameterizedTest(name = "m={0} n={1} k={2} accumulate={3}")
  @CsvSource({"1,1,1,false", "5,7,300,true", "13,31,9,false", "97,257,257,false", "100,20,600,true"})
  void everyElementIsTheSequentialFmaChain(int m, int n, int k, boolean accumulate) {
    SplittableRandom r = new SplittableRandom(m + 7L * n + 13L * k);
    float[][] a = rand(r, m, k);
    float[][] b = rand(r, n, k);
    float[][] c = rand(r, m, n);
    float[][] before = copy(c);
    float[][] expect = copy(c);
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        float s = accumulate ? c[i][j] : 0f;
        for (int q = 0; q < k; q++) {
          s = Math.fma(a[i][q], b[j][q], s);
        }
        expect[i][j] = s;
      }
    }
    new Gemm().nt(m, n, k, a, 0, 0, b, 0, 0, c, 0, 0, accumulate);
    assertBitEqual(expect, c);
    // and the scalar fallback kernel does the same operations
    float[][] c2 = copy(before);
    new Gemm(new Simd.Scalar()).nt(m, n, k, a, 0, 0, b, 0, 0, c2, 0, 0, accumulate);
    assertBitEqual(expect, c2);
  }

  @ParameterizedTest(name = "m={0} n={1} k={2} accumulate={3}")
  @CsvSource({"1,1,1,false", "3,5,7,true", "17,513,9,false", "9,600,300,true", "130,70,520,false", "97,257,257,true"})
  void transposedFormEqualsNtOnTransposedCopiesBitForBit(int m, int n, int k, boolean accumulate) {
    SplittableRandom r = new SplittableRandom(m * 13L + n * 5L + k);
    float[][] a = rand(r, k + 1, m + 2); // A is k x m at (1, 2)
    float[][] b = rand(r, k + 3, n + 1); // B is k x n at (3, 1)
    float[][] c1 = rand(r, m, n);
    float[][] c2 = copy(c1);
    float[][] at = new float[m][k];
    float[][] bt = new float[n][k];
    for (int q = 0; q < k; q++) {
      for (int i = 0; i < m; i++) {
        at[i][q] = a[1 + q][2 + i];
      }
      for (int j = 0; j < n; j++) {
        bt[j][q] = b[3 + q][1 + j];
      }
    }
    Gemm g = new Gemm();
    g.tn(m, n, k, a, 1, 2, b, 3, 1, c1, 0, 0, accumulate);
    g.nt(m, n, k, at, 0, 0, bt, 0, 0, c2, 0, 0, accumulate);
    assertBitEqual(c2, c1);
  }

  /**
   * The CP routes compute C in row and column pieces, on inputs padded with zero (masked) tokens
   * along k: every piece, and the padded product, must equal the whole product bit for bit.
   */
  @Test
  void piecesAndZeroPaddingReproduceTheWholeBitForBit() {
    int m = 61;
    int n = 75;
    int k = 53;
    int kp = 64; // k padded with zeros
    SplittableRandom r = new SplittableRandom(99);
    float[][] a = new float[m][kp];
    float[][] b = new float[n][kp];
    float[][] ra = rand(r, m, k);
    float[][] rb = rand(r, n, k);
    for (int i = 0; i < m; i++) {
      System.arraycopy(ra[i], 0, a[i], 0, k);
    }
    for (int j = 0; j < n; j++) {
      System.arraycopy(rb[j], 0, b[j], 0, k);
    }
    Gemm g = new Gemm();
    float[][] whole = new float[m][n];
    g.nt(m, n, k, a, 0, 0, b, 0, 0, whole, 0, 0, false);
    float[][] padded = new float[m][n];
    g.nt(m, n, kp, a, 0, 0, b, 0, 0, padded, 0, 0, false);
    assertBitEqual(whole, padded);
    int[] rowCuts = {0, 7, 20, 41, m};
    int[] colCuts = {0, 3, 33, 50, n};
    float[][] pieces = new float[m][n];
    for (int ri = 0; ri + 1 < rowCuts.length; ri++) {
      for (int ci = 0; ci + 1 < colCuts.length; ci++) {
        int r0 = rowCuts[ri];
        int c0 = colCuts[ci];
        g.nt(rowCuts[ri + 1] - r0, colCuts[ci + 1] - c0, kp, a, r0, 0, b, c0, 0, pieces, r0, c0, false);
      }
    }
    assertBitEqual(whole, pieces);
  }

  /** Both kernels give the same bits (the vector one only where the module is present). */
  @ParameterizedTest(name = "m={0} n={1} k={2}")
  @CsvSource({"6,16,4", "23,45,67", "96,256,256", "200,130,300"})
  void vectorAndScalarKernelsAgreeBitForBit(int m, int n, int k) {
    Assumptions.assumeTrue(Gemm.kernelName().startsWith("jdk.incubator.vector"),
        "this JVM runs without --add-modules jdk.incubator.vector: " + Gemm.kernelName());
    SplittableRandom r = new SplittableRandom(m * 3L + n + k * 5L);
    float[][] a = rand(r, k, m);
    float[][] b = rand(r, k, n);
    float[][] c1 = rand(r, m, n);
    float[][] c2 = copy(c1);
    new Gemm().tn(m, n, k, a, 0, 0, b, 0, 0, c1, 0, 0, true);
    new Gemm(new Simd.Scalar()).tn(m, n, k, a, 0, 0, b, 0, 0, c2, 0, 0, true);
    assertBitEqual(c2, c1);
  }

  /** The build and the test JVM (conf/spark-jvm.opts) run the vector kernel: the fast path is tested. */
  @Test
  void testJvmRunsTheVectorKernel() {
    assertTrue(Gemm.kernelName().startsWith("jdk.incubator.vector"), Gemm.kernelName());
  }

  @Test
  void zeroKClearsOrKeeps() {
    float[][] c = {{1f, 2f, 3f}, {4f, 5f, 6f}};
    new Gemm().nt(1, 2, 0, new float[1][0], 0, 0, new float[2][0], 0, 0, c, 1, 1, true);
    assertArrayEquals(new float[] {4f, 5f, 6f}, c[1], 0f);
    new Gemm().nt(1, 2, 0, new float[1][0], 0, 0, new float[2][0], 0, 0, c, 1, 1, false);
    assertArrayEquals(new float[] {4f, 0f, 0f}, c[1], 0f);
    assertArrayEquals(new float[] {1f, 2f, 3f}, c[0], 0f);
  }

  /**
   * |C - ref| within the tighter of 1e-4 (1 + |ref|) (this test's bound before the FMA kernel) and
   * the fp32 rounding bound of the sum of |terms| (k + 2 roundings at most); elsewhere untouched.
   */
  private static void assertClose(float[][] expect, double[][] abs, float[][] c, int k) {
    for (int i = 0; i < c.length; i++) {
      for (int j = 0; j < c[i].length; j++) {
        double tol = abs[i][j] == 0 ? 0
            : Math.min(1e-4 * (1 + Math.abs(expect[i][j])), (k + 2) * 0x1p-24 * abs[i][j]);
        assertEquals(expect[i][j], c[i][j], tol, "C[" + i + "][" + j + "]");
      }
    }
  }

  private static void assertBitEqual(float[][] expect, float[][] c) {
    for (int i = 0; i < expect.length; i++) {
      assertArrayEquals(expect[i], c[i], 0f, "row " + i);
    }
  }

  private static float[][] copy(float[][] x) {
    float[][] y = new float[x.length][];
    for (int i = 0; i < x.length; i++) {
      y[i] = x[i].clone();
    }
    return y;
  }

  private static float[][] rand(SplittableRandom r, int rows, int cols) {
    float[][] x = new float[rows][cols];
    for (float[] row : x) {
      for (int j = 0; j < cols; j++) {
        row[j] = (float) (r.nextDouble() * 2 - 1);
      }
    }
    return x;
  }
}
