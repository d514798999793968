package org.foldcp.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Test;

/** Stage times as the native profiled forward's milliseconds become them, and the CPU backend's answer. */
class StageTimesTest {
  @Test
  void millisecondsBecomeNanosecondsAndLayersAddUpStageByStage() {
    StageTimes one = StageTimes.ofMillis(new float[] {0.25f, 1.5f, 0.125f});
    assertEquals(new StageTimes(250_000, 1_500_000, 125_000), one);
    StageTimes two = one.plus(StageTimes.ofMillis(new float[] {0.5f, 2f, 0.375f}));
    assertEquals(new StageTimes(750_000, 3_500_000, 500_000), two);
    assertEquals(4_750_000, two.totalNanos());
  }

  @Test
  void badTimesAreRefusedNamingTheRule() {
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> new StageTimes(1, -2, 3));
    assertTrue(e.getMessage().contains("(1, -2, 3) ns") && e.getMessage().contains(">= 0"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> StageTimes.ofMillis(new float[2]));
    assertTrue(e.getMessage().contains("one per stage"), e.getMessage());
  }

  /** The CPU backend's stages are no device kernels: asked for stage times, it runs the plain forward and reports none. */
  @Test
  void theCpuBackendReportsNoStageTimes() {
    LayerStack stack = LayerStack.randomAlternating(2, 8, 5, true);
    PairTensor x = PairTensor.random(1, 6, 8, 3, 0.2);
    List<StageTimes> reported = new ArrayList<>();
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      PairTensor timed = cpu.forward(x, stack, false, reported::add);
      assertTrue(timed.sameAs(cpu.forward(x, stack)));
    }
    assertEquals(List.of(), reported);
  }
}
