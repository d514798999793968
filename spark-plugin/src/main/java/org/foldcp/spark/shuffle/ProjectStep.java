package org.foldcp.spark.shuffle;

import java.util.List;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cpu.PreparedLayer;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.tiles.Retiling;
import org.foldcp.spark.tiles.TileKey;
import org.foldcp.spark.tiles.TileRecord;
import scala.Tuple2;

/**
 * Step 1 of a layer, on each layout tile: LN_in, projection and gates; [a | b] of the tile's
 * tokens goes to every channel owner (the token -> channel shuffle). The tile itself goes to its
 * own key too: that is where the channel owner of the same rank runs, and from there it moves on
 * with the z payloads to its output step, so no RDD is read twice and nothing needs caching.
 */
final class ProjectStep extends LayerStep<Tuple2<TileKey, TileRecord>, RankMessage> {
  private static final long serialVersionUID = 1L;

  ProjectStep(SharedStack stack, int layerIndex, CpGrid grid, int threads, RouteMetrics metrics) {
    super(stack, layerIndex, grid, threads, metrics);
  }

  @Override
  List<Tuple2<TileKey, RankMessage>> apply(Tuple2<TileKey, TileRecord> keyed, PreparedLayer prepared) {
    TileRecord tile = keyed._2;
    return send(keyed._1, tile, Retiling.layout(tile, grid), stages -> stages.project(tile.tile, 0, prepared));
  }
}
