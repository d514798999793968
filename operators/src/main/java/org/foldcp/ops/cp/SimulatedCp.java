package org.foldcp.ops.cp;

import java.util.Collections;
import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cpu.Gemm;
import org.foldcp.ops.cpu.Parallel;
import org.foldcp.ops.cpu.PreparedLayer;
import org.foldcp.ops.cpu.Stages;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.PairTensor;

/**
 * The context-parallel forward of DESIGN.md section 2, run by cp simulated ranks inside one JVM:
 * shard into tiles, project each tile, reshard token -> channel through {@link TokenToChannel}
 * segments, triangle product per owned channel, reshard channel -> token through
 * {@link ChannelToToken} segments, output stage per tile, unshard. Payloads are plain float
 * arrays, so this proves the decomposition and the index maps before any network or GPU is
 * involved; its result equals the single-rank CPU backend bit for bit.
 */
public final class SimulatedCp implements AutoCloseable {
  private final CpGrid grid;
  private final Parallel parallel;
  private long tokenToChannelBytes;
  private long channelToTokenBytes;

  public SimulatedCp(CpGrid grid, int threads) {
    this.grid = grid;
    this.parallel = new Parallel(threads);
  }

  /** Every rank applies the same stack. */
  public PairTensor forward(PairTensor x, LayerStack stack) {
    return forward(x, Collections.nCopies(grid.size(), stack));
  }

  /**
   * Each rank brings its own copy of the stack, as separate processes would; the copies must be
   * bit-identical (checked by digest before anything runs).
   */
  public PairTensor forward(PairTensor x, List<LayerStack> perRank) {
    checkSameWeights(perRank, grid);
    LayerStack stack = perRank.get(0);
    InvalidInputException.require(x.isSquare(), "pair tensor shape", x.shapeString(),
        "a pair tensor must be (B, N, N, D) with equal row and column counts");
    InvalidInputException.require(x.dim() == stack.dim(), "D of the pair tensor", x.dim(),
        "must equal the layer's D = " + stack.dim());
    ShardLayout layout = new ShardLayout(grid, x.n(), x.dim());
    tokenToChannelBytes = 0;
    channelToTokenBytes = 0;
    PairTensor[] tiles = Sharding.shard(x, layout);
    for (int l = 0; l < stack.size(); l++) {
      tiles = layer(tiles, layout, perRank, l);
    }
    return Sharding.unshard(tiles, layout, x.hasMask());
  }

  /** Bytes that crossed between different ranks in the last forward, first reshard. */
  public long tokenToChannelBytes() { return tokenToChannelBytes; }

  /** Bytes that crossed between different ranks in the last forward, second reshard. */
  public long channelToTokenBytes() { return channelToTokenBytes; }

  /** Fails unless every rank's stack has the same layers with bit-identical weights. */
  public static void checkSameWeights(List<LayerStack> perRank, CpGrid grid) {
    InvalidInputException.require(perRank.size() == grid.size(), "number of per-rank stacks", perRank.size(),
        "must equal cp = " + grid.size());
    LayerStack ref = perRank.get(0);
    for (int r = 1; r < perRank.size(); r++) {
      LayerStack s = perRank.get(r);
      InvalidInputException.require(s.size() == ref.size(), "layer count on rank " + r, s.size(),
          "every rank must run the same stack as rank 0 (" + ref.size() + " layers)");
      for (int l = 0; l < s.size(); l++) {
        TriMulLayer a = ref.get(l);
        TriMulLayer b = s.get(l);
        InvalidInputException.require(a.spec().equals(b.spec()), "spec of layer " + l + " on rank " + r, b.spec(),
            "every rank must run the spec of rank 0 (" + a.spec() + ")");
        InvalidInputException.require(a.weights().digest().equals(b.weights().digest()),
            "weight digest of layer " + l + " on rank " + r, b.weights().digest(),
            "every rank must hold bit-identical weights; rank 0 has " + a.weights().digest());
      }
    }
  }

