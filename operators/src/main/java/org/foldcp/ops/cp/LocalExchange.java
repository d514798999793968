package org.foldcp.ops.cp;

import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * An in-memory all-to-all for ranks that are threads of one JVM (the simulated team). A round
 * is: post payloads, meet at the barrier, collect, meet again so slots can be reused. A rank
 * that fails breaks the barrier, and every other rank then fails too, naming the first cause;
 * a rank that never arrives makes the others time out. Nobody hangs.
 */
public final class LocalExchange {
  private final int size;
  private final long timeoutMillis;
  private final float[][][] slots; // [src][dst]
  private final CyclicBarrier barrier;
  private final AtomicReference<Throwable> failure = new AtomicReference<>();

  public LocalExchange(int size, long timeoutMillis) {
    this.size = size;
    this.timeoutMillis = timeoutMillis;
    this.slots = new float[size][size][];
    this.barrier = new CyclicBarrier(size);
  }

  /** The transport endpoint of one rank. */
  public ReshardTransport endpoint(int rank) {
    return new Endpoint(rank);
  }

  private void await(int rank) {
    Throwable failed = failure.get();
    if (failed != null) {
      throw new IllegalStateException("rank " + rank + ": a peer failed during a reshard exchange: " + failed, failed);
    }
    try {
      barrier.await(timeoutMillis, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("rank " + rank + " was interrupted in a reshard exchange", e);
    } catch (TimeoutException e) {
      barrier.reset();
      throw new IllegalStateException("rank " + rank + " waited more than " + timeoutMillis
          + " ms for its peers in a reshard exchange", e);
    } catch (BrokenBarrierException e) {
      Throwable cause = failure.get();
      throw new IllegalStateException("rank " + rank + ": a peer failed during a reshard exchange"
          + (cause == null ? " (or timed out)" : ": " + cause), cause);
    }
  }

  private final class Endpoint implements ReshardTransport {
    private final int rank;
    private long sent;

    Endpoint(int rank) {
      this.rank = rank;
    }

    @Override
    public int rank() {
      return rank;
    }

    @Override
    public int size() {
      return size;
    }

    @Override
    public float[][] allToAll(float[][] outgoing) {
      if (outgoing.length != size) {
        throw new IllegalArgumentException("payload count = " + outgoing.length + ": must equal the team size " + size);
      }
      for (int dst = 0; dst < size; dst++) {
        slots[rank][dst] = outgoing[dst];
        if (dst != rank && outgoing[dst] != null) {
          sent += (long) outgoing[dst].length * Float.BYTES;
        }
      }
      await(rank);
      float[][] in = new float[size][];
      for (int src = 0; src < size; src++) {
        in[src] = slots[src][rank];
      }
      await(rank);
      return in;
    }

    @Override
    public long bytesSent() {
      return sent;
    }

    @Override
    public void abort(Throwable cause) {
      failure.compareAndSet(null, cause);
      barrier.reset();
    }

    @Override
    public void close() {}
  }
}
