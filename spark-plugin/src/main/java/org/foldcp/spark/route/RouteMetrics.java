package org.foldcp.spark.route;

import java.io.Serializable;
import org.foldcp.ops.StageTimes;

/**
 * What a route reports while it runs (the operator turns these into SQL metrics in the Spark UI).
 * Implementations must be serializable and safe to call from tasks; the default does nothing.
 */
public interface RouteMetrics extends Serializable {
  default void tiles(long count) {}

  default void bytesIn(long bytes) {}

  default void bytesOut(long bytes) {}

  default void computeNanos(long nanos) {}

  default void reshardNanos(long nanos) {}

  /** Tiles whose forward ran on a GPU (the rest ran on the CPU backend). */
  default void gpuTiles(long count) {}

  /** Bytes of a, b and z payloads sent from one rank to another (not counting a rank's own share). */
  default void reshardBytes(long bytes) {}

  /**
   * Bytes a GPU rank's fused reshards sent to other ranks: token -> channel (the projection
   * epilogue's stores of a and b) and channel -> token (the triangle epilogue's stores of z).
   */
  default void fusedReshardBytes(long toChannels, long toTokens) {}

  /**
   * GPU kernel time of one forward per TriMul stage, summed over its layers (part of its compute
   * time). Only routes built at metrics level debug measure it: measuring waits for the kernels.
   */
  default void gpuStageTimes(StageTimes times) {}

  /**
   * GPU time of a complex's non-finite scan and layers on the GPU feed's compute stream (the
   * device was busy with it; measured with events, no wait).
   */
  default void gpuBusyNanos(long nanos) {}

  /**
   * Time a task waited on the GPU feed: for a free pinned block or device slot, and for copies to
   * finish before it could hand bytes on (the rest of its time it copied bytes or computed).
   */
  default void copyWaitNanos(long nanos) {}

  /**
   * Time threads spent copying a complex's input bytes into the GPU feed's pinned memory, summed
   * over the threads (copy threads and the task's own): with the bytes in, the host copy rate.
   */
  default void hostCopyNanos(long nanos) {}

  /** Input bytes the GPU feed uploaded straight from the pinned row cache: no host copy. */
  default void bytesInPlace(long bytes) {}

  /**
   * One barrier rank's complexes ran from {@code span.startMillis()} to {@code span.endMillis()}
   * (reported once per rank, after its last complex; not by a rank that failed).
   */
  default void teamSpan(TeamSpan span) {}

  /** Reports nothing. */
  RouteMetrics NONE = new RouteMetrics() {};
}
