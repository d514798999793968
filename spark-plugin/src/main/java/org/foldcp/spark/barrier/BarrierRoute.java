package org.foldcp.spark.barrier;

import java.util.List;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.route.NonFiniteInput;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.route.TileRoute;
import org.foldcp.spark.tiles.Retiling;
import org.foldcp.spark.tiles.TileRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * The barrier route (docs/design.md sections 3-4): one barrier stage of cp tasks, task r being CP rank
 * r; with T teams (spark.foldcp.cp.teams, CPU ranks) T x cp tasks, task t x cp + r being rank r of
 * team t, each team with its own complexes ({@link TeamAssignment}). The plan's transport says how the two reshards of every layer move between the tasks: over
 * TCP between CPU ranks ({@link TcpRankTask}), or fused into the kernels' stores between GPU ranks
 * of an NVSHMEM team ({@link GpuRankTask}). Both use the same layout, so everything but the
 * stage's body is shared.
 * <ol>
 *   <li>input tiles of any tiling are cut into the pieces of each rank's layout tile and
 *       shuffled to partition = team x cp + rank (one shuffle for the whole stack);
 *   <li>each partition assembles its layout tiles (padded, masked);
 *   <li>the barrier stage forms the team and runs every complex through the stack
 *       ({@link TcpRankTask} or {@link GpuRankTask}); output: one tile per (complex, rank), cropped to N,
 *       streamed: each complex runs when the consumer pulls its tile ({@link RankOutput}), so a
 *       task never holds its partition's outputs at once.
 * </ol>
 * {@link BarrierPreflight} runs first, on the driver.
 *
 * <p>The output RDD ends in the barrier stage, so Spark refuses jobs that run only some of its
 * partitions (take, first, limit, Dataset.show), and a failed attempt of the stage (a lost
 * executor, a failed rank) fails the job at once: Spark retries a barrier stage only when it
 * ends in a shuffle, never a barrier result stage. {@link #leaveBarrierStage} ends it in a
 * shuffle (the DataFrame API always does); without it, consume the output whole (collect, count,
 * write) and expect no retry.
 */
public final class BarrierRoute implements TileRoute {
  private static final Logger LOG = LoggerFactory.getLogger(BarrierRoute.class);

  @Override
  public JavaRDD<TileRecord> run(JavaRDD<TileRecord> tiles, LayerStack stack, RoutePlan asked, RouteMetrics metrics) {
    RoutePlan plan = resolveTeams(tiles.context(), asked, stack); // the stage's plan: teams known
    CpGrid grid = plan.grid;
    boolean allowNonFinite = plan.allowNonFinite;
    TeamAssignment teams = plan.teams > 1 ? assign(tiles, plan.teams, stack.hidden()) : null;
    // NaN and Inf are refused here, before the barrier stage: a rank failing alone inside the
    // team would leave its peers waiting (an NVSHMEM team until its timeout).
    JavaRDD<TileRecord> layoutTiles = tiles
        .flatMapToPair(t -> {
          if (!allowNonFinite) {
            NonFiniteInput.check(t);
          }
          return Retiling.pieces(t, grid).iterator();
        })
        .groupByKey(new RankPartitioner(grid.size(), teams))
        .map(keyed -> Retiling.assemble(keyed._1(), keyed._2(), grid));
    ClassTag<TileRecord> tag = ClassTag$.MODULE$.apply(TileRecord.class);
    boolean gpu = plan.transport == RoutePlan.Transport.NVSHMEM;
    SharedStack shared = SharedStack.of(tiles.context(), stack);
    RankBody body = gpu ? new GpuRankTask(shared, plan, metrics) : new TcpRankTask(shared, plan, metrics);
    RDD<TileRecord> out = layoutTiles.rdd().barrier().mapPartitions(body, false, tag);
    if (gpu) {
      LOG.info("TriMul route: {}, {} layers of D = {}, GPU ranks in an NVSHMEM team ({})", plan, stack.size(),
          stack.dim(), plan.nvshmem.describe());
    } else {
      LOG.info("TriMul route: {}, {} layers of D = {}, {} CPU threads per rank, TCP reshards", plan, stack.size(),
          stack.dim(), plan.threadsPerTask);
    }
    return JavaRDD.fromRDD(out, tag);
  }

  /**
   * Runs the preflight and, for teams = auto, fixes the number: as many teams of cp as the task
   * slots hold once the preflight has seen at least cp of them (slots / cp, at least 1).
   */
  private static RoutePlan resolveTeams(SparkContext sc, RoutePlan plan, LayerStack stack) {
    if (plan.teams != RoutePlan.AUTO_TEAMS) {
      BarrierPreflight.check(sc, plan, stack);
      return plan;
    }
    BarrierPreflight.check(sc, plan.withTeams(1), stack);
    int slots = BarrierPreflight.slots(sc);
    int teams = Math.max(1, slots / plan.grid.size());
    LOG.info("TriMul route: teams = auto: {} task slots / cp = {} -> {} teams", slots, plan.grid.size(), teams);
    return plan.withTeams(teams);
  }

  /**
   * The complexes spread over {@code teams} teams by their work ({@link TeamAssignment}), from every
   * complex's shape: one Spark job over the tiles' headers before the stage (the tiles' lineage
   * runs once more for it; cache the input when that is costly).
   */
  static TeamAssignment assign(JavaRDD<TileRecord> tiles, int teams, int hidden) {
    // as text "N D id": the shapes cross Spark's data serializer (Kryo cannot serialize records)
    List<TeamAssignment.Complex> complexes = tiles
        .map(t -> t.nTokens + " " + t.dim() + " " + t.complexId)
        .distinct()
        .collect()
        .stream()
        .map(line -> {
          String[] f = line.split(" ", 3);
          return new TeamAssignment.Complex(f[2], Integer.parseInt(f[0]), Integer.parseInt(f[1]));
        })
        .toList();
    TeamAssignment a = TeamAssignment.of(complexes, teams, hidden);
    if (LOG.isInfoEnabled()) {
      StringBuilder work = new StringBuilder();
      for (double w : a.work()) {
        work.append(work.length() == 0 ? "" : ", ").append(String.format(java.util.Locale.ROOT, "%.3g", w / 1e9));
      }
      LOG.info("TriMul route: {} complexes over {} teams: {} complexes, [{}] GFLOP per layer by team",
          complexes.size(), teams, java.util.Arrays.toString(a.counts()), work);
    }
    return a;
  }

  /**
   * Ends the barrier stage with a shuffle of the output tiles: then show(), take(), first() and
   * limit() work on the output, and Spark retries the whole barrier stage when an attempt fails
   * (up to spark.stage.maxConsecutiveAttempts), which it never does for a barrier result stage.
   */
  public static JavaRDD<TileRecord> leaveBarrierStage(JavaRDD<TileRecord> out) {
    int parts = Math.max(1, out.getNumPartitions());
    return out.mapToPair(t -> new scala.Tuple2<>(t.complexId + "#" + t.row0 + "," + t.col0, t))
        .partitionBy(new org.apache.spark.HashPartitioner(parts))
        .values();
  }
}
