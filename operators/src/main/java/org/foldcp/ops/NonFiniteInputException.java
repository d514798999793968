package org.foldcp.ops;

import org.foldcp.ops.tensor.Bf16;

/**
 * An input pair tensor holding NaN or Inf ({@link org.foldcp.ops.tensor.NonFinite}): the message
 * names the tensor, how many values are non-finite, the first (b, i, j, c) with its value, and how
 * to let such values through. Callers that know more (the complex, a tile's origin, the setting
 * that allows it) restate it with {@link #restated}.
 */
public final class NonFiniteInputException extends InvalidInputException {
  private static final long serialVersionUID = 1L;

  /** How the operator library lets non-finite input through. */
  public static final String LIBRARY_HINT = "pass allowNonFinite = true to TriMulBackend.forward to let them through";

  private final String what;
  private final long count;
  private final int[] first;
  private final short firstBits;

  public NonFiniteInputException(String what, long count, int[] first, short firstBits, String howToAllow) {
    super(message(what, count, first, firstBits, howToAllow));
    this.what = what;
    this.count = count;
    this.first = first.clone();
    this.firstBits = firstBits;
  }

  private static String message(String what, long count, int[] first, short bits, String howToAllow) {
    return "non-finite values in " + what + " = " + count + " (NaN or Inf; the first at (b, i, j, c) = (" + first[0]
        + ", " + first[1] + ", " + first[2] + ", " + first[3] + "), " + Bf16.toFloat(bits) + "): one NaN or Inf"
        + " spreads through the triangle product into almost every output; fix the input, or " + howToAllow;
  }

  /** How many values are NaN or Inf. */
  public long count() {
    return count;
  }

  /** The first non-finite position (b, i, j, c), in row-major order. */
  public int[] first() {
    return first.clone();
  }

  /**
   * The same finding about {@code newWhat}, its position moved by (row0, col0) (a tile's origin in
   * its complex), with {@code howToAllow} as the way to let the values through.
   */
  public NonFiniteInputException restated(String newWhat, int row0, int col0, String howToAllow) {
    NonFiniteInputException e = new NonFiniteInputException(newWhat, count,
        new int[] {first[0], first[1] + row0, first[2] + col0, first[3]}, firstBits, howToAllow);
    e.initCause(this);
    return e;
  }

  /** What the message names as the tensor. */
  public String what() {
    return what;
  }
}
