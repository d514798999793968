package org.foldcp.spark.shuffle;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.RankStages;
import org.foldcp.ops.cpu.PreparedLayer;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.tiles.TileKey;
import scala.Tuple2;

/**
 * Step 2 of a layer, at each channel owner: the a/b payloads of every tile, in source-rank
 * order, give the owner's D/cp channels over the whole grid; their triangle product is split
 * into one z payload per tile (the channel -> token shuffle). The owner's own layout tile, which
 * arrived in the same group, is passed on to its output step.
 */
final class TriangleStep extends LayerStep<Tuple2<TileKey, Iterable<RankMessage>>, RankMessage> {
  private static final long serialVersionUID = 1L;

  TriangleStep(SharedStack stack, int layerIndex, CpGrid grid, int threads, RouteMetrics metrics) {
    super(stack, layerIndex, grid, threads, metrics);
  }

  @Override
  boolean readsShuffle() {
    return true;
  }

  @Override
  List<Tuple2<TileKey, RankMessage>> apply(Tuple2<TileKey, Iterable<RankMessage>> group, PreparedLayer prepared) {
    TileKey owner = group._1;
    RankInbox inbox = inbox(owner, group._2, RankInbox.Reshard.TOKEN_TO_CHANNEL);
    float[][] toTiles;
    try (RankStages stages = stages(inbox.layout(), owner.rank)) {
      long t0 = System.nanoTime();
      toTiles = stages.triangle(inbox.fromRanks(), prepared);
      computed(t0);
      metrics.reshardBytes(stages.bytesLeaving(toTiles));
    }
    List<Tuple2<TileKey, RankMessage>> out = new ArrayList<>(toTiles.length + 1);
    out.add(new Tuple2<>(owner, RankMessage.tile(owner.rank, inbox.tile())));
    for (int dst = 0; dst < toTiles.length; dst++) {
      out.add(new Tuple2<>(new TileKey(owner.complexId, dst), RankMessage.payload(owner.rank, toTiles[dst])));
    }
    return out;
  }
}
