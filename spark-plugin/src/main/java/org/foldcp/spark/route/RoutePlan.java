package org.foldcp.spark.route;

import java.io.Serializable;
import java.util.Objects;
import org.foldcp.ops.cp.CpGrid;

/**
 * How a route runs, decided on the driver before anything executes: which route, the CP grid,
 * CPU threads per task, and how long a barrier team waits for its members. {@code reason}
 * says why this route was chosen (logged and shown by explain()).
 */
public final class RoutePlan implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The ways a TriMul stack can run on Spark (DESIGN.md section 3). */
  public enum Kind {
    /** cp = 1: every complex whole in one task. */
    SINGLE,
    /** cp > 1: one barrier stage of cp tasks exchanging the reshards directly. */
    BARRIER,
    /** cp > 1: the two reshards as two Spark shuffles per layer. */
    SHUFFLE
  }

  /** Where a task computes. CP routes run on the CPU until the NVSHMEM GPU team lands. */
  public enum Backend {
    /** The CPU backend. */
    CPU,
    /** The task's GPU (sm_90); a task without one fails with the reason. */
    GPU,
    /** The task's GPU where it has a usable one, else the CPU (with a warning in the task log). */
    AUTO
  }

  public final Kind kind;
  public final Backend backend;
  public final CpGrid grid;
  public final int threadsPerTask;
  public final long barrierTimeoutMillis;
  public final long connectTimeoutMillis;
  public final String reason;

  public RoutePlan(Kind kind, CpGrid grid, int threadsPerTask, long barrierTimeoutMillis, long connectTimeoutMillis,
                   String reason) {
    this(kind, Backend.CPU, grid, threadsPerTask, barrierTimeoutMillis, connectTimeoutMillis, reason);
  }

  public RoutePlan(Kind kind, Backend backend, CpGrid grid, int threadsPerTask, long barrierTimeoutMillis,
                   long connectTimeoutMillis, String reason) {
    this.kind = Objects.requireNonNull(kind, "kind");
    this.backend = Objects.requireNonNull(backend, "backend");
    this.grid = Objects.requireNonNull(grid, "grid");
    this.threadsPerTask = threadsPerTask;
    this.barrierTimeoutMillis = barrierTimeoutMillis;
    this.connectTimeoutMillis = connectTimeoutMillis;
    this.reason = reason;
  }

  public static RoutePlan single(int threadsPerTask, String reason) {
    return new RoutePlan(Kind.SINGLE, CpGrid.oneD(1), threadsPerTask, 300_000, 30_000, reason);
  }

  /** The same plan computing on {@code b}. */
  public RoutePlan withBackend(Backend b) {
    return new RoutePlan(kind, b, grid, threadsPerTask, barrierTimeoutMillis, connectTimeoutMillis, reason);
  }

  /** e.g. "barrier cp=4 grid=2x2 backend=cpu". */
  public String describe() {
    return kind.name().toLowerCase(java.util.Locale.ROOT) + " cp=" + grid.size() + " grid=" + grid + " backend="
        + backend.name().toLowerCase(java.util.Locale.ROOT);
  }

  @Override
  public String toString() {
    return describe() + " (" + reason + ")";
  }
}
