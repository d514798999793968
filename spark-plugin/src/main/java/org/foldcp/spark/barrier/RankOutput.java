package org.foldcp.spark.barrier;

import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;
import org.apache.spark.util.TaskFailureListener;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.TeamSpan;
import org.foldcp.spark.tiles.TileRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A barrier rank's output tiles, each complex computed when the consumer pulls for the next tile
 * (as the cp = 1 route's StreamedForward does): the task holds one output tile at a time, never
 * all of its partition's outputs in a list.
 *
 * <p>Every complex is collective (its reshards meet on every rank), so the barrier's rule stays:
 * every rank runs every complex of the team's list, in its order.
 * <ul>
 *   <li>a complex of which this rank holds only padding still runs; it yields no tile;
 *   <li>a task that ends successfully before its consumer pulled the last tile runs the remaining
 *       complexes then (its completion listener), so that its peers' reshards still meet;
 *   <li>a complex that fails, or a task that fails between pulls (in its consumer: the failure
 *       listener), aborts the rank ({@link Rank#abort}: a TCP team tells its peers, which fail at
 *       once instead of at their timeout) and the failure names this rank.
 * </ul>
 * The rank's resources ({@link Rank#close}) are freed once: after the last complex, at a failure,
 * or at the task's end at the latest.
 *
 * <p>The price of streaming: a rank's consumer runs between its complexes (in the DataFrame
 * API, the shuffle write that leaves the barrier stage), so its peers' next reshard also waits
 * for it; the ranks' consumers do the same work on tiles of one size, and a stuck one is bounded
 * by spark.foldcp.barrier.timeoutSeconds like any slow peer.
 *
 * <p>A rank that ran all its complexes logs and reports ({@link RouteMetrics#teamSpan}) when its
 * first forward started and its last ended, so that the teams of a stage can be seen side by side.
 */
final class RankOutput implements Iterator<TileRecord> {
  /** One transport's part: what a rank does per complex and at its end. All calls come from the task's thread. */
  interface Rank {
    /** Runs complex {@code c} with the team; its output tile cropped to N, or null when this rank holds only padding of it. */
    TileRecord run(ComplexShape c);

    /** After the last complex: reports what the rank did. */
    void finish();

    /** Tells the peers, where the transport can, that this rank failed with {@code cause}. */
    void abort(Throwable cause);

    /** Frees what the rank holds (transport, GPU stack); called once. */
    void close();
  }

  private static final Logger LOG = LoggerFactory.getLogger(RankOutput.class);

  private final int team;
  private final int rankIndex;
  private final RoutePlan plan;
  private final RouteMetrics metrics;
  private final List<ComplexShape> complexes;
  private final Rank rank;
  private int nextComplex;
  private TileRecord next;
  private boolean ended;
  private long startMillis = -1;

  /**
   * @param team the team's index in the stage, {@code rankIndex} the rank's within the team
   * @param complexes the team's agreed complexes, in the order every rank runs them
   * @param task the task whose end and failure the rank follows (null outside Spark)
   */
  RankOutput(int team, int rankIndex, RoutePlan plan, RouteMetrics metrics, List<ComplexShape> complexes, Rank rank,
      TaskContext task) {
    this.team = team;
    this.rankIndex = rankIndex;
    this.plan = plan;
    this.metrics = metrics;
    this.complexes = List.copyOf(complexes);
    this.rank = rank;
    if (task != null) {
      // Spark runs failure listeners before completion listeners, so a failed task aborts, never drains.
      task.addTaskFailureListener((TaskFailureListener) (ctx, error) -> failed(error));
      task.addTaskCompletionListener((TaskCompletionListener) ctx -> completed());
    }
  }

  @Override
  public synchronized boolean hasNext() {
    while (next == null && !ended && nextComplex < complexes.size()) {
      next = step();
    }
    if (next == null && !ended) {
      end();
    }
    return next != null;
  }

  @Override
  public synchronized TileRecord next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    TileRecord out = next;
    next = null;
    return out;
  }

  /** Complexes run so far (for tests and logs). */
  synchronized int complexesRun() {
    return nextComplex;
  }

  /** Runs the next complex; a failure aborts the rank and is rethrown naming it. */
  private TileRecord step() {
    ComplexShape c = complexes.get(nextComplex++);
    if (startMillis < 0) {
      startMillis = System.currentTimeMillis();
    }
    try {
      return rank.run(c);
    } catch (RuntimeException | Error e) {
      failed(e);
      throw RankBody.withRank(plan, rankIndex, e);
    }
  }

  /** The last complex ran: report, then free. */
  private void end() {
    ended = true;
    try {
      if (startMillis >= 0) {
        TeamSpan span = new TeamSpan(team, rankIndex, nextComplex, startMillis, System.currentTimeMillis());
        LOG.info("barrier team {} rank {}: {} complexes from {} to {} (epoch ms, {} ms)", team, rankIndex,
            span.complexes(), span.startMillis(), span.endMillis(), span.endMillis() - span.startMillis());
        metrics.teamSpan(span);
      }
      rank.finish();
    } finally {
      rank.close();
    }
  }

  /** This rank failed (in a complex, or its task between pulls): abort the team, then free; once. */
  private synchronized void failed(Throwable cause) {
    if (ended) {
      return;
    }
    ended = true;
    try {
      rank.abort(cause);
    } finally {
      rank.close();
    }
  }

  /** The task ended without failing: complexes its consumer did not pull still run with the team. */
  private synchronized void completed() {
    while (!ended && nextComplex < complexes.size()) {
      step();
    }
    if (!ended) {
      end();
    }
  }
}
