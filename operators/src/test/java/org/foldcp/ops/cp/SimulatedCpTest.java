package org.foldcp.ops.cp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.Stream;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.ops.testing.Reference64;
import org.foldcp.ops.testing.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class SimulatedCpTest {
  static Stream<Arguments> grids() {
    return Stream.of(
        Arguments.of(CpGrid.oneD(2)), Arguments.of(CpGrid.oneD(3)), Arguments.of(CpGrid.oneD(4)),
        Arguments.of(CpGrid.of(2, 2)), Arguments.of(CpGrid.of(1, 4)), Arguments.of(CpGrid.of(2, 3)),
        // cp = 6 and 8, the grids of issue 15's GPU runs: the same reshards with more ranks
        Arguments.of(CpGrid.oneD(6)), Arguments.of(CpGrid.of(3, 2)), Arguments.of(CpGrid.oneD(8)),
        Arguments.of(CpGrid.of(2, 4)), Arguments.of(CpGrid.of(4, 2)));
  }

  /**
   * N = 13 is a multiple of no grid dimension, so every case also pads with masked tokens; D = 24
   * divides by every cp here. The stack has both directions, residual, biases and a mask.
   */
  @ParameterizedTest(name = "grid {0}")
  @MethodSource("grids")
  void equalsSingleRankBitForBit(CpGrid grid) {
    int n = 13;
    int d = 24;
    PairTensor x = PairTensor.random(2, n, d, 5 + grid.size(), 0.15);
    LayerStack stack = new LayerStack(List.of(
        new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, true), LayerWeights.random(d, 1, true)),
        new TriMulLayer(TriMulSpec.of(Direction.INCOMING, true), LayerWeights.random(d, 2, false))));
    PairTensor single;
    try (CpuTriMul cpu = new CpuTriMul(2)) {
      single = cpu.forward(x, stack);
    }
    PairTensor sharded;
    try (SimulatedCp cp = new SimulatedCp(grid, 2)) {
      sharded = cp.forward(x, stack);
      assertTrue(cp.tokenToChannelBytes() > 0 && cp.channelToTokenBytes() > 0, "data must have crossed ranks");
    }
    assertEquals(x.shapeString(), sharded.shapeString());
    assertTrue(sharded.sameAs(single), "grid " + grid + " must reproduce the cp = 1 result bit for bit");
    Tensors.assertWithinContract(sharded, Reference64.forward(x, stack), "grid " + grid);
  }

  /**
   * A hidden width of its own: the ranks split H, not D, between them. D = 40 does not divide by
   * 3 or 6; H = 24 divides by every cp of the grids, and only H must.
   */
  @ParameterizedTest(name = "grid {0}")
  @MethodSource("grids")
  void aHiddenWidthOfItsOwnIsSplitOverTheRanksBitForBit(CpGrid grid) {
    int n = 11;
    int d = 40;
    int h = 24;
    PairTensor x = PairTensor.random(1, n, d, 15 + grid.size(), 0.15);
    LayerStack stack = LayerStack.randomAlternating(2, d, h, 21, true);
    PairTensor single;
    try (CpuTriMul cpu = new CpuTriMul(2)) {
      single = cpu.forward(x, stack);
    }
    try (SimulatedCp cp = new SimulatedCp(grid, 2)) {
      PairTensor sharded = cp.forward(x, stack);
      assertTrue(sharded.sameAs(single), "grid " + grid + " must reproduce the cp = 1 result bit for bit at H != D");
      // what crosses ranks is a, b (H channels each) and z (H channels), never D
      long padded = (long) new ShardLayout(grid, n, d, h).paddedN() * new ShardLayout(grid, n, d, h).paddedN();
      assertTrue(cp.channelToTokenBytes() <= 2 * padded * h * Float.BYTES, "z moves H channels per token");
    }
  }

  @Test
  void aHiddenWidthNotDivisibleByCpIsNamed() {
    PairTensor x = PairTensor.random(1, 8, 32, 1, 0);
    LayerStack stack = LayerStack.randomAlternating(1, 32, 20, 3, false);
    try (SimulatedCp cp = new SimulatedCp(CpGrid.oneD(8), 1)) {
      InvalidInputException e = assertThrows(InvalidInputException.class, () -> cp.forward(x, stack));
      assertTrue(e.getMessage().contains("H") && e.getMessage().contains("20") && e.getMessage().contains("cp = 8"),
          e.getMessage());
    }
  }

  @Test
  void withoutMaskAndDivisibleN() {
    int n = 16;
    int d = 8;
    PairTensor x = PairTensor.random(1, n, d, 9, 0.0);
    LayerStack stack = LayerStack.of(new TriMulLayer(TriMulSpec.of(Direction.INCOMING), LayerWeights.random(d, 3, true)));
    try (CpuTriMul cpu = new CpuTriMul(1); SimulatedCp cp = new SimulatedCp(CpGrid.of(2, 2), 1)) {
      PairTensor out = cp.forward(x, stack);
      assertTrue(!out.hasMask(), "no mask in, no mask out");
      assertTrue(out.sameAs(cpu.forward(x, stack)));
      // 4 ranks, each sends 3/4 of its a and b (2 floats per value) and receives 3/4 of its z
      long values = (long) n * n * d;
      assertEquals(values * 3 / 4 * 2 * Float.BYTES, cp.tokenToChannelBytes());
      assertEquals(values * 3 / 4 * Float.BYTES, cp.channelToTokenBytes());
    }
  }

  @Test
  void channelCountNotDivisibleByCpIsRefused() {
    PairTensor x = PairTensor.random(1, 8, 30, 1, 0);
    LayerStack stack = LayerStack.of(new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(30, 1, false)));
    try (SimulatedCp cp = new SimulatedCp(CpGrid.oneD(4), 1)) {
      InvalidInputException e = assertThrows(InvalidInputException.class, () -> cp.forward(x, stack));
      assertTrue(e.getMessage().startsWith("D = 30: must be divisible by cp = 4"), e.getMessage());
    }
  }

  @Test
  void weightsThatDifferAcrossRanksAreRefusedBeforeAnythingRuns() {
    int d = 8;
    PairTensor x = PairTensor.random(1, 6, d, 1, 0);
    LayerStack a = LayerStack.of(new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(d, 1, false)));
    LayerStack b = LayerStack.of(new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(d, 2, false)));
    try (SimulatedCp cp = new SimulatedCp(CpGrid.oneD(2), 1)) {
      InvalidInputException e = assertThrows(InvalidInputException.class, () -> cp.forward(x, List.of(a, b)));
      String m = e.getMessage();
      assertTrue(m.contains("layer 0 on rank 1") && m.contains(b.get(0).weights().digest())
          && m.contains(a.get(0).weights().digest()) && m.contains("bit-identical"), m);
    }
  }

  @Test
  void specThatDiffersAcrossRanksIsRefused() {
    LayerWeights w = LayerWeights.random(4, 1, false);
    LayerStack a = LayerStack.of(new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), w));
    LayerStack b = LayerStack.of(new TriMulLayer(TriMulSpec.of(Direction.INCOMING), w));
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> SimulatedCp.checkSameWeights(List.of(a, b), CpGrid.oneD(2)));
    assertTrue(e.getMessage().contains("incoming") && e.getMessage().contains("outgoing"), e.getMessage());
  }
}
