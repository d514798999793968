package org.foldcp.spark.barrier;

import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.tiles.Retiling;
import org.foldcp.spark.tiles.TileRecord;

/**
 * A rank's layout tiles, whatever moves its reshards: checked on the way in, padded where the
 * layout tile lies beyond N, cropped to N and counted on the way out. The TCP ranks
 * ({@link TcpRankTask}) and the GPU ranks ({@link GpuRankTask}) both use them.
 */
final class RankTiles {
  private RankTiles() {}

  /** This rank's layout tile per complex; each must be the tile the layout gives this rank. */
  static Map<String, TileRecord> tilesOf(int rank, Iterator<TileRecord> input, CpGrid grid) {
    Map<String, TileRecord> mine = new TreeMap<>();
    while (input.hasNext()) {
      TileRecord r = input.next();
      TileBounds t = Retiling.layout(r, grid).tile(rank);
      if (r.row0 != t.row0 || r.col0 != t.col0 || r.tile.rows() != t.rows || r.tile.cols() != t.cols) {
        throw new IllegalStateException("rank " + rank + " received " + r + ", but its layout tile of that complex is "
            + t + ": the tiles were not partitioned by rank");
      }
      if (mine.put(r.complexId, r) != null) {
        throw new IllegalStateException("rank " + rank + " received two layout tiles of complex '" + r.complexId + "'");
      }
    }
    return mine;
  }

  /**
   * This rank's layout tile of complex {@code c}: the one it received, or a padding tile when its
   * layout tile lies wholly beyond N; its real positions count as bytes in.
   */
  static TileRecord layoutTile(ComplexShape c, Map<String, TileRecord> mine, CpGrid grid, int rank,
                               RouteMetrics metrics) {
    TileRecord in = mine.containsKey(c.id()) ? mine.get(c.id()) : paddingTile(c, c.layout(grid), rank);
    TileRecord realIn = Retiling.crop(in);
    metrics.bytesIn(realIn == null ? 0 : realIn.pairBytes());
    return in;
  }

  /** The output {@code y} of layout tile {@code in}, cropped to N and counted; null when it is all padding. */
  static TileRecord output(ComplexShape c, TileRecord in, PairTensor y, RouteMetrics metrics) {
    TileRecord o = Retiling.crop(new TileRecord(c.id(), c.nTokens(), in.row0, in.col0, y));
    if (o != null) {
      metrics.tiles(1);
      metrics.bytesOut(o.pairBytes());
    }
    return o;
  }

  /** The tile of a rank whose whole layout tile lies beyond N: zeros, every position masked. */
  static TileRecord paddingTile(ComplexShape c, ShardLayout layout, int rank) {
    TileBounds t = layout.tile(rank);
    PairTensor tile = PairTensor.zeros(1, t.rows, t.cols, c.dim());
    tile.setMask(new byte[t.rows][t.cols]);
    return new TileRecord(c.id(), c.nTokens(), t.row0, t.col0, tile);
  }
}
