package org.foldcp.spark.barrier;

import org.foldcp.ops.cp.ReshardTransport;

/**
 * A transport that measures the time its rank spends inside the all-to-alls, so that a route
 * can report reshard time apart from compute time. That time includes waiting for the slowest
 * peer, which is what a reshard costs this rank.
 */
public final class TimedTransport implements ReshardTransport {
  private final ReshardTransport inner;
  private long reshardNanos;

  public TimedTransport(ReshardTransport inner) {
    this.inner = inner;
  }

  /** Nanoseconds spent in {@link #allToAll} so far. */
  public long reshardNanos() {
    return reshardNanos;
  }

  @Override
  public int rank() {
    return inner.rank();
  }

  @Override
  public int size() {
    return inner.size();
  }

  @Override
  public float[][] allToAll(float[][] outgoing) {
    long t0 = System.nanoTime();
    try {
      return inner.allToAll(outgoing);
    } finally {
      reshardNanos += System.nanoTime() - t0;
    }
  }

  @Override
  public long bytesSent() {
    return inner.bytesSent();
  }

  @Override
  public void abort(Throwable cause) {
    inner.abort(cause);
  }

  @Override
  public void close() {
    inner.close();
  }
}
