package org.foldcp.ops.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The GEMM of every kernel (pure Java, and each native variant this CPU runs) against a float64
 * reference (odd sizes, offsets, row strides, every form, sizes across the register tile and
 * cache block edges), and the exact arithmetic it promises: each element is the sequential fp32
 * FMA chain over k, whatever the kernel, the form or the split of M and N.
 */
class GemmTest {
  /** The pure-Java kernels (vector or plain, as this JVM runs them) and every native variant here. */
  static List<CpuKernels> allKernels() {
    List<CpuKernels> out = new ArrayList<>();
    out.add(new JavaKernels());
    for (int v : NativeKernels.runnableVariants()) {
      out.add(new NativeKernels(v));
    }
    return out;
  }

  static Stream<Arguments> shapes() {
    int[][] sizes = {{1, 1, 1}, {3, 5, 7}, {4, 4, 4}, {6, 16, 1}, {7, 17, 3}, {8, 32, 5}, {9, 33, 300},
        {17, 513, 9}, {130, 70, 520}, {97, 257, 257}, {96, 256, 256}, {191, 33, 129}, {5, 300, 2}};
    List<Arguments> out = new ArrayList<>();
    int rot = 0;
    for (CpuKernels k : allKernels()) {
      for (int[] s : sizes) {
        rot++;
        out.add(Arguments.of(k.describe(), k, s[0], s[1], s[2], rot % 2 == 0, rot % 4 < 2, rot % 3 == 0));
      }
    }
    return out.stream();
  }

