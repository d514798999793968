package org.foldcp.spark.shuffle;

import java.util.List;
import org.foldcp.ops.cp.CpGrid;
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
final class TriangleStep extends InboxStep<RankMessage> {
  private static final long serialVersionUID = 1L;

  TriangleStep(SharedStack stack, int layerIndex, CpGrid grid, int threads, RouteMetrics metrics) {
    super(stack, layerIndex, grid, threads, metrics, RankInbox.Reshard.TOKEN_TO_CHANNEL);
  }

  @Override
  List<Tuple2<TileKey, RankMessage>> apply(TileKey owner, RankInbox inbox, PreparedLayer prepared) {
    return send(owner, inbox.tile(), inbox.layout(), stages -> stages.triangle(inbox.fromRanks(), prepared));
  }
}
