package org.foldcp.ops.cpu;

import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;

/**
 * A layer's weights rearranged once for the CPU stages: Linear weights as arrays of rows (the
 * GEMM's operand form), biases as zeros where absent so the inner loops have no branches.
 */
public final class PreparedLayer {
  final int dim;
  final Direction direction;
  final boolean residual;
  final float eps;
  final float[] normInW;
  final float[] normInB;
  final float[] normOutW;
  final float[] normOutB;
  /** p_in rows: 0..D-1 project a, D..2D-1 project b. */
  final float[][] pIn;
  final float[][] gIn;
  final float[][] pOut;
  final float[][] gOut;
  final float[] pInB;
  final float[] gInB;
  final float[] pOutB;
  final float[] gOutB;

  public PreparedLayer(TriMulLayer layer) {
    LayerWeights w = layer.weights();
    dim = w.dim();
    direction = layer.direction();
    residual = layer.spec().residual();
    eps = layer.spec().eps();
    normInW = w.get(LayerWeights.NORM_IN_W);
    normInB = w.get(LayerWeights.NORM_IN_B);
    normOutW = w.get(LayerWeights.NORM_OUT_W);
    normOutB = w.get(LayerWeights.NORM_OUT_B);
    pIn = rows(w.get(LayerWeights.P_IN_W), 2 * dim, dim);
    gIn = rows(w.get(LayerWeights.G_IN_W), 2 * dim, dim);
    pOut = rows(w.get(LayerWeights.P_OUT_W), dim, dim);
    gOut = rows(w.get(LayerWeights.G_OUT_W), dim, dim);
    pInB = orZeros(w.bias(LayerWeights.P_IN_B), 2 * dim);
    gInB = orZeros(w.bias(LayerWeights.G_IN_B), 2 * dim);
    pOutB = orZeros(w.bias(LayerWeights.P_OUT_B), dim);
    gOutB = orZeros(w.bias(LayerWeights.G_OUT_B), dim);
  }

  public int dim() {
    return dim;
  }

  public Direction direction() {
    return direction;
  }

  private static float[][] rows(float[] flat, int r, int c) {
    float[][] out = new float[r][c];
    for (int i = 0; i < r; i++) {
      System.arraycopy(flat, i * c, out[i], 0, c);
    }
    return out;
  }

  private static float[] orZeros(float[] v, int n) {
    return v != null ? v : new float[n];
  }
}
