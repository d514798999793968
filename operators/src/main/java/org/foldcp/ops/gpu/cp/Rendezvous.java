package org.foldcp.ops.gpu.cp;

import java.time.Duration;
import java.util.List;
import org.foldcp.ops.InvalidInputException;

/**
 * How the ranks of a team meet before NVSHMEM exists: an all-gather of small messages, in rank
 * order, round after round. In Spark it is the barrier stage's
 * {@code BarrierTaskContext.allGather}; without Spark (tests, a plain multi-process job)
 * {@link FileRendezvous} over a shared folder. This class holds what every kind shares: the
 * checked rank and team size, and the round counter.
 */
public abstract class Rendezvous {
  private final int rank;
  private final int size;
  private int round;

  protected Rendezvous(int rank, int size) {
    InvalidInputException.require(size >= 1, "team size", size, "must be >= 1");
    InvalidInputException.require(rank >= 0 && rank < size, "rank", rank, "must lie in [0, " + size + ")");
    this.rank = rank;
    this.size = size;
  }

  /** This process's rank, 0 .. size - 1 (NVSHMEM's PE number). */
  public final int rank() { return rank; }

  /** The number of ranks. */
  public final int size() { return size; }

  /** The number of the round an {@link #allGather} is starting (0, 1, ...). */
  protected final int nextRound() {
    return round++;
  }

  /**
   * Every rank's message, in rank order, once all have sent theirs. Throws
   * {@link TeamException} naming the ranks that did not arrive within {@code timeout} (or, where
   * the transport cannot tell which, this rank and the round).
   */
  public abstract List<byte[]> allGather(byte[] mine, Duration timeout);
}
