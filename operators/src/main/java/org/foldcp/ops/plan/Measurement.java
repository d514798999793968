package org.foldcp.ops.plan;

import org.foldcp.ops.InvalidInputException;

/**
 * One measured forward of one TriMul layer at cp = 1 on one GPU: the shape, the median time and
 * where the number comes from (a results file and its row), so that every rate the cost model
 * rests on can be traced to a run.
 */
public record Measurement(int batch, int n, int dim, double seconds, String source) {
  public Measurement {
    InvalidInputException.require(batch >= 1 && n >= 1 && dim >= 1, "measured shape",
        "(" + batch + ", " + n + ", " + dim + ")", "B, N and D must be >= 1");
    InvalidInputException.require(seconds > 0 && Double.isFinite(seconds), "measured seconds of " + source, seconds,
        "must be a positive finite time");
  }

  /** The layer's multiply-add work, 2BN^3D + 12BN^2D^2 FLOPs (docs/benchmarks.md). */
  public double flops() {
    return CostModel.flops(batch, n, dim);
  }

  /** B * N^2 * D: the pair tensor's values, which the element-wise passes read and write. */
  public double elements() {
    return CostModel.elements(batch, n, dim);
  }
}
