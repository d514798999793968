package org.foldcp.spark.barrier;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.apache.spark.TaskKilledException;
import org.foldcp.ops.gpu.cp.Rendezvous;
import org.foldcp.ops.gpu.cp.TeamException;
import org.foldcp.spark.config.FoldCpConf;

/**
 * The {@link Rendezvous} of one team of a barrier stage, over {@code BarrierTaskContext.allGather},
 * which carries strings: every message travels Base64-encoded. allGather is the whole stage's
 * (every task of every team sends a message each round) and lists the messages in partition
 * order; team t's are the places [t * size, (t + 1) * size) (RankPartitioner), and only those are
 * this team's round. So every team of a stage must run the same number of rounds (NvshmemTeam
 * always runs two).
 *
 * <p>Every round waits at most the timeout {@link org.foldcp.ops.gpu.cp.NvshmemTeam} passes
 * ({@link FoldCpConf#BARRIER_TIMEOUT_SECONDS}): Spark's own bound (spark.barrier.sync.timeout)
 * defaults to a year, so the allGather runs on a helper thread and the task stops waiting for it
 * at the timeout. A rank whose peers do not arrive, or whose allGather fails, gets a
 * {@link TeamException} naming this rank and the round; Spark's allGather cannot say which ranks
 * are missing, so the message points at the stage's other tasks. The task then fails, and Spark
 * aborts the stage and its pending allGather. A killed task stays killed.
 */
final class BarrierRendezvous extends Rendezvous {
  private final Function<String, String[]> allGather;
  private final int team;
  private final int teams;

  /**
   * The rendezvous of rank {@code rank} of team {@code team} (of {@code teams}, {@code size} ranks
   * each) through {@code allGather} (BarrierTaskContext's in tasks).
   */
  BarrierRendezvous(int team, int teams, int rank, int size, Function<String, String[]> allGather) {
    super(rank, size);
    if (teams < 1 || team < 0 || team >= teams) {
      throw new IllegalArgumentException("team " + team + " of " + teams);
    }
    this.team = team;
    this.teams = teams;
    this.allGather = Objects.requireNonNull(allGather, "allGather");
  }

  @Override
  public List<byte[]> allGather(byte[] mine, Duration timeout) {
    int k = nextRound();
    String[] gathered = gather(Base64.getEncoder().encodeToString(mine), timeout, k);
    if (gathered == null || gathered.length != teams * size()) {
      throw new TeamException(where(k) + ": the barrier allGather returned " + (gathered == null ? "nothing"
          : gathered.length + " messages") + " for " + teams + " team(s) of " + size() + " ranks: the barrier stage"
          + " must have one task per rank of every team");
    }
    List<byte[]> out = new ArrayList<>(size());
    for (int r = 0; r < size(); r++) {
      try {
        out.add(Base64.getDecoder().decode(gathered[team * size() + r]));
      } catch (IllegalArgumentException | NullPointerException e) {
        throw new TeamException(where(k) + ": the message of rank " + r + " is not Base64 (" + e.getMessage()
            + "): that rank runs a different fold-cp version, or called allGather out of turn", e);
      }
    }
    return out;
  }

  private String[] gather(String message, Duration timeout, int k) {
    FutureTask<String[]> call = new FutureTask<>(() -> allGather.apply(message));
    Thread t = new Thread(call, "foldcp-barrier-allgather-rank-" + rank());
    t.setDaemon(true);
    t.start();
    try {
      return call.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      call.cancel(true);
      throw new TeamException(where(k) + ": not every rank of the team reached this round within "
          + timeout.toMillis() + " ms (" + FoldCpConf.BARRIER_TIMEOUT_SECONDS.name() + "); Spark's allGather does"
          + " not say which of the other ranks (0.." + (size() - 1) + " but " + rank() + ") is missing: look for a"
          + " task of this stage that failed, hangs, or lost its executor");
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      if (cause instanceof TaskKilledException) {
        throw (TaskKilledException) cause;
      }
      throw new TeamException(where(k) + ": the barrier allGather failed: " + cause, cause);
    } catch (InterruptedException e) {
      call.cancel(true);
      Thread.currentThread().interrupt();
      throw new TeamException(where(k) + ": interrupted while waiting for the other ranks", e);
    }
  }

  private String where(int k) {
    return "rank " + rank() + " of " + size() + (teams > 1 ? " in team " + team + " of " + teams : "")
        + ", team formation round " + k;
  }
}
