package org.foldcp.ops.testing;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.ops.tensor.Bf16;
import org.foldcp.ops.tensor.PairTensor;

/** Comparisons for tests: the accuracy contract and exact equality. */
public final class Tensors {
  private Tensors() {}

  /** ||out - ref|| / ||ref|| over all elements; NaN anywhere in out gives NaN. */
  public static double relativeError(PairTensor out, double[] ref) {
    double num = 0;
    double den = 0;
    int q = 0;
    for (int b = 0; b < out.batch(); b++) {
      for (int i = 0; i < out.rows(); i++) {
        for (int j = 0; j < out.cols(); j++) {
          for (int c = 0; c < out.dim(); c++) {
            double o = out.get(b, i, j, c);
            if (Double.isNaN(o)) {
              return Double.NaN;
            }
            double r = ref[q++];
            num += (o - r) * (o - r);
            den += r * r;
          }
        }
      }
    }
    return Math.sqrt(num) / Math.max(Math.sqrt(den), 1e-300);
  }

  /**
   * ||out - ref|| / ||ref|| between two bf16 tensors of one shape (NaN in out gives NaN), reading
   * their rows in place: for large tensors, where a double[] copy of the reference would not fit.
   */
  public static double relativeError(PairTensor out, PairTensor ref) {
    assertTrue(out.shapeString().equals(ref.shapeString()),
        "shape " + out.shapeString() + " must equal the reference's " + ref.shapeString());
    double num = 0;
    double den = 0;
    for (int b = 0; b < out.batch(); b++) {
      for (int i = 0; i < out.rows(); i++) {
        short[] ro = out.row(b, i);
        short[] rr = ref.row(b, i);
        for (int q = 0; q < ro.length; q++) {
          double o = Bf16.toFloat(ro[q]);
          double r = Bf16.toFloat(rr[q]);
          if (Double.isNaN(o)) {
            return Double.NaN;
          }
          num += (o - r) * (o - r);
          den += r * r;
        }
      }
    }
    return Math.sqrt(num) / Math.max(Math.sqrt(den), 1e-300);
  }

  /** Asserts the docs/design.md accuracy contract: relative error <= 1e-2 and no NaN. */
  public static double assertWithinContract(PairTensor out, double[] ref, String what) {
    double err = relativeError(out, ref);
    assertTrue(!Double.isNaN(err) && err <= 1e-2,
        what + ": ||out-ref||/||ref|| = " + err + " must be <= 1e-2 (NaN never passes)");
    return err;
  }

  /** A bf16 tensor with the values of {@code v} and the shape and mask of {@code like}. */
  public static PairTensor fromDoubles(double[] v, PairTensor like) {
    PairTensor t = PairTensor.zeros(like.batch(), like.rows(), like.cols(), like.dim());
    int q = 0;
    for (int b = 0; b < like.batch(); b++) {
      for (int i = 0; i < like.rows(); i++) {
        for (int j = 0; j < like.cols(); j++) {
          for (int c = 0; c < like.dim(); c++) {
            t.set(b, i, j, c, (float) v[q++]);
          }
          if (!like.valid(b, i, j)) {
            t.setValid(b, i, j, false);
          }
        }
      }
    }
    return t;
  }
}
