package org.foldcp.ops.cp;

import java.util.List;
import org.foldcp.ops.cpu.CpuKernels;
import org.foldcp.ops.cpu.Parallel;
import org.foldcp.ops.cpu.PreparedLayer;
import org.foldcp.ops.cpu.Stages;
import org.foldcp.ops.tensor.PairTensor;

/**
 * The three compute steps of one CP rank for one layer and one batch element, with the data
 * that crosses ranks as explicit payloads (the layer's H / cp hidden channels per owner), so that any transport can sit between them: the
 * all-to-all of a barrier team ({@link CpRank}), or two Spark shuffles (the shuffle route).
 * <ol>
 *   <li>{@link #project}: tile -> payload per channel owner ([a | b], per {@link TokenToChannel});
 *   <li>{@link #triangle}: payloads from every tile -> z payload per tile (per {@link ChannelToToken});
 *   <li>{@link #output}: z payloads from every owner -> this rank's output tile rows.
 * </ol>
 */
public final class RankStages implements AutoCloseable {
  private final ShardLayout layout;
  private final int rank;
  private final Parallel parallel;
  private final CpuKernels kernels;

  /** With this JVM's kernels ({@link CpuKernels#selected()}). */
  public RankStages(ShardLayout layout, int rank, int threads) {
    this(layout, rank, threads, CpuKernels.selected());
  }

  public RankStages(ShardLayout layout, int rank, int threads, CpuKernels kernels) {
    layout.grid().checkRank(rank);
    this.layout = layout;
    this.rank = rank;
    this.kernels = kernels;
    this.parallel = new Parallel(threads);
  }

  public int rank() {
    return rank;
  }

  public ShardLayout layout() {
    return layout;
  }

  /** Step 1: LN_in, projection and gates of batch element b of this rank's tile; [a | b] per owner. */
  public float[][] project(PairTensor tile, int b, PreparedLayer pl) {
    ShardLayout layout = this.layout.withHidden(pl.hidden());
    int d = layout.dim();
    int h = layout.hidden();
    List<ReshardSegment> toOwners = TokenToChannel.sentBy(layout, rank);
    float[][] send = new float[layout.grid().size()][];
    for (ReshardSegment s : toOwners) {
      send[s.dst] = new float[(int) (2 * s.length())];
    }
    Stages.ProjectionSink sink = (i, c0, a, bv, cols) -> {
      for (ReshardSegment s : toOwners) {
        float[] p = send[s.dst];
        TokenToChannel.packRow(s, i, a, c0, p, 0);
        TokenToChannel.packRow(s, i, bv, c0, p, (int) s.length());
      }
    };
    parallel.forEach(tile.rows(), i -> Stages.projectRow(tile, b, i, pl, 0, h,
        Stages.Scratch.local(tile.cols(), d, h, h), kernels, sink));
    return send;
  }

  /** Step 2: assemble this rank's channels from every tile's payload, multiply, split z per tile. */
  public float[][] triangle(float[][] fromTiles, PreparedLayer pl) {
    ShardLayout layout = this.layout.withHidden(pl.hidden());
    int cp = layout.grid().size();
    int np = layout.paddedN();
    int dc = layout.channelsPerRank();
    float[][] am = new float[dc][np * np];
    float[][] bm = new float[dc][np * np];
    for (int src = 0; src < cp; src++) {
      ReshardSegment s = TokenToChannel.sentBy(layout, src).get(rank);
      requireLength(fromTiles[src], 2 * s.length(), "token->channel", src);
      TokenToChannel.unpack(s, pl.direction(), fromTiles[src], 0, am, np);
      TokenToChannel.unpack(s, pl.direction(), fromTiles[src], (int) s.length(), bm, np);
    }
    float[][] z = new float[dc][np * np];
    parallel.forEach(dc, q -> kernels.gemm(false, true, np, np, np, am[q], 0, np, bm[q], 0, np, z[q], 0, np, false));
    float[][] send = new float[cp][];
    for (ReshardSegment s : ChannelToToken.sentBy(layout, rank)) {
      send[s.dst] = new float[(int) s.length()];
      ChannelToToken.pack(s, z, np, send[s.dst]);
    }
    return send;
  }

  /** Step 3: LN_out, output projection, gate and residual of batch element b into {@code out}. */
  public void output(PairTensor tile, int b, PreparedLayer pl, float[][] fromOwners, PairTensor out) {
    ShardLayout layout = this.layout.withHidden(pl.hidden());
    int cp = layout.grid().size();
    int d = layout.dim();
    int h = layout.hidden();
    ReshardSegment[] segs = new ReshardSegment[cp];
    for (int owner = 0; owner < cp; owner++) {
      segs[owner] = ChannelToToken.sentBy(layout, owner).get(rank);
      requireLength(fromOwners[owner], segs[owner].length(), "channel->token", owner);
    }
    parallel.forEach(tile.rows(), i -> {
      Stages.Scratch s = Stages.Scratch.local(tile.cols(), d, h, h);
      for (int owner = 0; owner < cp; owner++) {
        ChannelToToken.unpackRow(segs[owner], i, fromOwners[owner], s.zt, h);
      }
      Stages.outputRow(tile, b, i, pl, s.zt, s, kernels, out);
    });
  }

  /** Bytes of the payloads in {@code send} that leave this rank. */
  public long bytesLeaving(float[][] send) {
    long n = 0;
    for (int dst = 0; dst < send.length; dst++) {
      if (dst != rank && send[dst] != null) {
        n += (long) send[dst].length * Float.BYTES;
      }
    }
    return n;
  }

  private void requireLength(float[] payload, long want, String reshard, int src) {
    if (payload == null || payload.length != want) {
      throw new IllegalStateException("rank " + rank + ": the " + reshard + " payload from rank " + src + " has "
          + (payload == null ? "nothing" : payload.length + " floats") + ", expected " + want
          + ": the ranks disagree on the layout");
    }
  }

  @Override
  public void close() {
    parallel.close();
  }
}
