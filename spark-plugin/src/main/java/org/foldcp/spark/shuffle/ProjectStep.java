package org.foldcp.spark.shuffle;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.RankStages;
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
    TileKey key = keyed._1;
    TileRecord tile = keyed._2;
    float[][] toOwners;
    try (RankStages stages = stages(Retiling.layout(tile, grid), key.rank)) {
      long t0 = System.nanoTime();
      toOwners = stages.project(tile.tile, 0, prepared);
      computed(t0);
      metrics.reshardBytes(stages.bytesLeaving(toOwners));
    }
    List<Tuple2<TileKey, RankMessage>> out = new ArrayList<>(toOwners.length + 1);
    out.add(new Tuple2<>(key, RankMessage.tile(key.rank, tile)));
    for (int owner = 0; owner < toOwners.length; owner++) {
      out.add(new Tuple2<>(new TileKey(key.complexId, owner), RankMessage.payload(key.rank, toOwners[owner])));
    }
    return out;
  }
}
