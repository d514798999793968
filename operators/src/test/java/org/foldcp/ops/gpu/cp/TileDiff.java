package org.foldcp.ops.gpu.cp;

import java.util.BitSet;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;
import org.foldcp.ops.tensor.PairTensor;

/**
 * Where two (B, N, N, D) results differ, told per rank tile of a CP layout: how many tokens, the
 * bounding box inside the tile, and how many distinct tile rows and 128-token column blocks they
 * fall in. The shape of the difference points at a stage: stage 1 and stage 3 work on one tile
 * row x 128 tokens per CTA tile, stage 2 on 128 x 128 (i, j) blocks of one channel, a reshard on
 * a whole rank's share; a difference that is everywhere points at the inputs or the weights.
 */
final class TileDiff {
  private TileDiff() {}

  /** "" when the bits are equal, else one line per rank whose tile holds differing tokens. */
  static String where(PairTensor got, PairTensor want, ShardLayout layout) {
    StringBuilder sb = new StringBuilder();
    int n = got.rows();
    for (int r = 0; r < layout.grid().size(); r++) {
      TileBounds t = layout.tile(r);
      long count = 0;
      int r0 = Integer.MAX_VALUE;
      int r1 = -1;
      int c0 = Integer.MAX_VALUE;
      int c1 = -1;
      BitSet rows = new BitSet();
      BitSet colBlocks = new BitSet();
      for (int b = 0; b < got.batch(); b++) {
        for (int i = t.row0; i < Math.min(n, t.row0 + t.rows); i++) {
          short[] g = got.row(b, i);
          short[] w = want.row(b, i);
          for (int j = t.col0; j < Math.min(n, t.col0 + t.cols); j++) {
            if (!sameToken(g, w, j, got.dim())) {
              count++;
              int li = i - t.row0;
              int lj = j - t.col0;
              r0 = Math.min(r0, li);
              r1 = Math.max(r1, li);
              c0 = Math.min(c0, lj);
              c1 = Math.max(c1, lj);
              rows.set(li);
              colBlocks.set(lj / 128);
            }
          }
        }
      }
      if (count > 0) {
        sb.append(String.format("%n    rank %d (tile %dx%d at %d,%d): %d tokens differ, tile rows %d..%d (%d rows),"
            + " columns %d..%d (%d blocks of 128)", r, t.rows, t.cols, t.row0, t.col0, count, r0, r1, rows.cardinality(),
            c0, c1, colBlocks.cardinality()));
      }
    }
    return sb.toString();
  }

  private static boolean sameToken(short[] a, short[] b, int j, int dim) {
    for (int c = j * dim; c < (j + 1) * dim; c++) {
      if (a[c] != b[c]) {
        return false;
      }
    }
    return true;
  }
}
