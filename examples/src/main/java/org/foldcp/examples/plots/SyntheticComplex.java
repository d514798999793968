package org.foldcp.examples.plots;

import java.util.SplittableRandom;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.PairTensor;

/**
 * A made-up complex whose pair representation has structure to look at (unlike N(0, 1) noise):
 * two chains of tokens traced as persistent random walks in 3-D (3.8 units per step, like C-alpha
 * atoms), the second chain packed against the first. Channel c of pair (i, j) is
 * <ul>
 *   <li>for the first half of the channels, a radial basis function of the distance between
 *       tokens i and j (centres spread over 2 to 24 units): contact-map-like images;</li>
 *   <li>for the second half, a sinusoid of the sequence separation i - j within a chain (0 across
 *       chains): bands along the diagonal;</li>
 * </ul>
 * and the last {@code padding} tokens are padding: their rows and columns are masked and zero, as
 * when complexes of different sizes are batched.
 */
public final class SyntheticComplex {
  private SyntheticComplex() {}

  /** A (1, n, n, d) pair tensor; {@code padding} trailing tokens masked; deterministic in {@code seed}. */
  public static PairTensor make(int n, int d, int padding, long seed) {
    InvalidInputException.require(n >= 2, "N", n, "a synthetic complex needs at least 2 tokens");
    InvalidInputException.require(d >= 2, "D", d, "a synthetic complex needs at least 2 channels");
    InvalidInputException.require(padding >= 0 && padding < n, "padding", padding, "must lie in [0, N) for N = " + n);
    int real = n - padding;
    int chainA = Math.max(1, (real * 3) / 5);
    double[][] pos = positions(real, chainA, seed);
    PairTensor x = PairTensor.zeros(1, n, d);
    int rbf = d / 2;
    for (int i = 0; i < real; i++) {
      for (int j = 0; j < real; j++) {
        double dx = pos[i][0] - pos[j][0];
        double dy = pos[i][1] - pos[j][1];
        double dz = pos[i][2] - pos[j][2];
        double dist = Math.sqrt(dx * dx + dy * dy + dz * dz);
        for (int c = 0; c < rbf; c++) {
          double mu = 2 + 22.0 * c / Math.max(1, rbf - 1);
          double z = (dist - mu) / 2.5;
          x.set(0, i, j, c, (float) (2 * Math.exp(-0.5 * z * z) - 0.5));
        }
        boolean sameChain = (i < chainA) == (j < chainA);
        for (int c = rbf; c < d; c++) {
          int k = c - rbf;
          double freq = Math.PI / (2 + 3.0 * (k / 2));
          double v = sameChain ? ((k % 2 == 0) ? Math.cos((i - j) * freq) : Math.sin((i - j) * freq)) : 0;
          x.set(0, i, j, c, (float) v);
        }
      }
    }
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        if (i >= real || j >= real) {
          x.setValid(0, i, j, false);
        } else if (padding > 0) {
          x.setValid(0, i, j, true);
        }
      }
    }
    return x;
  }

  /** Token positions: chain A from the origin, chain B started next to A's middle. */
  static double[][] positions(int real, int chainA, long seed) {
    SplittableRandom rng = new SplittableRandom(seed);
    double[][] p = new double[real][3];
    walk(p, 0, chainA, new double[] {0, 0, 0}, rng);
    if (chainA < real) {
      double[] mid = p[chainA / 2];
      walk(p, chainA, real, new double[] {mid[0] + 8, mid[1] + 4, mid[2] - 4}, rng);
    }
    return p;
  }

  private static void walk(double[][] p, int from, int to, double[] start, SplittableRandom rng) {
    double[] dir = unit(new double[] {rng.nextDouble() - 0.5, rng.nextDouble() - 0.5, rng.nextDouble() - 0.5});
    double[] centre = start.clone();
    double[] cur = start.clone();
    for (int t = from; t < to; t++) {
      p[t] = cur.clone();
      // turn a little each step (a persistent walk), and pull back towards the chain's centre so it stays compact
      double[] noise = {rng.nextDouble() - 0.5, rng.nextDouble() - 0.5, rng.nextDouble() - 0.5};
      double[] back = {centre[0] - cur[0], centre[1] - cur[1], centre[2] - cur[2]};
      double r = Math.sqrt(back[0] * back[0] + back[1] * back[1] + back[2] * back[2]);
      double pull = r > 10 ? 0.06 * (r - 10) / r : 0;
      for (int a = 0; a < 3; a++) {
        dir[a] = dir[a] + 0.9 * noise[a] + pull * back[a];
      }
      dir = unit(dir);
      for (int a = 0; a < 3; a++) {
        cur[a] += 3.8 * dir[a];
      }
    }
  }

  private static double[] unit(double[] v) {
    double r = Math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    return r == 0 ? new double[] {1, 0, 0} : new double[] {v[0] / r, v[1] / r, v[2] / r};
  }
}
