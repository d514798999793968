package org.foldcp.ops.cp;

import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.PairTensor;

/** Splits a whole pair tensor into the tiles of a {@link ShardLayout} and puts them back. */
public final class Sharding {
  private Sharding() {}

  /**
   * The tile of every rank, in rank order. Positions beyond N (padding) are zero and masked;
   * every tile carries a mask when there is padding or the input has one.
   */
  public static PairTensor[] shard(PairTensor x, ShardLayout layout) {
    InvalidInputException.require(x.isSquare() && x.rows() == layout.n(), "pair tensor shape", x.shapeString(),
        "must be (B, N, N, D) with N = " + layout.n() + " for " + layout);
    InvalidInputException.require(x.dim() == layout.dim(), "D of the pair tensor", x.dim(),
        "must equal the layout's D = " + layout.dim());
    PairTensor[] tiles = new PairTensor[layout.grid().size()];
    boolean padded = layout.paddedN() != layout.n();
    for (int r = 0; r < tiles.length; r++) {
      tiles[r] = tile(x, layout.tile(r), layout.n(), padded || x.hasMask());
    }
    return tiles;
  }

  /** One rank's tile of {@code x}, padded with masked zeros where it reaches beyond N. */
  public static PairTensor tile(PairTensor x, TileBounds t, int n, boolean withMask) {
    int d = x.dim();
    PairTensor out = PairTensor.zeros(x.batch(), t.rows, t.cols, d);
    byte[][] mask = withMask ? new byte[x.batch() * t.rows][t.cols] : null;
    int validCols = Math.max(0, Math.min(t.cols, n - t.col0));
    for (int b = 0; b < x.batch(); b++) {
      for (int i = 0; i < t.rows; i++) {
        int gi = t.row0 + i;
        if (gi >= n || validCols == 0) {
          continue; // a padding row: zeros, masked
        }
        System.arraycopy(x.row(b, gi), t.col0 * d, out.row(b, i), 0, validCols * d);
        if (mask != null) {
          byte[] src = x.maskRow(b, gi);
          byte[] dst = mask[b * t.rows + i];
          for (int j = 0; j < validCols; j++) {
            dst[j] = src == null ? 1 : src[t.col0 + j];
          }
        }
      }
    }
    out.setMask(mask);
    return out;
  }

  /**
   * Reassembles the (B, N, N, D) tensor from every rank's tile, dropping the padding. The mask
   * of the result is the tiles' mask where the original had one ({@code withMask}).
   */
  public static PairTensor unshard(PairTensor[] tiles, ShardLayout layout, boolean withMask) {
    InvalidInputException.require(tiles.length == layout.grid().size(), "tile count", tiles.length,
        "must equal cp = " + layout.grid().size() + " (grid " + layout.grid() + ")");
    int n = layout.n();
    int d = layout.dim();
    int batch = tiles[0].batch();
    PairTensor out = PairTensor.zeros(batch, n, n, d);
    for (int r = 0; r < tiles.length; r++) {
      TileBounds t = layout.tile(r);
      PairTensor tile = tiles[r];
      InvalidInputException.require(tile.rows() == t.rows && tile.cols() == t.cols && tile.dim() == d
              && tile.batch() == batch, "tile " + r + " shape", tile.shapeString(),
          "must be (" + batch + ", " + t.rows + ", " + t.cols + ", " + d + ") for " + layout);
      int validCols = Math.max(0, Math.min(t.cols, n - t.col0));
      for (int b = 0; b < batch; b++) {
        for (int i = 0; i < t.rows && t.row0 + i < n; i++) {
          if (validCols == 0) {
            continue;
          }
          System.arraycopy(tile.row(b, i), 0, out.row(b, t.row0 + i), t.col0 * d, validCols * d);
          if (withMask) {
            for (int j = 0; j < validCols; j++) {
              if (!tile.valid(b, i, j)) {
                out.setValid(b, t.row0 + i, t.col0 + j, false);
              } else if (out.hasMask()) {
                out.setValid(b, t.row0 + i, t.col0 + j, true);
              }
            }
          }
        }
      }
    }
    if (withMask && !out.hasMask()) {
      out.setValid(0, 0, 0, true); // an all-valid mask, so that "had a mask" survives the round trip
    }
    return out;
  }
}
