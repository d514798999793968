package org.foldcp.spark.shuffle;

import java.util.List;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cpu.PreparedLayer;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.tiles.TileKey;
import scala.Tuple2;

/**
 * A step on the receiving end of a reshard (triangle, output): its elements are the groups of
 * RankMessages a shuffle delivers per key, each seen as a {@link RankInbox} of the given reshard;
 * the shuffle read and the inbox's assembly count as reshard time ({@link LayerStep}).
 */
abstract class InboxStep<V> extends LayerStep<Tuple2<TileKey, Iterable<RankMessage>>, V> {
  private static final long serialVersionUID = 1L;

  private final RankInbox.Reshard reshard;

  InboxStep(SharedStack stack, int layerIndex, CpGrid grid, int threads, RouteMetrics metrics,
            RankInbox.Reshard reshard) {
    super(stack, layerIndex, grid, threads, metrics);
    this.reshard = reshard;
  }

  @Override
  final boolean readsShuffle() {
    return true;
  }

  @Override
  final List<Tuple2<TileKey, V>> apply(Tuple2<TileKey, Iterable<RankMessage>> group, PreparedLayer prepared) {
    return apply(group._1, inbox(group._1, group._2, reshard), prepared);
  }

  /** The records the rank of {@code key} sends on, given its inbox. */
  abstract List<Tuple2<TileKey, V>> apply(TileKey key, RankInbox inbox, PreparedLayer prepared);
}
