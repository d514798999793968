package org.foldcp.ops.cp;

/**
 * What moves reshard payloads between the ranks of a CP team. Every route brings its own: an
 * in-memory exchange for the simulated team, TCP between barrier tasks on the CPU, NVSHMEM
 * peer stores on GPUs (where the exchange is fused into the kernels instead).
 *
 * <p>{@link #allToAll} is collective: every rank calls it the same number of times, in the same
 * order. An implementation never waits forever: a dead or failed peer, or a timeout, ends the
 * call with an exception on every rank that names the cause.
 */
public interface ReshardTransport extends AutoCloseable {
  /** This rank (logical CP rank). */
  int rank();

  /** Number of ranks. */
  int size();

  /**
   * Sends {@code outgoing[dst]} to every rank dst (the rank's own slot is delivered locally)
   * and returns {@code received[src]}, what every rank sent to this one.
   */
  float[][] allToAll(float[][] outgoing);

  /** Bytes this rank has sent to other ranks so far (not counting its own slot). */
  long bytesSent();

  /** Tells the other ranks this one has failed, so that none of them waits for it. */
  void abort(Throwable cause);

  @Override
  void close();
}
