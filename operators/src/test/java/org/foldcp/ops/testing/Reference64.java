package org.foldcp.ops.testing;

import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.PairTensor;

/**
 * The float64 reference of docs/design.md section 1, written plainly and independently of the
 * backends (no blocking, no shared code with them): the yardstick of the accuracy contract.
 * Results are doubles laid out [B][N][N][D]; only for the small shapes tests use.
 */
public final class Reference64 {
  private Reference64() {}

  /** One layer on the bf16 values of {@code x}. */
  public static double[] forward(PairTensor x, TriMulLayer layer) {
    return forward(toDoubles(x), x, layer);
  }

  /**
   * A stack: every layer computes in float64 from the previous layer's output rounded to bf16,
   * exactly as the backends hand bf16 from one layer to the next.
   */
  public static double[] forward(PairTensor x, LayerStack stack) {
    PairTensor cur = x;
    double[] out = null;
    for (TriMulLayer layer : stack.layers()) {
      out = forward(cur, layer);
      cur = Tensors.fromDoubles(out, x);
    }
    return out;
  }

  private static double[] forward(double[] xv, PairTensor shapeAndMask, TriMulLayer layer) {
    int bs = shapeAndMask.batch();
    int n = shapeAndMask.rows();
    int d = shapeAndMask.dim();
    int h = layer.hidden();
    LayerWeights w = layer.weights();
    double eps = layer.spec().eps();
    double[] out = new double[xv.length];
    for (int b = 0; b < bs; b++) {
      double[][][] xn = new double[n][n][];
      double[][][] av = new double[n][n][h];
      double[][][] bv = new double[n][n][h];
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
          double[] t = new double[d];
          System.arraycopy(xv, idx(b, i, j, 0, n, d), t, 0, d);
          xn[i][j] = layerNorm(t, w.get(LayerWeights.NORM_IN_W), w.get(LayerWeights.NORM_IN_B), eps);
          double m = shapeAndMask.valid(b, i, j) ? 1.0 : 0.0;
          double[] p = linear(xn[i][j], w.get(LayerWeights.P_IN_W), w.bias(LayerWeights.P_IN_B), 2 * h);
          double[] g = linear(xn[i][j], w.get(LayerWeights.G_IN_W), w.bias(LayerWeights.G_IN_B), 2 * h);
          for (int c = 0; c < h; c++) {
            av[i][j][c] = sigmoid(g[c]) * p[c] * m;
            bv[i][j][c] = sigmoid(g[h + c]) * p[h + c] * m;
          }
        }
      }
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
          double[] z = new double[h];
          for (int k = 0; k < n; k++) {
            double[] ak = layer.direction() == Direction.OUTGOING ? av[i][k] : av[k][i];
            double[] bk = layer.direction() == Direction.OUTGOING ? bv[j][k] : bv[k][j];
            for (int c = 0; c < h; c++) {
              z[c] += ak[c] * bk[c];
            }
          }
          double[] lz = layerNorm(z, w.get(LayerWeights.NORM_OUT_W), w.get(LayerWeights.NORM_OUT_B), eps);
          double[] po = linear(lz, w.get(LayerWeights.P_OUT_W), w.bias(LayerWeights.P_OUT_B), d);
          double[] go = linear(xn[i][j], w.get(LayerWeights.G_OUT_W), w.bias(LayerWeights.G_OUT_B), d);
          for (int c = 0; c < d; c++) {
            double v = sigmoid(go[c]) * po[c];
            if (layer.spec().residual()) {
              v += xv[idx(b, i, j, c, n, d)];
            }
            out[idx(b, i, j, c, n, d)] = v;
          }
        }
      }
    }
    return out;
  }

  static int idx(int b, int i, int j, int c, int n, int d) {
    return ((b * n + i) * n + j) * d + c;
  }

  static double[] layerNorm(double[] v, float[] w, float[] bias, double eps) {
    double mean = 0;
    for (double x : v) {
      mean += x;
    }
    mean /= v.length;
    double var = 0;
    for (double x : v) {
      var += (x - mean) * (x - mean);
    }
    var /= v.length;
    double[] out = new double[v.length];
    for (int c = 0; c < v.length; c++) {
      out[c] = (v[c] - mean) / Math.sqrt(var + eps) * w[c] + bias[c];
    }
    return out;
  }

  /** y = W v (+ bias), W row-major (outDim x v.length). */
  static double[] linear(double[] v, float[] wt, float[] bias, int outDim) {
    double[] y = new double[outDim];
    for (int o = 0; o < outDim; o++) {
      double s = bias == null ? 0 : bias[o];
      for (int k = 0; k < v.length; k++) {
        s += (double) wt[o * v.length + k] * v[k];
      }
      y[o] = s;
    }
    return y;
  }

  static double sigmoid(double v) {
    return 1.0 / (1.0 + Math.exp(-v));
  }

  public static double[] toDoubles(PairTensor x) {
    int n = x.rows();
    int d = x.dim();
    double[] out = new double[(int) x.elementCount()];
    for (int b = 0; b < x.batch(); b++) {
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < x.cols(); j++) {
          for (int c = 0; c < d; c++) {
            out[((b * n + i) * x.cols() + j) * d + c] = x.get(b, i, j, c);
          }
        }
      }
    }
    return out;
  }
}
