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
    long count = 1;
    for (long s : shape) {
      InvalidInputException.require(s >= 0, "shape of '" + name + "'", Arrays.toString(shape),
          "dimensions must be >= 0");
      count *= s;
    }
    InvalidInputException.require(count == values.length, "value count of '" + name + "'", values.length,
        "must equal the product of its shape " + Arrays.toString(shape) + " = " + count);
  }

  public String name() { return name; }

  public long[] shape() { return shape.clone(); }

  public float[] values() { return values; }

  public String shapeString() { return Arrays.toString(shape); }

  public boolean hasShape(long... expected) { return Arrays.equals(shape, expected); }
}
