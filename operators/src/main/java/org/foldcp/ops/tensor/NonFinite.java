package org.foldcp.ops.tensor;

import org.foldcp.ops.NonFiniteInputException;

/**
 * The input check for NaN and Inf in bf16 pair values: one such value spreads through LayerNorm
 * and the triangle product into almost every output, so it must fail where the data enters, not
 * show up as a NaN checksum. A bf16 value is non-finite when its exponent bits are all ones
 * ({@code (bits & 0x7F80) == 0x7F80}); the largest finite value, 0x7F7F, is not.
 *
 * <p>{@link #check} scans a whole tensor; backends that already walk every row (the GPU uploads)
 * feed a {@link Scan} from that loop instead, so the check costs no second pass.
 */
public final class NonFinite {
  private NonFinite() {}

  /** Whether a bf16 value is NaN or +-Inf. */
  public static boolean is(short bits) {
    return (bits & 0x7F80) == 0x7F80;
  }

  /**
   * Throws {@link NonFiniteInputException} naming {@code what}, the first (b, i, j, c) holding
   * NaN or Inf and how many there are, unless every value of x is finite.
   */
  public static void check(PairTensor x, String what) {
    Scan scan = new Scan(x.dim());
    for (int b = 0; b < x.batch(); b++) {
      for (int i = 0; i < x.rows(); i++) {
        scan.row(b, i, x.row(b, i));
      }
    }
    scan.throwIfFound(what);
  }

  /** Counts non-finite values row by row, remembering the first; for loops that read the rows anyway. */
  public static final class Scan {
    private final int dim;
    private long count;
    private int firstB = -1;
    private int firstI;
    private int firstQ;
    private short firstBits;

    public Scan(int dim) {
      this.dim = dim;
    }

    /** Row i of batch b, laid out [j][c] with D = dim. */
    public void row(int b, int i, short[] row) {
      for (int q = 0; q < row.length; q++) {
        if ((row[q] & 0x7F80) == 0x7F80) {
          if (count++ == 0) {
            firstB = b;
            firstI = i;
            firstQ = q;
            firstBits = row[q];
          }
        }
      }
    }

    public long count() {
      return count;
    }

    /** Throws when any row fed so far held NaN or Inf. */
    public void throwIfFound(String what) {
      if (count > 0) {
        throw new NonFiniteInputException(what, count, new int[] {firstB, firstI, firstQ / dim, firstQ % dim},
            firstBits, NonFiniteInputException.LIBRARY_HINT);
      }
    }
  }
}
