package org.foldcp.ops.cp;

import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cpu.PreparedLayer;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;

/**
 * One rank of a context-parallel TriMul on the CPU (docs/design.md section 2): it holds one token
 * tile, keeps it resident across the layers of a stack, and meets its peers only through the
 * two all-to-alls of a {@link ReshardTransport}:
 * <ol>
 *   <li>projection of the tile; a and b for each channel owner packed per {@link TokenToChannel};
 *   <li>all-to-all; this rank assembles its D/cp channels over the whole grid;
 *   <li>triangle product per owned channel; z packed per destination per {@link ChannelToToken};
 *   <li>all-to-all; LN_out, output projection, gate and residual on the tile.
 * </ol>
 * Any failure is reported to the peers through {@link ReshardTransport#abort} so none waits.
 */
public final class CpRank implements AutoCloseable {
  private final ShardLayout layout;
  private final ReshardTransport transport;
  private final RankStages stages;
  private long tokenToChannelBytes;
  private long channelToTokenBytes;

  public CpRank(ShardLayout layout, ReshardTransport transport, int threads) {
    InvalidInputException.require(transport.size() == layout.grid().size(), "team size", transport.size(),
        "must equal cp = " + layout.grid().size() + " of the layout " + layout);
    this.layout = layout;
    this.transport = transport;
    this.stages = new RankStages(layout, transport.rank(), threads);
  }

  public int rank() {
    return transport.rank();
  }

  /** Bytes of a and b this rank sent to other ranks (first reshard), over all forwards. */
  public long tokenToChannelBytes() {
    return tokenToChannelBytes;
  }

  /** Bytes of z this rank sent to other ranks (second reshard), over all forwards. */
  public long channelToTokenBytes() {
    return channelToTokenBytes;
  }

  /** Applies the stack to this rank's tile (shape of {@link ShardLayout#tile}); returns the new tile. */
  public PairTensor forward(PairTensor tile, LayerStack stack) {
    try {
      TileBounds t = layout.tile(rank());
      InvalidInputException.require(tile.rows() == t.rows && tile.cols() == t.cols && tile.dim() == layout.dim(),
          "tile shape on rank " + rank(), tile.shapeString(),
          "must be (B, " + t.rows + ", " + t.cols + ", " + layout.dim() + ") for " + layout);
      InvalidInputException.require(stack.dim() == layout.dim(), "D of the layer stack", stack.dim(),
          "must equal the pair tensor's D = " + layout.dim());
      PairTensor cur = tile;
      for (int l = 0; l < stack.size(); l++) {
        cur = layer(cur, new PreparedLayer(stack.get(l)));
      }
      return cur;
    } catch (RuntimeException | Error e) {
      transport.abort(e);
      throw e;
    }
  }

  private PairTensor layer(PairTensor tile, PreparedLayer pl) {
    PairTensor out = PairTensor.zeros(tile.batch(), tile.rows(), tile.cols(), layout.dim());
    out.setMask(tile.maskCopy());
    for (int b = 0; b < tile.batch(); b++) {
      float[][] ab = stages.project(tile, b, pl);
      tokenToChannelBytes += stages.bytesLeaving(ab);
      float[][] z = stages.triangle(transport.allToAll(ab), pl);
      channelToTokenBytes += stages.bytesLeaving(z);
      stages.output(tile, b, pl, transport.allToAll(z), out);
    }
    return out;
  }

  @Override
  public void close() {
    stages.close();
  }
}
