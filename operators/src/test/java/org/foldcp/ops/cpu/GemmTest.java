package org.foldcp.ops.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class GemmTest {
  @ParameterizedTest(name = "m={0} n={1} k={2} accumulate={3}")
  @CsvSource({"1,1,1,false", "3,5,7,false", "4,4,4,true", "17,513,9,false", "9,600,300,true", "130,70,520,false"})
  void matchesNaiveProductWithOffsets(int m, int n, int k, boolean accumulate) {
    SplittableRandom r = new SplittableRandom(m * 31L + n * 7L + k);
    float[][] a = rand(r, m + 2, k + 3);
    float[][] b = rand(r, n + 1, k + 5);
    float[][] c = rand(r, m + 3, n + 4);
    float[][] expect = new float[c.length][];
    for (int i = 0; i < c.length; i++) {
      expect[i] = c[i].clone();
    }
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        double s = accumulate ? c[1 + i][2 + j] : 0;
        for (int q = 0; q < k; q++) {
          s += (double) a[2 + i][3 + q] * b[1 + j][5 + q];
        }
        expect[1 + i][2 + j] = (float) s;
      }
    }
    new Gemm().nt(m, n, k, a, 2, 3, b, 1, 5, c, 1, 2, accumulate);
    for (int i = 0; i < c.length; i++) {
      for (int j = 0; j < c[i].length; j++) {
        assertEquals(expect[i][j], c[i][j], 1e-4 * (1 + Math.abs(expect[i][j])), "C[" + i + "][" + j + "]");
      }
    }
  }

  @ParameterizedTest(name = "m={0} n={1} k={2} accumulate={3}")
  @CsvSource({"1,1,1,false", "3,5,7,true", "17,513,9,false", "9,600,300,true", "130,70,520,false"})
  void transposedFormEqualsNtOnTransposedCopiesBitForBit(int m, int n, int k, boolean accumulate) {
    SplittableRandom r = new SplittableRandom(m * 13L + n * 5L + k);
    float[][] a = rand(r, k + 1, m + 2); // A is k x m at (1, 2)
    float[][] b = rand(r, k + 3, n + 1); // B is k x n at (3, 1)
    float[][] c1 = rand(r, m, n);
    float[][] c2 = new float[m][];
    for (int i = 0; i < m; i++) {
      c2[i] = c1[i].clone();
    }
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
    for (int i = 0; i < m; i++) {
      org.junit.jupiter.api.Assertions.assertArrayEquals(c2[i], c1[i], 0f, "row " + i);
    }
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
