package org.foldcp.spark.route;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.layer.LayerStack;
import org.junit.jupiter.api.Test;

/**
 * A stack of its own hidden width meets a plan on the driver: where the GPU kernels cannot take
 * it, an AUTO backend becomes the CPU and says why, a forced GPU is refused by name, and a stack
 * the GPU takes leaves the plan as it was.
 */
class RoutePlanForStackTest {
  private static final LayerStack SQUARE = LayerStack.randomAlternating(2, 32, 1, false);
  private static final LayerStack HIDDEN = LayerStack.randomAlternating(2, 32, 16, 1, false);

  @Test
  void autoBecomesTheCpuWithTheReasonAndAForcedGpuIsRefused() {
    RoutePlan auto = RoutePlan.single(2, "spark.foldcp.route = auto").withBackend(RoutePlan.Backend.AUTO);
    assertSame(auto, auto.forStack(SQUARE));
    RoutePlan cpu = auto.forStack(HIDDEN);
    assertEquals(RoutePlan.Backend.CPU, cpu.backend);
    assertTrue(cpu.reason.startsWith("spark.foldcp.route = auto; on the CPU: layers of hidden width H = 16 (D = 32)"),
        cpu.reason);
    RoutePlan gpu = RoutePlan.single(2, "spark.foldcp.route = gpu: forced").withBackend(RoutePlan.Backend.GPU);
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> gpu.forStack(HIDDEN));
    assertTrue(e.getMessage().startsWith("H of the layer stack = 16: must equal D = 32 on the GPU")
        && e.getMessage().contains("spark.foldcp.route = cpu"), e.getMessage());
    assertSame(gpu, gpu.forStack(SQUARE));
  }

  @Test
  void rowsOfFoldcpTrimulChooseTheirBackendTheSameWay() {
    assertEquals(RoutePlan.Backend.CPU, RoutePlan.Backend.AUTO.forStack(HIDDEN));
    assertEquals(RoutePlan.Backend.AUTO, RoutePlan.Backend.AUTO.forStack(SQUARE));
    assertEquals(RoutePlan.Backend.GPU, RoutePlan.Backend.GPU.forStack(HIDDEN)); // refused by the GPU path, by name
  }
}
