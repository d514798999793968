package org.foldcp.ops.gpu.cp;

import java.time.Duration;
import java.util.List;

/**
 * How the ranks of a team meet before NVSHMEM exists: an all-gather of small messages, in rank
 * order. In Spark it is the barrier stage's {@code BarrierTaskContext.allGather}; without Spark
 * (tests, a plain multi-process job) {@link FileRendezvous} over a shared folder.
 */
public interface Rendezvous {
  /** This process's rank, 0 .. size - 1 (NVSHMEM's PE number). */
  int rank();

  /** The number of ranks. */
  int size();

  /**
   * Every rank's message, in rank order, once all have sent theirs. Throws
   * {@link TeamException} naming the ranks that did not arrive within {@code timeout}.
   */
  List<byte[]> allGather(byte[] mine, Duration timeout);
}
