package org.foldcp.spark.barrier;

import java.io.Serializable;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;

/** A complex as the ranks of a team announce it: its id, N and D, all that fixes its layout. */
public record ComplexShape(String id, int nTokens, int dim) implements Serializable {
  public ShardLayout layout(CpGrid grid) {
    return ShardLayout.ofTiles(grid, nTokens, dim);
  }

  /** Whether rank's layout tile holds any position of the N x N grid, rather than only padding. */
  public boolean hasRealPositions(CpGrid grid, int rank) {
    TileBounds t = layout(grid).tile(rank);
    return t.row0 < nTokens && t.col0 < nTokens;
  }

  @Override
  public String toString() {
    return "'" + id + "' (N = " + nTokens + ", D = " + dim + ")";
  }
}
