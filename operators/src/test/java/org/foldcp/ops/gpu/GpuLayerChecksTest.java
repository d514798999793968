package org.foldcp.ops.gpu;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
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
 * uploaded): a hidden width other than D is refused with the value, the rule and where such a
 * layer runs instead.
 */
class GpuLayerChecksTest {
  @Test
  void aHiddenWidthOtherThanDIsNamedWithWhereItRuns() {
    TriMulLayer square = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(64, 1, false));
    assertDoesNotThrow(() -> NativeTriMul.requireKernelsFor(square));
    TriMulLayer hidden = new TriMulLayer(TriMulSpec.of(Direction.INCOMING), LayerWeights.random(64, 32, 1, false));
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> NativeTriMul.requireKernelsFor(hidden));
    assertTrue(e.getMessage().startsWith("H of the layer = 32") && e.getMessage().contains("D = 64")
        && e.getMessage().contains("spark.foldcp.route = cpu"), e.getMessage());
  }
}
