package org.foldcp.ops.cp;

import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cpu.Gemm;
import org.foldcp.ops.cpu.Parallel;
import org.foldcp.ops.cpu.PreparedLayer;
import org.foldcp.ops.cpu.Stages;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;

/**
 * One rank of a context-parallel TriMul on the CPU (DESIGN.md section 2): it holds one token
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
  private final Parallel parallel;
  private long tokenToChannelBytes;
  private long channelToTokenBytes;

  public CpRank(ShardLayout layout, ReshardTransport transport, int threads) {
    InvalidInputException.require(transport.size() == layout.grid().size(), "team size", transport.size(),
        "must equal cp = " + layout.grid().size() + " of the layout " + layout);
    this.layout = layout;
    this.transport = transport;
    this.parallel = new Parallel(threads);
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
    int cp = layout.grid().size();
    int me = rank();
    int d = layout.dim();
    int np = layout.paddedN();
    int dc = layout.channelsPerRank();
    PairTensor out = PairTensor.zeros(tile.batch(), tile.rows(), tile.cols(), d);
    out.setMask(tile.maskCopy());
    List<ReshardSegment> toOwners = TokenToChannel.sentBy(layout, me);
    List<ReshardSegment> toTiles = ChannelToToken.sentBy(layout, me);
    for (int b = 0; b < tile.batch(); b++) {
      final int bb = b;
      // 1. projection; a and b of each owner's channels go into one payload: [a | b]
      float[][] send = new float[cp][];
      for (ReshardSegment s : toOwners) {
        send[s.dst] = new float[(int) (2 * s.length())];
        tokenToChannelBytes += s.dst == me ? 0 : 2 * s.length() * Float.BYTES;
      }
      Stages.ProjectionSink sink = (i, c0, a, bv) -> {
        for (ReshardSegment s : toOwners) {
          float[] p = send[s.dst];
          TokenToChannel.packRow(s, i, a, c0, p, 0);
          TokenToChannel.packRow(s, i, bv, c0, p, (int) s.length());
        }
      };
      parallel.forEach(tile.rows(), i -> Stages.projectRow(tile, bb, i, pl, 0, d,
          Stages.Scratch.local(tile.cols(), d, d), Gemm.local(), sink));
      float[][] got = transport.allToAll(send);
      // 2. assemble the owned channels over the whole (padded) grid
      float[][][] am = new float[dc][np][np];
      float[][][] bm = new float[dc][np][np];
      for (int src = 0; src < cp; src++) {
        ReshardSegment s = TokenToChannel.sentBy(layout, src).get(me);
        requireLength(got[src], 2 * s.length(), "token->channel", src);
        TokenToChannel.unpack(s, pl.direction(), got[src], 0, am);
        TokenToChannel.unpack(s, pl.direction(), got[src], (int) s.length(), bm);
      }
      // 3. triangle product per owned channel, then z to the ranks that own the tokens
      float[][][] z = new float[dc][np][np];
      parallel.forEach(dc, q -> Gemm.local().nt(np, np, np, am[q], 0, 0, bm[q], 0, 0, z[q], 0, 0, false));
      float[][] zSend = new float[cp][];
      for (ReshardSegment s : toTiles) {
        zSend[s.dst] = new float[(int) s.length()];
        channelToTokenBytes += s.dst == me ? 0 : s.length() * Float.BYTES;
        ChannelToToken.pack(s, z, zSend[s.dst]);
      }
      float[][] zGot = transport.allToAll(zSend);
      // 4. output stage on the tile
      ReshardSegment[] fromOwners = new ReshardSegment[cp];
      for (int owner = 0; owner < cp; owner++) {
        fromOwners[owner] = ChannelToToken.sentBy(layout, owner).get(me);
        requireLength(zGot[owner], fromOwners[owner].length(), "channel->token", owner);
      }
      parallel.forEach(tile.rows(), i -> {
        Stages.Scratch s = Stages.Scratch.local(tile.cols(), d, d);
        for (int owner = 0; owner < cp; owner++) {
          ChannelToToken.unpackRow(fromOwners[owner], i, zGot[owner], s.zt);
        }
        Stages.outputRow(tile, bb, i, pl, s.zt, s, Gemm.local(), out);
      });
    }
    return out;
  }

  private void requireLength(float[] payload, long want, String reshard, int src) {
    if (payload == null || payload.length != want) {
      throw new IllegalStateException("rank " + rank() + ": the " + reshard + " payload from rank " + src + " has "
          + (payload == null ? "nothing" : payload.length + " floats") + ", expected " + want
          + ": the ranks disagree on the layout");
    }
  }

  @Override
  public void close() {
    parallel.close();
  }
}
