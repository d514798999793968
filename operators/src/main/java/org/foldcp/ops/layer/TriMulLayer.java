package org.foldcp.ops.layer;

import java.io.Serializable;
import java.util.Objects;

/** One TriMul layer: what it computes (spec) and with which weights. */
public final class TriMulLayer implements Serializable {
  private static final long serialVersionUID = 1L;

  private final TriMulSpec spec;
  private final LayerWeights weights;

  public TriMulLayer(TriMulSpec spec, LayerWeights weights) {
    this.spec = Objects.requireNonNull(spec, "spec");
    this.weights = Objects.requireNonNull(weights, "weights");
  }

  public TriMulSpec spec() { return spec; }

  public LayerWeights weights() { return weights; }

  public Direction direction() { return spec.direction(); }

  public int dim() { return weights.dim(); }

  /** The hidden width H (channels of a, b and the triangle product); equal to D in Boltz and AlphaFold3. */
  public int hidden() { return weights.hidden(); }

  /**
   * What makes two layers compute the same thing: the weights' digest and the spec (direction,
   * residual, eps). Layers of equal identity share one native layer on a device and count as the
   * same layer wherever a stack is compared.
   */
  public String identity() {
    return weights.digest() + "|" + spec.direction() + "|" + spec.residual() + "|" + Float.floatToIntBits(spec.eps());
  }

  @Override
  public String toString() {
    return "TriMulLayer(" + spec + ", " + weights + ")";
  }
}
