package org.foldcp.ops.cpu;

import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;

/**
 * A layer's weights rearranged once for the CPU stages: Linear weights as flat row-major
 * matrices (the kernels' operand form), biases as zeros where absent so the inner loops have no
 * branches. The four input projections are interleaved per channel ({@link #inW}) so that any
 * channel range is one contiguous block of rows and one GEMM.
 */
public final class PreparedLayer {
  final int dim;
  /** The hidden width H: channels of a, b, z and LN_out. */
  final int hidden;
  final Direction direction;
  final boolean residual;
  final float eps;
  final float[] normInW;
  final float[] normInB;
  final float[] normOutW;
  final float[] normOutB;
  /**
   * The input projections, 4H x D: row 4c + r is, for r = 0..3, p_in row c (p of a), g_in row c
   * (g of a), p_in row H + c (p of b), g_in row H + c (g of b).
   */
  final float[] inW;
  /** Their biases in the same order (4H values). */
  final float[] inB;
  /** p_out, D x H, and g_out, D x D; row c = output channel c. */
  final float[] pOut;
  final float[] gOut;
  final float[] pOutB;
  final float[] gOutB;

  public PreparedLayer(TriMulLayer layer) {
    LayerWeights w = layer.weights();
    dim = w.dim();
    hidden = w.hidden();
    direction = layer.direction();
    residual = layer.spec().residual();
    eps = layer.spec().eps();
    normInW = w.get(LayerWeights.NORM_IN_W);
    normInB = w.get(LayerWeights.NORM_IN_B);
    normOutW = w.get(LayerWeights.NORM_OUT_W);
    normOutB = w.get(LayerWeights.NORM_OUT_B);
    float[] pIn = w.get(LayerWeights.P_IN_W);
    float[] gIn = w.get(LayerWeights.G_IN_W);
    float[] pInB = orZeros(w.bias(LayerWeights.P_IN_B), 2 * hidden);
    float[] gInB = orZeros(w.bias(LayerWeights.G_IN_B), 2 * hidden);
    inW = new float[4 * hidden * dim];
    inB = new float[4 * hidden];
    for (int c = 0; c < hidden; c++) {
      int[] src = {c, c, hidden + c, hidden + c};
      for (int r = 0; r < 4; r++) {
        float[] from = r % 2 == 0 ? pIn : gIn;
        System.arraycopy(from, src[r] * dim, inW, (4 * c + r) * dim, dim);
        inB[4 * c + r] = (r % 2 == 0 ? pInB : gInB)[src[r]];
      }
    }
    pOut = w.get(LayerWeights.P_OUT_W).clone();
    gOut = w.get(LayerWeights.G_OUT_W).clone();
    pOutB = orZeros(w.bias(LayerWeights.P_OUT_B), dim);
    gOutB = orZeros(w.bias(LayerWeights.G_OUT_B), dim);
  }

  public int dim() {
    return dim;
  }

  public int hidden() {
    return hidden;
  }

  public Direction direction() {
    return direction;
  }

  private static float[] orZeros(float[] v, int n) {
    return v != null ? v : new float[n];
  }
}
