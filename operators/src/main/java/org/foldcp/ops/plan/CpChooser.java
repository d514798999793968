package org.foldcp.ops.plan;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.InvalidInputException;

/**
 * Picks cp for one complex from the {@link CostModel}: the smallest cp whose share fits the device
 * memory cap and whose stack meets the time target; cp = 1 wherever that holds. Where no cp meets
 * the target, the fastest that fits (the target is a wish, memory is not); where none fits, an
 * error naming the complex, the bytes it needs at the largest cp and the cap.
 */
public final class CpChooser {
  private final CostModel model;
  private final int[] candidates;
  private final long memoryCapBytes;
  private final double targetSeconds;

  /**
   * @param candidates the cp values a team can have here, ascending (e.g. 1, 2, 4, 8 on a node of 8)
   * @param memoryCapBytes device bytes a rank may use for one layer's buffers
   * @param targetSeconds the time one complex's stack may take (Double.POSITIVE_INFINITY: none)
   */
  public CpChooser(CostModel model, int[] candidates, long memoryCapBytes, double targetSeconds) {
    InvalidInputException.require(candidates.length > 0 && candidates[0] >= 1, "cp candidates",
        java.util.Arrays.toString(candidates), "must be a non-empty ascending list of cp >= 1");
    for (int i = 1; i < candidates.length; i++) {
      InvalidInputException.require(candidates[i] > candidates[i - 1], "cp candidates",
          java.util.Arrays.toString(candidates), "must be ascending");
    }
    InvalidInputException.require(memoryCapBytes > 0, "device memory cap", memoryCapBytes, "must be positive");
    InvalidInputException.require(targetSeconds > 0, "time target", targetSeconds, "must be positive");
    this.model = model;
    this.candidates = candidates.clone();
    this.memoryCapBytes = memoryCapBytes;
    this.targetSeconds = targetSeconds;
  }

  /** The choice for one complex and why. */
  public record Choice(String complexId, int cp, double predictedSeconds, long deviceBytesPerRank, String reason) {}

  /** cp for complex {@code id} of shape (b, n, d) under a stack of {@code layers} layers with H = D. */
  public Choice choose(String id, int b, int n, int d, int layers) {
    return choose(id, b, n, d, d, layers);
  }

  /** cp for complex {@code id} of shape (b, n, d) under a stack of {@code layers} layers of hidden width {@code h}. */
  public Choice choose(String id, int b, int n, int d, int h, int layers) {
    List<CostModel.Estimate> fitting = new ArrayList<>();
    for (int cp : candidates) {
      if (h % cp != 0) {
        continue;
      }
      CostModel.Estimate e = model.layer(b, n, d, h, cp);
      if (!e.fits(memoryCapBytes)) {
        continue;
      }
      if (layers * e.fusedSeconds() <= targetSeconds) {
        String what = Double.isInfinite(targetSeconds) ? "fits the memory cap" : "fits and meets the target";
        return new Choice(id, cp, layers * e.fusedSeconds(), e.deviceBytesPerRank(),
            cp == candidates[0] ? what : "the smallest cp that " + what);
      }
      fitting.add(e);
    }
    if (fitting.isEmpty()) {
      int largest = candidates[candidates.length - 1];
      throw InvalidInputException.of("complex '" + id + "' (B, N, D) = (" + b + ", " + n + ", " + d + ")",
          CostModel.deviceBytesPerRank(b, n, d, h, largest) + " device bytes per rank at cp = " + largest,
          "must fit the device memory cap of " + memoryCapBytes + " bytes at some cp of "
              + java.util.Arrays.toString(candidates) + " that divides " + (h == d ? "D" : "H = " + h));
    }
    CostModel.Estimate best = fitting.get(0);
    for (CostModel.Estimate e : fitting) {
      if (e.fusedSeconds() < best.fusedSeconds()) {
        best = e;
      }
    }
    return new Choice(id, best.cp(), layers * best.fusedSeconds(), best.deviceBytesPerRank(),
        "no cp meets the target of " + targetSeconds + " s: the fastest that fits");
  }
}
