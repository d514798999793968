package org.foldcp.spark.route;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.layer.LayerStack;
import org.junit.jupiter.api.Test;

/**
 * A stack of its own hidden width meets a plan on the driver: the GPU kernels take D and H that are
 * multiples of 32 in [32, 512], equal or not, and the plan stays as it was; where they cannot take
 * the stack, an AUTO backend becomes the CPU and says why, and a forced GPU is refused by name.
 */
class RoutePlanForStackTest {
  private static final LayerStack SQUARE = LayerStack.randomAlternating(2, 32, 1, false);
  private static final LayerStack WIDER = LayerStack.randomAlternating(2, 32, 64, 1, false);
  private static final LayerStack HIDDEN = LayerStack.randomAlternating(2, 32, 16, 1, false);

  @Test
  void autoBecomesTheCpuWithTheReasonAndAForcedGpuIsRefused() {
    RoutePlan auto = RoutePlan.single(2, "spark.foldcp.route = auto").withBackend(RoutePlan.Backend.AUTO);
    assertSame(auto, auto.forStack(SQUARE));
    assertSame(auto, auto.forStack(WIDER));
    RoutePlan cpu = auto.forStack(HIDDEN);
    assertEquals(RoutePlan.Backend.CPU, cpu.backend);
    assertTrue(cpu.reason.startsWith("spark.foldcp.route = auto; on the CPU: layers of D = 32, H = 16: the GPU kernels"
        + " need each to be a multiple of 32 in [32, 512]"), cpu.reason);
    RoutePlan gpu = RoutePlan.single(2, "spark.foldcp.route = gpu: forced").withBackend(RoutePlan.Backend.GPU);
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> gpu.forStack(HIDDEN));
    assertTrue(e.getMessage().startsWith("H of the layer stack = 16: must be a multiple of 32 in [32, 512] (D = 32) on"
        + " the GPU") && e.getMessage().contains("spark.foldcp.route = cpu"), e.getMessage());
    assertSame(gpu, gpu.forStack(SQUARE));
    assertSame(gpu, gpu.forStack(WIDER));
  }

  @Test
  void rowsOfFoldcpTrimulChooseTheirBackendTheSameWay() {
    assertEquals(RoutePlan.Backend.CPU, RoutePlan.Backend.AUTO.forStack(HIDDEN));
    assertEquals(RoutePlan.Backend.AUTO, RoutePlan.Backend.AUTO.forStack(SQUARE));
    assertEquals(RoutePlan.Backend.AUTO, RoutePlan.Backend.AUTO.forStack(WIDER));
    assertEquals(RoutePlan.Backend.GPU, RoutePlan.Backend.GPU.forStack(HIDDEN)); // refused by the GPU path, by name
  }

  /**
   * The driver's rule is the kernels' ({@code NativeTriMul.gpuKernelsTake}, no native library
   * needed), for square stacks as for stacks of their own hidden width.
   */
  @Test
  void theDriverUsesTheKernelsWidthRule() {
    assertTrue(RoutePlan.gpuKernelsTake(LayerStack.randomAlternating(1, 256, 128, 1, false)));
    assertTrue(RoutePlan.gpuKernelsTake(LayerStack.randomAlternating(1, 128, 1, false)));
    assertTrue(!RoutePlan.gpuKernelsTake(LayerStack.randomAlternating(1, 64, 48, 1, false)));
    assertTrue(!RoutePlan.gpuKernelsTake(LayerStack.randomAlternating(1, 64, 544, 1, false)));
    assertTrue(RoutePlan.gpuKernelsTake(LayerStack.randomAlternating(1, 384, 256, 1, false)), "384 / 256");
    assertTrue(!RoutePlan.gpuKernelsTake(LayerStack.randomAlternating(1, 8, 64, 1, false)), "D = 8 is outside the rule");
    assertTrue(!RoutePlan.gpuKernelsTake(LayerStack.randomAlternating(1, 8, 1, false)), "square D = 8 too");
    assertTrue(RoutePlan.gpuKernelsTake(LayerStack.randomAlternating(1, 512, 1, false)), "square D = 512");
    assertTrue(!RoutePlan.gpuKernelsTake(LayerStack.randomAlternating(1, 544, 1, false)), "square D = 544 is outside");
  }
}
