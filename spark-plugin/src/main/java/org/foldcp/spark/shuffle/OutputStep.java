package org.foldcp.spark.shuffle;

import java.util.List;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cpu.PreparedLayer;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.tiles.TileKey;
import org.foldcp.spark.tiles.TileRecord;
import scala.Tuple2;

/**
 * Step 3 of a layer, at each tile: the z payloads of every channel owner give z token-major for
 * the tile's tokens; LN_out, output projection, gate and residual make the tile's next values.
 * The tile keeps its place, its mask and its key, ready for the next layer's projection.
 */
final class OutputStep extends InboxStep<TileRecord> {
  private static final long serialVersionUID = 1L;

  OutputStep(SharedStack stack, int layerIndex, CpGrid grid, int threads, RouteMetrics metrics) {
    super(stack, layerIndex, grid, threads, metrics, RankInbox.Reshard.CHANNEL_TO_TOKEN);
  }

  @Override
  List<Tuple2<TileKey, TileRecord>> apply(TileKey key, RankInbox inbox, PreparedLayer prepared) {
    TileRecord in = inbox.tile();
    PairTensor out = PairTensor.zeros(1, in.tile.rows(), in.tile.cols(), in.dim());
    out.setMask(in.tile.maskCopy());
    compute(inbox.layout(), key.rank, stages -> stages.output(in.tile, 0, prepared, inbox.fromRanks(), out));
    return List.of(new Tuple2<>(key, new TileRecord(in.complexId, in.nTokens, in.row0, in.col0, out)));
  }
}
