package org.foldcp.spark.route;

import org.foldcp.ops.NonFiniteInputException;
import org.foldcp.ops.tensor.NonFinite;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.tiles.TileRecord;

/**
 * The Spark side of the check for NaN and Inf in pair tensors: every route and foldcp_trimul
 * run it where the data enters (unless {@link FoldCpConf#INPUT_ALLOW_NON_FINITE} is true), and
 * the message names the complex, the first (b, i, j, c) in the complex's coordinates, the count
 * and the key that lets such values through.
 */
public final class NonFiniteInput {
  /** The way to let non-finite values through, as the messages state it. */
  public static final String HINT = "set " + FoldCpConf.INPUT_ALLOW_NON_FINITE.name() + " = true to let them through"
      + " (outputs may then be NaN)";

  private NonFiniteInput() {}

  /** Fails when tile {@code t} holds NaN or Inf; the count is the tile's. */
  public static void check(TileRecord t) {
    try {
      NonFinite.check(t.tile, "the pair tensor");
    } catch (NonFiniteInputException e) {
      throw about(e, t);
    }
  }

  /** {@code e}, found in tile {@code t} by a backend, restated for the tile's complex. */
  public static NonFiniteInputException about(NonFiniteInputException e, TileRecord t) {
    boolean whole = t.row0 == 0 && t.col0 == 0 && t.tile.rows() == t.nTokens && t.tile.cols() == t.nTokens;
    String what = "the pair tensor of complex '" + t.complexId + "'"
        + (whole ? "" : " (its tile at row " + t.row0 + ", column " + t.col0 + ")");
    return e.restated(what, t.row0, t.col0, HINT);
  }

  /** {@code e} restated for {@code what} (a tensor with no complex id, e.g. a row of foldcp_trimul). */
  public static NonFiniteInputException about(NonFiniteInputException e, String what) {
    return e.restated(what, 0, 0, HINT);
  }
}
