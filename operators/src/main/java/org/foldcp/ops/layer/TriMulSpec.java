package org.foldcp.ops.layer;

import java.io.Serializable;
import java.util.Objects;
import org.foldcp.ops.InvalidInputException;

/** What a TriMul layer computes, apart from its weights: direction, residual, LayerNorm eps. */
public final class TriMulSpec implements Serializable {
  private static final long serialVersionUID = 1L;
  public static final float DEFAULT_EPS = 1e-5f;

  private final Direction direction;
  private final boolean residual;
  private final float eps;

  public TriMulSpec(Direction direction, boolean residual, float eps) {
    this.direction = Objects.requireNonNull(direction, "direction");
    InvalidInputException.require(eps > 0 && Float.isFinite(eps), "eps", eps,
        "the LayerNorm epsilon must be a finite number > 0");
    this.residual = residual;
    this.eps = eps;
  }

  public static TriMulSpec of(Direction direction) {
    return new TriMulSpec(direction, false, DEFAULT_EPS);
  }

  public static TriMulSpec of(Direction direction, boolean residual) {
    return new TriMulSpec(direction, residual, DEFAULT_EPS);
  }

  public Direction direction() { return direction; }

  public boolean residual() { return residual; }

  public float eps() { return eps; }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof TriMulSpec)) {
      return false;
    }
    TriMulSpec s = (TriMulSpec) o;
    return s.direction == direction && s.residual == residual && Float.compare(s.eps, eps) == 0;
  }

  @Override
  public int hashCode() {
    return Objects.hash(direction, residual, eps);
  }

  @Override
  public String toString() {
    return direction.label() + (residual ? "+residual" : "") + " eps=" + eps;
  }
}
