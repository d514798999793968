package org.foldcp.spark.barrier;

import java.io.Serializable;
import java.util.Iterator;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.TaskKilledException;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.cp.TeamException;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.tiles.TileRecord;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * The body of a barrier task, that is one CP rank: this rank's layout tiles in, its output tiles
 * (cropped to N) out. The transport decides the rest: {@link TcpRankTask} (CPU ranks over TCP) or
 * {@link GpuRankTask} (GPU ranks in an NVSHMEM team).
 */
abstract class RankBody extends AbstractFunction1<scala.collection.Iterator<TileRecord>, scala.collection.Iterator<TileRecord>>
    implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The weights, by broadcast (see {@link SharedStack}); {@link #stack()} fetches them on the executor. */
  private final SharedStack shared;
  protected final RoutePlan plan;
  protected final RouteMetrics metrics;

  RankBody(SharedStack shared, RoutePlan plan, RouteMetrics metrics) {
    this.shared = shared;
    this.plan = plan;
    this.metrics = metrics;
  }

  @Override
  public final scala.collection.Iterator<TileRecord> apply(scala.collection.Iterator<TileRecord> input) {
    BarrierTaskContext ctx = BarrierTaskContext.get();
    return CollectionConverters.asScala(run(ctx, CollectionConverters.asJava(input)));
  }

  /** The layer stack, fetched once per executor. */
  protected final LayerStack stack() {
    return shared.get();
  }

  /**
   * Forms rank {@code ctx.partitionId()}'s team from its layout tiles and returns its output
   * tiles, computed a complex at a time as they are pulled ({@link RankOutput}).
   */
  abstract Iterator<TileRecord> run(BarrierTaskContext ctx, Iterator<TileRecord> input);

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
