package org.foldcp.spark.barrier;

import java.util.Iterator;
import java.util.Map;
import org.apache.spark.BarrierTaskContext;
import org.foldcp.ops.cp.CpRank;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.tiles.TileRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The body of one barrier task of CPU ranks (transport tcp): it takes its layout tiles, forms the
 * team, then runs every complex of the team, in id order, through the whole layer stack with its
 * tile resident, one complex per output tile the consumer pulls ({@link RankOutput}: the ranks
 * still meet in every reshard of every complex, whatever the consumer does).
 *
 * <p>Any failure aborts the transport, so the peers fail at once rather than at their timeout,
 * and is rethrown naming this rank.
 */
final class TcpRankTask extends RankBody {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(TcpRankTask.class);

  TcpRankTask(SharedStack stack, RoutePlan plan, RouteMetrics metrics) {
    super(stack, plan, metrics);
  }

  @Override
  Iterator<TileRecord> run(BarrierTaskContext ctx, Iterator<TileRecord> input) {
    int rank = RankPartitioner.rankOf(ctx.partitionId(), plan.grid.size());
    TcpTransport transport = null;
    try {
      Map<String, TileRecord> mine = RankTiles.tilesOf(rank, input, plan.grid);
      TeamFormation.Formed team = TeamFormation.form(ctx, plan, stack(), mine.values());
      transport = team.transport();
      return new RankOutput(RankPartitioner.teamOf(ctx.partitionId(), plan.grid.size()), rank, plan, metrics,
          team.complexes(), new TcpRank(rank, team, mine), ctx);
    } catch (RuntimeException | Error e) {
      if (transport != null) {
        transport.abort(e);
        transport.close();
      }
      throw withRank(plan, rank, e);
    }
  }

  /** A CPU rank's complexes over its TCP team, one {@link CpRank} forward each. */
  private final class TcpRank implements RankOutput.Rank {
    private final int rank;
    private final TeamFormation.Formed team;
    private final Map<String, TileRecord> mine;
    private final TimedTransport timed;
    private long computeTotal;
    private int tilesOut;

    TcpRank(int rank, TeamFormation.Formed team, Map<String, TileRecord> mine) {
      this.rank = rank;
      this.team = team;
      this.mine = mine;
      this.timed = new TimedTransport(team.transport());
    }

    @Override
    public TileRecord run(ComplexShape c) {
      ShardLayout layout = c.layout(plan.grid);
      TileRecord in = RankTiles.layoutTile(c, mine, plan.grid, rank, metrics);
      long t0 = System.nanoTime();
      long reshard0 = timed.reshardNanos();
      PairTensor y;
      try (CpRank cpRank = new CpRank(layout, timed, plan.threadsPerTask)) {
        y = cpRank.forward(in.tile, stack());
      }
      long reshard = timed.reshardNanos() - reshard0;
      long compute = System.nanoTime() - t0 - reshard;
      computeTotal += compute;
      metrics.computeNanos(compute);
      metrics.reshardNanos(reshard);
      TileRecord o = RankTiles.output(c, in, y, metrics);
      if (o != null) {
        tilesOut++;
      }
      return o;
    }

    @Override
    public void finish() {
      metrics.reshardBytes(timed.bytesSent());
      LOG.info("barrier rank {} of team '{}': {} complexes, {} output tiles, compute {} ms, reshard {} ms, {} bytes"
          + " sent", rank, team.transport().teamId(), team.complexes().size(), tilesOut, computeTotal / 1_000_000,
          timed.reshardNanos() / 1_000_000, timed.bytesSent());
    }

    @Override
    public void abort(Throwable cause) {
      timed.abort(cause);
    }

    @Override
    public void close() {
      timed.close();
    }
  }
}