  @ParameterizedTest(name = "{0} m={2} n={3} k={4} ta={5} tb={6} accumulate={7}")
  @MethodSource("shapes")
  void matchesFloat64WithOffsetsAndStrides(String name, CpuKernels kern, int m, int n, int k, boolean ta, boolean tb,
                                           boolean accumulate) {
    SplittableRandom r = new SplittableRandom(m * 31L + n * 7L + k);
    Mat a = Mat.random(r, ta ? k : m, ta ? m : k);
    Mat b = Mat.random(r, tb ? n : k, tb ? k : n);
    Mat c = Mat.random(r, m, n);
    float[] expect = c.data.clone();
    double[] abs = new double[c.data.length];
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        double s = accumulate ? c.get(i, j) : 0;
        double t = Math.abs(s);
        for (int q = 0; q < k; q++) {
          double p = (double) (ta ? a.get(q, i) : a.get(i, q)) * (tb ? b.get(j, q) : b.get(q, j));
          s += p;
          t += Math.abs(p);
        }
        expect[c.at(i, j)] = (float) s;
        abs[c.at(i, j)] = t;
      }
    }
    kern.gemm(ta, tb, m, n, k, a.data, a.off, a.ld, b.data, b.off, b.ld, c.data, c.off, c.ld, accumulate);
    for (int i = 0; i < c.data.length; i++) {
      // |C - ref| within the fp32 rounding bound of the sum of |terms|; outside C untouched
      double tol = (k + 2) * 0x1p-24 * abs[i];
      assertEquals(expect[i], c.data[i], tol, "C element " + i);
    }
  }

  /**
   * Bit for bit: every element is c = fma(a_k, b_k, c) in ascending k from 0 (or from C), in every
   * kernel and every form. This is what makes CP equal cp = 1 (it cannot depend on the tile, the
   * split or the padding) and the native kernels equal the Java ones.
   */
  @ParameterizedTest(name = "{0} m={2} n={3} k={4} ta={5} tb={6} accumulate={7}")
  @MethodSource("shapes")
  void everyElementIsTheSequentialFmaChain(String name, CpuKernels kern, int m, int n, int k, boolean ta, boolean tb,
                                           boolean accumulate) {
    SplittableRandom r = new SplittableRandom(m + 7L * n + 13L * k);
    Mat a = Mat.random(r, ta ? k : m, ta ? m : k);
    Mat b = Mat.random(r, tb ? n : k, tb ? k : n);
    Mat c = Mat.random(r, m, n);
    float[] expect = c.data.clone();
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        float s = accumulate ? c.get(i, j) : 0f;
        for (int q = 0; q < k; q++) {
          s = Math.fma(ta ? a.get(q, i) : a.get(i, q), tb ? b.get(j, q) : b.get(q, j), s);
        }
        expect[c.at(i, j)] = s;
      }
    }
    kern.gemm(ta, tb, m, n, k, a.data, a.off, a.ld, b.data, b.off, b.ld, c.data, c.off, c.ld, accumulate);
    assertArrayEquals(expect, c.data, 0f);
  }

  /**
   * The CP routes compute C in row and column pieces, on inputs padded with zero (masked) tokens
   * along k: every piece, and the padded product, must equal the whole product bit for bit.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("kernelNames")
  void piecesAndZeroPaddingReproduceTheWholeBitForBit(String name, CpuKernels g) {
    int m = 61;
    int n = 75;
    int k = 53;
    int kp = 64; // k padded with zeros
    SplittableRandom r = new SplittableRandom(99);
    float[] a = new float[m * kp];
    float[] b = new float[n * kp];
    for (int i = 0; i < m; i++) {
      for (int q = 0; q < k; q++) {
        a[i * kp + q] = (float) (r.nextDouble() * 2 - 1);
      }
    }
    for (int j = 0; j < n; j++) {
      for (int q = 0; q < k; q++) {
        b[j * kp + q] = (float) (r.nextDouble() * 2 - 1);
      }
    }
    float[] whole = new float[m * n];
    g.gemm(false, true, m, n, k, a, 0, kp, b, 0, kp, whole, 0, n, false);
    float[] padded = new float[m * n];
    g.gemm(false, true, m, n, kp, a, 0, kp, b, 0, kp, padded, 0, n, false);
    assertArrayEquals(whole, padded, 0f);
    int[] rowCuts = {0, 7, 20, 41, m};
    int[] colCuts = {0, 3, 33, 50, n};
    float[] pieces = new float[m * n];
    for (int ri = 0; ri + 1 < rowCuts.length; ri++) {
      for (int ci = 0; ci + 1 < colCuts.length; ci++) {
        int r0 = rowCuts[ri];
        int c0 = colCuts[ci];
        g.gemm(false, true, rowCuts[ri + 1] - r0, colCuts[ci + 1] - c0, kp, a, r0 * kp, kp, b, c0 * kp, kp,
            pieces, r0 * n + c0, n, false);
      }
    }
    assertArrayEquals(whole, pieces, 0f);
    // and A^T B on transposed copies is the same product
    float[] at = new float[kp * m];
    float[] bt = new float[kp * n];
    for (int q = 0; q < kp; q++) {
      for (int i = 0; i < m; i++) {
        at[q * m + i] = a[i * kp + q];
      }
      for (int j = 0; j < n; j++) {
        bt[q * n + j] = b[j * kp + q];
      }
    }
    float[] tn = new float[m * n];
    g.gemm(true, false, m, n, kp, at, 0, m, bt, 0, n, tn, 0, n, false);
    assertArrayEquals(whole, tn, 0f);
  }

  static Stream<Arguments> kernelNames() {
    return allKernels().stream().map(k -> Arguments.of(k.describe(), k));
  }

  /** The plain-Java micro-kernel (a JVM without the Vector API module) gives the same bits. */
  @Test
  void scalarMicroKernelAgreesBitForBit() {
    int m = 23;
    int n = 45;
    int k = 67;
    SplittableRandom r = new SplittableRandom(5);
    Mat a = Mat.random(r, k, m);
    Mat b = Mat.random(r, k, n);
    Mat c1 = Mat.random(r, m, n);
    float[] c2 = c1.data.clone();
    new Gemm().gemm(true, false, m, n, k, a.data, a.off, a.ld, b.data, b.off, b.ld, c1.data, c1.off, c1.ld, true);
    new Gemm(new Simd.Scalar()).gemm(true, false, m, n, k, a.data, a.off, a.ld, b.data, b.off, b.ld, c2, c1.off,
        c1.ld, true);
    assertArrayEquals(c1.data, c2, 0f);
  }

  /**
   * Where the build had gcc (CI, the README's machines) the JVM runs the native kernels: the fast
   * path is what the other tests exercise.
   */
  @Test
  void selectedKernelsAreNativeWhereTheLibraryIsBuilt() {
    Assumptions.assumeTrue(NativeKernels.class.getResource("/amd64/Linux/" + NativeKernels.LIBRARY_FILE) != null,
        "this build has no " + NativeKernels.LIBRARY_FILE + " (built without gcc)");
    assertEquals(null, NativeKernels.unavailableReason());
    assertTrue(CpuKernels.selected().isNative(), CpuKernels.selected().describe());
  }

  @Test
  void outOfRangeOperandsAreRefusedBeforeAnyKernelRuns() {
    for (CpuKernels g : allKernels()) {
      float[] c = new float[6];
      IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class,
          () -> g.gemm(false, false, 2, 3, 4, new float[7], 0, 4, new float[12], 0, 3, c, 0, 3, false));
      assertTrue(e.getMessage().startsWith("A: 8 values"), e.getMessage());
      e = assertThrows(IndexOutOfBoundsException.class,
          () -> g.gemm(false, false, 2, 3, 4, new float[8], 0, 4, new float[12], 0, 3, c, 1, 3, false));
      assertTrue(e.getMessage().startsWith("C: 6 values from offset 1"), e.getMessage());
    }
  }

  @Test
  void zeroKClearsOrKeeps() {
    for (CpuKernels g : allKernels()) {
      float[] c = {1f, 2f, 3f, 4f, 5f, 6f};
      g.gemm(false, true, 1, 2, 0, new float[0], 0, 1, new float[0], 0, 1, c, 4, 3, true);
      assertArrayEquals(new float[] {1f, 2f, 3f, 4f, 5f, 6f}, c, 0f);
      g.gemm(false, true, 1, 2, 0, new float[0], 0, 1, new float[0], 0, 1, c, 4, 3, false);
      assertArrayEquals(new float[] {1f, 2f, 3f, 4f, 0f, 0f}, c, 0f);
    }
  }

  /** A rows x cols matrix inside a larger array: offset and row stride past the values. */
  static final class Mat {
    final float[] data;
    final int off;
    final int ld;

    Mat(float[] data, int off, int ld) {
      this.data = data;
      this.off = off;
      this.ld = ld;
    }

    static Mat random(SplittableRandom r, int rows, int cols) {
      int off = 1 + rows % 3;
      int ld = cols + cols % 5 + 1;
      float[] d = new float[off + rows * ld + 2];
      for (int i = 0; i < d.length; i++) {
        d[i] = (float) (r.nextDouble() * 2 - 1);
      }
      return new Mat(d, off, ld);
    }

    int at(int i, int j) {
      return off + i * ld + j;
    }

    float get(int i, int j) {
      return data[at(i, j)];
    }
  }
}
