package org.foldcp.ops.gpu;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.junit.jupiter.api.Test;

/**
 * The GPU paths' check of a layer, which needs no GPU (it runs before anything is loaded or
 * uploaded): D and H each a multiple of 32 in [32, 512], equal or not; a width outside the rule is
 * refused with the value, the rule and where such a layer runs instead.
 */
class GpuLayerChecksTest {
  private static TriMulLayer layer(int d, int h) {
    return new TriMulLayer(TriMulSpec.of(Direction.INCOMING), LayerWeights.random(d, h, 1, false));
  }

  @Test
  void everyWidthOfTheRuleIsTakenEqualOrNot() {
    for (int[] w : new int[][] {{64, 64}, {128, 64}, {64, 128}, {256, 128}, {32, 256}, {256, 32}, {384, 256}, {512, 512}, {64, 512}, {480, 32}}) {
      assertDoesNotThrow(() -> NativeTriMul.requireKernelsFor(layer(w[0], w[1])), "D = " + w[0] + ", H = " + w[1]);
      assertTrue(NativeTriMul.gpuKernelsTake(w[0], w[1]));
    }
  }

  @Test
  void aWidthOutsideTheRuleIsNamedWithTheRuleAndWhereItRuns() {
    for (int h : new int[] {16, 48, 544}) {
      assertFalse(NativeTriMul.gpuKernelsTake(64, h));
      InvalidInputException e = assertThrows(InvalidInputException.class,
          () -> NativeTriMul.requireKernelsFor(layer(64, h)));
      assertTrue(e.getMessage().startsWith("H of the layer = " + h + ": must be a multiple of 32 in [32, 512] (D = 64)"
          + " on the GPU") && e.getMessage().contains("spark.foldcp.route = cpu"), e.getMessage());
    }
    InvalidInputException d = assertThrows(InvalidInputException.class,
        () -> NativeTriMul.requireKernelsFor(layer(40, 64)));
    assertTrue(d.getMessage().startsWith("D of the layer = 40: must be a multiple of 32 in [32, 512] on the GPU"),
        d.getMessage());
  }
}
