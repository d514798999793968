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
 * The {@link Rendezvous} of a barrier stage, over {@code BarrierTaskContext.allGather}, which
 * carries strings: every message travels Base64-encoded. The rank is the task's partition, the
 * size the number of tasks of the stage; allGather lists the messages in partition order.
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

  /** The rendezvous of partition {@code rank} of {@code size} through {@code allGather} (BarrierTaskContext's in tasks). */
  BarrierRendezvous(int rank, int size, Function<String, String[]> allGather) {
    super(rank, size);
    this.allGather = Objects.requireNonNull(allGather, "allGather");
  }

  @Override
  public List<byte[]> allGather(byte[] mine, Duration timeout) {
    int k = nextRound();
    String[] gathered = gather(Base64.getEncoder().encodeToString(mine), timeout, k);
    if (gathered == null || gathered.length != size()) {
      throw new TeamException(where(k) + ": the barrier allGather returned " + (gathered == null ? "nothing"
          : gathered.length + " messages") + " for a team of " + size() + " ranks: the barrier stage must have one task"
          + " per rank");
    }
    List<byte[]> out = new ArrayList<>(size());
    for (int r = 0; r < size(); r++) {
      try {
        out.add(Base64.getDecoder().decode(gathered[r]));
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
    return "rank " + rank() + " of " + size() + ", team formation round " + k;
  }
}
