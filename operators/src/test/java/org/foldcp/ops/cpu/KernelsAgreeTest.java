package org.foldcp.ops.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.Bf16;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every native variant this CPU runs gives the pure-Java kernels' bits, operation by operation
 * (LayerNorm, gates, special values included) and for whole layers: which kernels a machine
 * loads never changes a result, so CP ranks on different machines still agree with cp = 1.
 */
class KernelsAgreeTest {
  private static final JavaKernels JAVA = new JavaKernels();

  static Stream<Arguments> variants() {
    int[] v = NativeKernels.runnableVariants();
    Assumptions.assumeTrue(v.length > 0, "no native kernels here: " + NativeKernels.unavailableReason());
    return IntStream.of(v).mapToObj(x -> Arguments.of(new NativeKernels(x).describe(), new NativeKernels(x)));
  }

  /** Values of every kind: ordinary, tiny, huge, zeros of both signs, infinities, NaN. */
  private static float[] awkward(SplittableRandom r, int n) {
    float[] specials = {0f, -0f, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 1e-40f, -1e-40f,
        90f, -90f, 87.5f, -87.5f, 1e30f, -1e30f, Float.MIN_VALUE};
    float[] x = new float[n];
    for (int i = 0; i < n; i++) {
      x[i] = r.nextInt(8) == 0 ? specials[r.nextInt(specials.length)] : (float) (r.nextGaussian() * 4);
    }
    return x;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("variants")
  void layerNormsAgree(String name, NativeKernels nat) {
    SplittableRandom r = new SplittableRandom(1);
    for (int d : new int[] {1, 7, 8, 16, 17, 31, 32, 128, 130}) {
      int cols = 5;
      float[] w = awkward(r, d);
      float[] b = awkward(r, d);
      float[] x = new float[cols * d];
      short[] xb = new short[cols * d + 3];
      for (int i = 0; i < x.length; i++) {
        x[i] = (float) r.nextGaussian() * 3 + 1;
        xb[i + 3] = Bf16.fromFloat(x[i]);
      }
      float[] o1 = new float[cols * d];
      float[] o2 = new float[cols * d];
      JAVA.layerNorm(x, cols, d, w, b, 1e-5f, o1);
      nat.layerNorm(x, cols, d, w, b, 1e-5f, o2);
      assertArrayEquals(o1, o2, 0f, "fp32 LayerNorm d=" + d);
      JAVA.layerNormBf16(xb, 3, cols, d, w, b, 1e-5f, o1);
      nat.layerNormBf16(xb, 3, cols, d, w, b, 1e-5f, o2);
      assertArrayEquals(o1, o2, 0f, "bf16 LayerNorm d=" + d);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("variants")
  void gatesAgreeOnEveryKindOfValue(String name, NativeKernels nat) {
    SplittableRandom r = new SplittableRandom(2);
    for (int cols : new int[] {1, 7, 16, 33, 100}) {
      int cc = 3;
      float[] proj = awkward(r, 4 * cc * cols);
      float[] bias = awkward(r, 4 * cc + 4);
      byte[] mask = new byte[cols];
      for (int j = 0; j < cols; j++) {
        mask[j] = (byte) (r.nextInt(4) == 0 ? 0 : 1);
      }
      for (byte[] m : new byte[][] {mask, null}) {
        float[] a1 = new float[cc * cols];
        float[] b1 = new float[cc * cols];
        float[] a2 = new float[cc * cols];
        float[] b2 = new float[cc * cols];
        JAVA.gateProjection(proj, cc, cols, bias, 4, m, a1, b1);
        nat.gateProjection(proj, cc, cols, bias, 4, m, a2, b2);
        assertBitsEqual(a1, a2, "gate a cols=" + cols);
        assertBitsEqual(b1, b2, "gate b cols=" + cols);
      }
      int d = cols; // any D: vector bodies and tails
      float[] po = awkward(r, 4 * d);
      float[] go = awkward(r, 4 * d);
      float[] pb = awkward(r, d);
      float[] gb = awkward(r, d);
      short[] x = new short[4 * d + 1];
      for (int i = 0; i < x.length; i++) {
        x[i] = Bf16.fromFloat(awkward(r, 1)[0]);
      }
      for (boolean residual : new boolean[] {false, true}) {
        short[] o1 = new short[4 * d + 2];
        short[] o2 = new short[4 * d + 2];
        JAVA.gateOutput(po, go, 4, d, pb, gb, x, 1, residual, o1, 2);
        nat.gateOutput(po, go, 4, d, pb, gb, x, 1, residual, o2, 2);
        assertArrayEquals(nanAsOne(o1), nanAsOne(o2), "output gate d=" + d + " residual=" + residual);
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("variants")
  void wholeLayersAgreeBitForBit(String name, NativeKernels nat) {
    for (int[] s : new int[][] {{1, 33, 24}, {2, 20, 8}, {1, 70, 128}}) {
      PairTensor x = PairTensor.random(s[0], s[1], s[2], 5, 0.2);
      for (Direction dir : Direction.values()) {
        TriMulLayer layer = new TriMulLayer(TriMulSpec.of(dir, true), LayerWeights.random(s[2], 6, true));
        try (CpuTriMul j = new CpuTriMul(2, JAVA); CpuTriMul n = new CpuTriMul(2, nat)) {
          assertTrue(j.forward(x, layer).sameAs(n.forward(x, layer)),
              dir + " " + Arrays.toString(s) + ": native and Java layers differ");
        }
      }
    }
  }

  /**
   * bf16 values with every NaN as one NaN: the sign of a NaN made from two NaNs (NaN + NaN) is
   * the compiler's choice of operand order, in C and in the JIT alike; nothing is promised there.
   */
  private static short[] nanAsOne(short[] v) {
    short[] o = v.clone();
    for (int i = 0; i < o.length; i++) {
      if (Float.isNaN(Bf16.toFloat(o[i]))) {
        o[i] = 0x7fc0;
      }
    }
    return o;
  }

  private static void assertBitsEqual(float[] a, float[] b, String what) {
    for (int i = 0; i < a.length; i++) {
      if (Float.floatToRawIntBits(a[i]) != Float.floatToRawIntBits(b[i]) && !(Float.isNaN(a[i]) && Float.isNaN(b[i]))) {
        throw new AssertionError(what + ": element " + i + " Java " + a[i] + " ("
            + Integer.toHexString(Float.floatToRawIntBits(a[i])) + "), native " + b[i] + " ("
            + Integer.toHexString(Float.floatToRawIntBits(b[i])) + ")");
      }
    }
  }
}
