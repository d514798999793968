package org.foldcp.spark.udf;

import org.apache.spark.sql.RowFactory;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.PairTiles;

/**
 * The BINARY arguments of {@code foldcp_trimul}: a whole pair tensor, bf16 little-endian
 * [n][n][dim], and its mask, uint8 [n][n]. The byte layout is the one of pair-tile rows, so the
 * conversion goes through {@link PairTiles}, the one place that defines it: a whole complex is
 * the tile (0, 0, n, n). Lengths are checked here first, against the n and dim arguments, so
 * that errors name the SQL arguments rather than a tile.
 */
final class PairBytes {
  private static final int PAIR_FIELD = PairTiles.SCHEMA.fieldIndex("pair");

  private PairBytes() {}

  /** The (1, n, n, dim) tensor held in {@code pair}, with {@code mask} (null = all valid). */
  static PairTensor decode(byte[] pair, byte[] mask, int n, int dim) {
    long want = 2L * n * n * dim;
    InvalidInputException.require(want <= Integer.MAX_VALUE - 8, "(n, dim)", "(" + n + ", " + dim + ")",
        "a pair tensor of 2 * n * n * dim = " + want + " bytes does not fit in one BINARY value (< 2 GiB);"
            + " such complexes need the context-parallel routes, which hold one tile per row");
    InvalidInputException.require(pair.length == want, "pair length", pair.length + " bytes",
        "must be 2 * n * n * dim = 2 * " + n + " * " + n + " * " + dim + " = " + want
            + " bytes (bf16 little-endian, [n][n][dim])");
    if (mask != null) {
      long cells = (long) n * n;
      InvalidInputException.require(mask.length == cells, "mask length", mask.length + " bytes",
          "must be n * n = " + n + " * " + n + " = " + cells
              + " bytes (one uint8 per pair position, 1 = valid), or NULL for all valid");
    }
    return PairTiles.fromRow(RowFactory.create("foldcp_trimul argument", n, 0, 0, n, n, dim, pair, mask));
  }

  /** Batch element 0 of {@code t} as bf16 little-endian bytes [rows][cols][dim]. */
  static byte[] encode(PairTensor t) {
    return (byte[]) PairTiles.toRow("", t.rows(), 0, 0, t, 0).get(PAIR_FIELD);
  }
}
