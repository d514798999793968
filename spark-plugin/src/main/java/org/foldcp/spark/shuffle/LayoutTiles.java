package org.foldcp.spark.shuffle;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.Partitioner;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.NonFiniteInput;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.tiles.Retiling;
import org.foldcp.spark.tiles.TileKey;
import org.foldcp.spark.tiles.TileRecord;
import scala.Tuple2;

/**
 * Input tiles in any tiling -> one layout tile per (complex, rank), keyed by {@link TileKey}.
 *
 * <p>Every rank needs a tile, also one whose window lies wholly in the padding beyond N (small N
 * on a grid whose dimensions do not divide it, e.g. N = 1 on 2x2): it still owns channels and
 * still sends its (masked, zero) a and b to every owner. No input tile falls into such a window,
 * so rank 0's tile, which every complex has, brings these along.
 */
final class LayoutTiles {
  private LayoutTiles() {}

  static JavaPairRDD<TileKey, TileRecord> of(JavaRDD<TileRecord> tiles, CpGrid grid, int dim, Partitioner partitioner,
                                             boolean allowNonFinite, RouteMetrics metrics) {
    return tiles
        .flatMapToPair(t -> {
          InvalidInputException.require(t.dim() == dim, "D of a tile of complex '" + t.complexId + "'", t.dim(),
              "must equal the layer stack's D = " + dim);
          if (!allowNonFinite) {
            NonFiniteInput.check(t);
          }
          metrics.bytesIn(t.pairBytes());
          return Retiling.pieces(t, grid).iterator();
        })
        .groupByKey(partitioner)
        .flatMapToPair(group -> withWhollyPaddedRanks(Retiling.assemble(group._1, group._2, grid), group._1, grid)
            .iterator());
  }

  /** The assembled tile, and for rank 0 the tiles of the ranks that lie wholly beyond N. */
  static List<Tuple2<TileKey, TileRecord>> withWhollyPaddedRanks(TileRecord assembled, TileKey key, CpGrid grid) {
    List<Tuple2<TileKey, TileRecord>> out = new ArrayList<>(1);
    out.add(new Tuple2<>(key, assembled));
    if (key.rank == 0) {
      ShardLayout layout = Retiling.layout(assembled, grid);
      for (int rank = 1; rank < grid.size(); rank++) {
        TileBounds t = layout.tile(rank);
        if (t.row0 >= layout.n() || t.col0 >= layout.n()) {
          out.add(new Tuple2<>(new TileKey(key.complexId, rank), paddingTile(assembled, t)));
        }
      }
    }
    return out;
  }

  /** Zeros, every position masked: what padding is everywhere else in the layout. */
  private static TileRecord paddingTile(TileRecord of, TileBounds t) {
    PairTensor tile = PairTensor.zeros(1, t.rows, t.cols, of.dim());
    tile.setMask(new byte[t.rows][t.cols]);
    return new TileRecord(of.complexId, of.nTokens, t.row0, t.col0, tile);
  }
}
