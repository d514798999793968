package org.foldcp.spark.barrier;

/**
 * A peer of the CP team failed, as seen by another rank: the failed rank and its own account of
 * why travel with the message, so that every rank's error names the rank that caused it, not
 * only the neighbour that passed the news on.
 */
public final class RankFailedException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  private final int observerRank;
  private final int failedRank;
  private final String reason;

  public RankFailedException(int observerRank, int failedRank, String reason) {
    super("rank " + observerRank + ": rank " + failedRank + " failed: " + reason);
    this.observerRank = observerRank;
    this.failedRank = failedRank;
    this.reason = reason;
  }

  /** The rank that reports the failure. */
  public int observerRank() { return observerRank; }

  /** The rank that failed first. */
  public int failedRank() { return failedRank; }

  /** What the failed rank said about its failure. */
  public String reason() { return reason; }
}
