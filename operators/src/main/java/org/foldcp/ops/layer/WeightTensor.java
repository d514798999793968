package org.foldcp.ops.layer;

import java.io.Serializable;
import java.util.Arrays;
import java.util.Objects;
import org.foldcp.ops.InvalidInputException;

/** One named weight tensor: its shape as stored in the file and its values as float, row-major. */
public final class WeightTensor implements Serializable {
  private static final long serialVersionUID = 1L;

  private final String name;
  private final long[] shape;
  private final float[] values;

  public WeightTensor(String name, long[] shape, float[] values) {
    this.name = Objects.requireNonNull(name, "name");
    this.shape = shape.clone();
    this.values = Objects.requireNonNull(values, "values");
    // Messages are built only on failure: a shape of many dimensions must not cost its length
    // squared (one Arrays.toString per dimension) on the way to being accepted.
    long count = 1;
    boolean zero = false;
    boolean overflow = false;
    for (long s : shape) {
      if (s < 0) {
        throw InvalidInputException.of("shape of '" + name + "'", Arrays.toString(shape), "dimensions must be >= 0");
      }
      if (s == 0) {
        zero = true;
      } else if (!overflow && count > Long.MAX_VALUE / s) {
        overflow = true;
      } else if (!overflow) {
        count *= s;
      }
    }
    if (zero) {
      count = 0;
    } else if (overflow) {
      throw InvalidInputException.of("shape of '" + name + "'", Arrays.toString(shape),
          "the element count overflows 64 bits");
    }
    if (count != values.length) {
      throw InvalidInputException.of("value count of '" + name + "'", values.length,
          "must equal the product of its shape " + Arrays.toString(shape) + " = " + count);
    }
  }

  public String name() { return name; }

  public long[] shape() { return shape.clone(); }

  public float[] values() { return values; }

  public String shapeString() { return Arrays.toString(shape); }

  public boolean hasShape(long... expected) { return Arrays.equals(shape, expected); }
}
