package org.foldcp.ops;

/**
 * Device time of a forward split by the three stages of TriMul, in nanoseconds, summed over the
 * layers of a stack: stage 1 is LN_in, the input projections and the gates; stage 2 the triangle
 * GEMM; stage 3 LN_out, the output projection and its gate (plus the residual). It is the time
 * between events around the kernels, so it leaves out the uploads, the download and the host.
 */
public record StageTimes(long stage1Nanos, long stage2Nanos, long stage3Nanos) {
  public static final StageTimes ZERO = new StageTimes(0, 0, 0);

  public StageTimes {
    if (stage1Nanos < 0 || stage2Nanos < 0 || stage3Nanos < 0) {
      throw InvalidInputException.of("stage times", "(" + stage1Nanos + ", " + stage2Nanos + ", " + stage3Nanos
          + ") ns", "must all be >= 0");
    }
  }

  /** From the milliseconds the native profiled forward stores, stage by stage (float[3]). */
  public static StageTimes ofMillis(float[] stageMs) {
    InvalidInputException.require(stageMs.length == 3, "stage times (values)", stageMs.length,
        "must be one per stage (3)");
    return new StageTimes(nanos(stageMs[0]), nanos(stageMs[1]), nanos(stageMs[2]));
  }

  private static long nanos(float millis) {
    return Math.round(millis * 1_000_000.0);
  }

  /** Stage by stage, these plus {@code other}. */
  public StageTimes plus(StageTimes other) {
    return new StageTimes(stage1Nanos + other.stage1Nanos, stage2Nanos + other.stage2Nanos,
        stage3Nanos + other.stage3Nanos);
  }

  public long totalNanos() {
    return stage1Nanos + stage2Nanos + stage3Nanos;
  }

  /** Where a backend reports the stage times of a forward. */
  @FunctionalInterface
  public interface Sink {
    void accept(StageTimes times);
  }
}
