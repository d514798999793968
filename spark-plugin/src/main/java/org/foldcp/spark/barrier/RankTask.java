package org.foldcp.spark.barrier;

import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.TaskKilledException;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.CpRank;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;
import org.foldcp.ops.gpu.cp.TeamException;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.tiles.Retiling;
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
final class RankTask extends RankBody {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(RankTask.class);

  RankTask(SharedStack stack, RoutePlan plan, RouteMetrics metrics) {
    super(stack, plan, metrics);
  }

  @Override
  Iterator<TileRecord> run(BarrierTaskContext ctx, Iterator<TileRecord> input) {
    int rank = ctx.partitionId();
    TcpTransport transport = null;
    try {
      Map<String, TileRecord> mine = tilesOf(rank, input, plan.grid);
      TeamFormation.Formed team = TeamFormation.form(ctx, plan, stack(), mine.values());
      transport = team.transport();
      return new RankOutput(rank, plan, team.complexes(), new TcpRank(rank, team, mine), ctx);
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
      TileRecord in = layoutTile(c, mine, plan.grid, rank, metrics);
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
      TileRecord o = output(c, in, y, metrics);
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

  /** This rank's layout tile per complex; each must be the tile the layout gives this rank. */
  static Map<String, TileRecord> tilesOf(int rank, Iterator<TileRecord> input, CpGrid grid) {
    Map<String, TileRecord> mine = new TreeMap<>();
    while (input.hasNext()) {
      TileRecord r = input.next();
      TileBounds t = Retiling.layout(r, grid).tile(rank);
      if (r.row0 != t.row0 || r.col0 != t.col0 || r.tile.rows() != t.rows || r.tile.cols() != t.cols) {
        throw new IllegalStateException("rank " + rank + " received " + r + ", but its layout tile of that complex is "
            + t + ": the tiles were not partitioned by rank");
      }
      if (mine.put(r.complexId, r) != null) {
        throw new IllegalStateException("rank " + rank + " received two layout tiles of complex '" + r.complexId + "'");
      }
    }
    return mine;
  }

  /**
   * This rank's layout tile of complex {@code c}: the one it received, or a padding tile when its
   * layout tile lies wholly beyond N; its real positions count as bytes in.
   */
  static TileRecord layoutTile(ComplexShape c, Map<String, TileRecord> mine, CpGrid grid, int rank,
                               RouteMetrics metrics) {
    TileRecord in = mine.containsKey(c.id()) ? mine.get(c.id()) : paddingTile(c, c.layout(grid), rank);
    TileRecord realIn = Retiling.crop(in);
    metrics.bytesIn(realIn == null ? 0 : realIn.pairBytes());
    return in;
  }

  /** The output {@code y} of layout tile {@code in}, cropped to N and counted; null when it is all padding. */
  static TileRecord output(ComplexShape c, TileRecord in, PairTensor y, RouteMetrics metrics) {
    TileRecord o = Retiling.crop(new TileRecord(c.id(), c.nTokens(), in.row0, in.col0, y));
    if (o != null) {
      metrics.tiles(1);
      metrics.bytesOut(o.pairBytes());
    }
    return o;
  }

  /** The tile of a rank whose whole layout tile lies beyond N: zeros, every position masked. */
  static TileRecord paddingTile(ComplexShape c, ShardLayout layout, int rank) {
    TileBounds t = layout.tile(rank);
    PairTensor tile = PairTensor.zeros(1, t.rows, t.cols, c.dim());
    tile.setMask(new byte[t.rows][t.cols]);
    return new TileRecord(c.id(), c.nTokens(), t.row0, t.col0, tile);
  }

  /**
   * The failure with this rank in its message; input errors stay input errors, a broken NVSHMEM
   * team stays a {@link TeamException} (the executor plugin recycles the executor on it), a kill
   * stays a kill.
   */
  static RuntimeException withRank(RoutePlan plan, int rank, Throwable e) {
    if (e instanceof Error) {
      throw (Error) e;
    }
    if (e instanceof TaskKilledException) {
      return (TaskKilledException) e;
    }
    String msg = "barrier rank " + rank + " of cp = " + plan.grid.size() + " (grid " + plan.grid + ") failed: "
        + e.getMessage();
    if (e instanceof TeamException) {
      return new TeamException(msg, e);
    }
    return e instanceof InvalidInputException ? new InvalidInputException(msg, e) : new IllegalStateException(msg, e);
  }
}