  private PairTensor[] layer(PairTensor[] tiles, ShardLayout layout, List<LayerStack> perRank, int l) {
    int cp = grid.size();
    int d = layout.dim();
    int np = layout.paddedN();
    int dc = layout.channelsPerRank();
    int batch = tiles[0].batch();
    PreparedLayer[] prepared = new PreparedLayer[cp];
    for (int r = 0; r < cp; r++) {
      prepared[r] = new PreparedLayer(perRank.get(r).get(l));
    }
    PairTensor[] out = new PairTensor[cp];
    for (int r = 0; r < cp; r++) {
      out[r] = PairTensor.zeros(batch, layout.tileRows(), layout.tileCols(), d);
      out[r].setMask(tiles[r].maskCopy());
    }
    for (int b = 0; b < batch; b++) {
      final int bb = b;
      // 1. projection on every tile; the sink packs each row straight into the per-owner payloads
      float[][][] payA = new float[cp][cp][];
      float[][][] payB = new float[cp][cp][];
      for (int src = 0; src < cp; src++) {
        List<ReshardSegment> segs = TokenToChannel.sentBy(layout, src);
        for (ReshardSegment s : segs) {
          payA[src][s.dst] = new float[(int) s.length()];
          payB[src][s.dst] = new float[(int) s.length()];
          if (s.src != s.dst) {
            tokenToChannelBytes += 2 * s.length() * Float.BYTES;
          }
        }
        final float[][] pa = payA[src];
        final float[][] pb = payB[src];
        Stages.ProjectionSink sink = (i, c0, a, bv) -> {
          for (ReshardSegment s : segs) {
            TokenToChannel.packRow(s, i, a, c0, pa[s.dst]);
            TokenToChannel.packRow(s, i, bv, c0, pb[s.dst]);
          }
        };
        PairTensor tile = tiles[src];
        PreparedLayer pl = prepared[src];
        parallel.forEach(tile.rows(), i -> Stages.projectRow(tile, bb, i, pl, 0, d,
            Stages.Scratch.local(tile.cols(), d, d), Gemm.local(), sink));
      }
      // 2. every channel owner assembles its channels over the whole grid and multiplies
      float[][][][] z = new float[cp][][][];
      for (int owner = 0; owner < cp; owner++) {
        float[][][] a = new float[dc][np][np];
        float[][][] bm = new float[dc][np][np];
        for (int src = 0; src < cp; src++) {
          ReshardSegment s = TokenToChannel.sentBy(layout, src).get(owner);
          TokenToChannel.unpack(s, prepared[owner].direction(), payA[src][owner], a);
          TokenToChannel.unpack(s, prepared[owner].direction(), payB[src][owner], bm);
        }
        float[][][] zo = new float[dc][np][np];
        parallel.forEach(dc, q -> Gemm.local().nt(np, np, np, a[q], 0, 0, bm[q], 0, 0, zo[q], 0, 0, false));
        z[owner] = zo;
      }
      // 3. channel -> token: every owner sends each rank its tile of its channels
      float[][][] payZ = new float[cp][cp][];
      for (int owner = 0; owner < cp; owner++) {
        for (ReshardSegment s : ChannelToToken.sentBy(layout, owner)) {
          payZ[owner][s.dst] = new float[(int) s.length()];
          ChannelToToken.pack(s, z[owner], payZ[owner][s.dst]);
          if (s.src != s.dst) {
            channelToTokenBytes += s.length() * Float.BYTES;
          }
        }
      }
      // 4. output stage on every tile
      for (int dst = 0; dst < cp; dst++) {
        final int me = dst;
        PairTensor tile = tiles[dst];
        PreparedLayer pl = prepared[dst];
        parallel.forEach(tile.rows(), i -> {
          Stages.Scratch s = Stages.Scratch.local(tile.cols(), d, d);
          for (int owner = 0; owner < cp; owner++) {
            ChannelToToken.unpackRow(ChannelToToken.sentBy(layout, owner).get(me), i, payZ[owner][me], s.zt);
          }
          Stages.outputRow(tile, bb, i, pl, s.zt, s, Gemm.local(), out[me]);
        });
      }
    }
    return out;
  }


  @Override
  public void close() {
    parallel.close();
  }
}
