package org.foldcp.ops.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.ops.testing.Reference64;
import org.foldcp.ops.testing.Tensors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class CpuTriMulTest {
  private static CpuTriMul cpu;

  @BeforeAll
  static void start() {
    cpu = new CpuTriMul(2);
  }

  @AfterAll
  static void stop() {
    cpu.close();
  }

  /**
   * Every direction x mask x bias x D x B for the small N; for the larger N every N x D x
   * direction, with mask, biases and B rotating so each still appears (the float64 reference is
   * O(N^3 D) in plain loops).
   */
  static Stream<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    int rot = 0;
    for (int n : new int[] {1, 7, 64, 100, 257}) {
      for (int d : new int[] {8, 32, 128}) {
        for (Direction dir : Direction.values()) {
          if (n <= 64) {
            for (boolean mask : new boolean[] {false, true}) {
              for (boolean bias : new boolean[] {false, true}) {
                for (int b : new int[] {1, 2}) {
                  out.add(Arguments.of(dir, n, d, b, mask, bias));
                }
              }
            }
          } else {
            rot++;
            int b = (n == 257 && d == 128) ? 1 : 1 + rot % 2;
            out.add(Arguments.of(dir, n, d, b, rot % 3 != 0, (rot / 2) % 2 == 0));
          }
        }
      }
    }
    return out.stream();
  }

  @ParameterizedTest(name = "{0} N={1} D={2} B={3} mask={4} bias={5}")
  @MethodSource("cases")
  void matchesFloat64Reference(Direction dir, int n, int d, int b, boolean mask, boolean bias) {
    long seed = 1000L * n + 10L * d + b + (mask ? 5 : 0) + (bias ? 3 : 0) + dir.ordinal();
    PairTensor x = PairTensor.random(b, n, d, seed, mask ? 0.2 : 0.0);
    TriMulLayer layer = new TriMulLayer(TriMulSpec.of(dir), LayerWeights.random(d, seed + 1, bias));
    PairTensor out = cpu.forward(x, layer);
    assertEquals(x.shapeString(), out.shapeString());
    Tensors.assertWithinContract(out, Reference64.forward(x, layer), dir + " N=" + n + " D=" + d);
    assertTrue(out.sameAs(out) && (mask == out.hasMask()), "the output carries the input mask");
  }

  /**
   * A hidden width H of its own (OpenFold's c_hidden): wider and narrower than D, odd, with mask,
   * biases and batch, both directions, a stack of two; H = D gives the bits of the square layer.
   */
  @Test
  void hiddenWidthOfItsOwnMatchesFloat64() {
    int[][] dh = {{48, 32}, {32, 64}, {24, 13}, {16, 40}};
    for (int[] s : dh) {
      for (Direction dir : Direction.values()) {
        PairTensor x = PairTensor.random(2, 19, s[0], 70 + s[1], 0.2);
        TriMulLayer layer = new TriMulLayer(TriMulSpec.of(dir, true), LayerWeights.random(s[0], s[1], 80 + s[1], true));
        assertEquals(s[1], layer.hidden());
        PairTensor out = cpu.forward(x, layer);
        assertEquals(x.shapeString(), out.shapeString(), "the output has the input's D, whatever H");
        Tensors.assertWithinContract(out, Reference64.forward(x, layer), dir + " D=" + s[0] + " H=" + s[1]);
      }
    }
    PairTensor x = PairTensor.random(1, 23, 48, 5, 0.1);
    LayerStack stack = LayerStack.randomAlternating(2, 48, 32, 9, false);
    Tensors.assertWithinContract(cpu.forward(x, stack), Reference64.forward(x, stack), "stack D=48 H=32");
    TriMulLayer square = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(48, 48, 3, true));
    TriMulLayer same = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(48, 3, true));
    assertEquals(same.weights().digest(), square.weights().digest(), "H = D is the square layer");
    assertTrue(cpu.forward(x, square).sameAs(cpu.forward(x, same)));
  }

  /** D not a multiple of 8 (the LayerNorm sums' and the sigmoid's tails) nor of the GEMM tile. */
  @Test
  void oddChannelCount() {
    for (int d : new int[] {1, 5, 13, 21}) {
      for (Direction dir : Direction.values()) {
        PairTensor x = PairTensor.random(1, 11, d, 50 + d, 0.2);
        TriMulLayer layer = new TriMulLayer(TriMulSpec.of(dir, true), LayerWeights.random(d, 60 + d, true));
        Tensors.assertWithinContract(cpu.forward(x, layer), Reference64.forward(x, layer), dir + " D=" + d);
      }
    }
  }

  @Test
  void layerNormSumsMatchFloat64() {
    java.util.SplittableRandom r = new java.util.SplittableRandom(3);
    for (int n = 0; n <= 21; n++) {
      float[] v = new float[n + 2];
      double s = 0;
      for (int c = 0; c < v.length; c++) {
        v[c] = (float) r.nextDouble(-2, 2);
        s += c < n ? v[c] : 0;
      }
      double mean = n == 0 ? 0 : s / n;
      double q = 0;
      for (int c = 0; c < n; c++) {
        q += (v[c] - (float) mean) * (double) (v[c] - (float) mean);
      }
      assertEquals(s, JavaKernels.sum8(v, 0, n, 0f, false), 1e-5, "sum n=" + n);
      assertEquals(q, JavaKernels.sum8(v, 0, n, (float) mean, true), 1e-5, "squares n=" + n);
    }
  }

  @Test
  void maskWithEmptyRowsAndColumns() {
    int n = 40;
    int d = 32;
    for (Direction dir : Direction.values()) {
      PairTensor x = PairTensor.random(1, n, d, 77, 0.1);
      for (int t = 0; t < n; t++) {
        x.setValid(0, 5, t, false); // row 5 all masked
        x.setValid(0, t, 11, false); // column 11 all masked
      }
      TriMulLayer layer = new TriMulLayer(TriMulSpec.of(dir), LayerWeights.random(d, 78, true));
      Tensors.assertWithinContract(cpu.forward(x, layer), Reference64.forward(x, layer), "masked rows " + dir);
    }
  }

  @Test
  void fullyMaskedInputGivesGateTimesBiasOnly() {
    // With everything masked, a = b = 0, so z = 0 and LN_out(z) = norm_out.bias: the output is
    // sigmoid(xn g_out^T) * (norm_out.bias p_out^T): still finite, never NaN (LN of a zero vector).
    PairTensor x = PairTensor.random(1, 9, 8, 3, 1.0);
    TriMulLayer layer = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(8, 4, false));
    Tensors.assertWithinContract(cpu.forward(x, layer), Reference64.forward(x, layer), "all masked");
  }

  @Test
  void residualAndStackOfThree() {
    int n = 33;
    int d = 32;
    PairTensor x = PairTensor.random(2, n, d, 11, 0.15);
    LayerStack stack = new LayerStack(List.of(
        new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, true), LayerWeights.random(d, 12, true)),
        new TriMulLayer(TriMulSpec.of(Direction.INCOMING, true), LayerWeights.random(d, 13, false)),
        new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, false), LayerWeights.random(d, 14, true))));
    Tensors.assertWithinContract(cpu.forward(x, stack), Reference64.forward(x, stack), "3-layer stack");
  }

  @Test
  void resultDoesNotDependOnThreadCount() {
    PairTensor x = PairTensor.random(1, 70, 16, 21, 0.1);
    TriMulLayer layer = new TriMulLayer(TriMulSpec.of(Direction.INCOMING, true), LayerWeights.random(16, 22, true));
    try (CpuTriMul one = new CpuTriMul(1); CpuTriMul three = new CpuTriMul(3)) {
      PairTensor a = one.forward(x, layer);
      assertTrue(a.sameAs(three.forward(x, layer)), "1 and 3 threads must agree bit for bit");
      assertTrue(a.sameAs(cpu.forward(x, layer)), "1 and 2 threads must agree bit for bit");
    }
  }

  @Test
  void inputIsNotModified() {
    PairTensor x = PairTensor.random(1, 12, 8, 31, 0.3);
    PairTensor before = x.copy();
    cpu.forward(x, new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, true), LayerWeights.random(8, 32, true)));
    assertTrue(before.sameAs(x));
  }

  @Test
  void dimensionMismatchNamesBothValues() {
    PairTensor x = PairTensor.random(1, 8, 16, 1, 0);
    TriMulLayer layer = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(32, 2, false));
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> cpu.forward(x, layer));
    assertTrue(e.getMessage().contains("D of the pair tensor = 16") && e.getMessage().contains("layer's D = 32"),
        e.getMessage());
  }

  @Test
  void nonSquareInputIsRefused() {
    PairTensor x = PairTensor.zeros(1, 4, 6, 8);
    TriMulLayer layer = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(8, 2, false));
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> cpu.forward(x, layer));
    assertTrue(e.getMessage().contains("(1, 4, 6, 8)") && e.getMessage().contains("equal row and column counts"),
        e.getMessage());
  }

  /** The parallel check finds NaN and Inf in any batch and row and throws NonFinite.check's exception. */
  @Test
  void nonFiniteInputIsRefusedWithTheSerialChecksException() {
    PairTensor x = PairTensor.random(2, 9, 8, 5, 0);
    x.row(1, 6)[3 * 8 + 2] = org.foldcp.ops.tensor.Bf16.fromFloat(Float.NaN);
    x.row(1, 2)[5] = org.foldcp.ops.tensor.Bf16.fromFloat(Float.POSITIVE_INFINITY);
    TriMulLayer layer = new TriMulLayer(TriMulSpec.of(Direction.INCOMING), LayerWeights.random(8, 2, false));
    org.foldcp.ops.NonFiniteInputException e =
        assertThrows(org.foldcp.ops.NonFiniteInputException.class, () -> cpu.forward(x, layer));
    org.foldcp.ops.NonFiniteInputException serial = assertThrows(org.foldcp.ops.NonFiniteInputException.class,
        () -> org.foldcp.ops.tensor.NonFinite.check(x, "the pair tensor"));
    assertEquals(serial.getMessage(), e.getMessage());
    assertEquals(2, e.count());
    assertEquals(List.of(1, 2, 0, 5), java.util.Arrays.stream(e.first()).boxed().toList());
    assertEquals(0, cpu.forward(x, layer, true).rows() - 9);
  }
}
