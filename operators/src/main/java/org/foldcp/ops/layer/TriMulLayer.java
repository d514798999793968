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

  @Override
  public String toString() {
    return "TriMulLayer(" + spec + ", " + weights + ")";
  }
}
