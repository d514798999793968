package org.foldcp.ops.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The gates' sigmoid: accuracy against float64, special values, and the same bits in every lane. */
class SimdTest {
  private static final float[] SPECIAL = {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0f, -0f,
      86.9f, -86.9f, 87f, -87f, 88f, -88f, 100f, -100f, Float.MAX_VALUE, -Float.MAX_VALUE, Float.MIN_VALUE,
      -Float.MIN_VALUE, 1e-20f, -1e-20f, 0.5f, -0.5f, 20f, -20f};

  @Test
  void sigmoidMatchesFloat64() {
    SplittableRandom r = new SplittableRandom(7);
    double worst = 0;
    for (int q = 0; q < 2_000_000; q++) {
      float v = (float) (q < 1_000_000 ? r.nextDouble(-12, 12) : r.nextDouble(-90, 90));
      double ref = 1.0 / (1.0 + Math.exp(-(double) v));
      double got = Simd.sigmoid(v);
      // relative where the value is a normal float, absolute (1e-38) below
      double err = Math.abs(got - ref) / Math.max(ref, 1e-31);
      worst = Math.max(worst, err);
    }
    assertTrue(worst <= 5e-7, "max relative error " + worst);
  }

  @Test
  void specialValues() {
    assertTrue(Float.isNaN(Simd.sigmoid(Float.NaN)), "NaN stays NaN");
    assertEquals(1f, Simd.sigmoid(Float.POSITIVE_INFINITY), 0f);
    assertEquals(0f, Simd.sigmoid(Float.NEGATIVE_INFINITY), 1e-38f);
    assertEquals(0.5f, Simd.sigmoid(0f), 0f);
    assertEquals(0.5f, Simd.sigmoid(-0f), 0f);
    assertEquals(1f, Simd.sigmoid(Float.MAX_VALUE), 0f);
    assertEquals(0f, Simd.sigmoid(-Float.MAX_VALUE), 1e-38f);
    for (float v : SPECIAL) {
      float s = Simd.sigmoid(v);
      assertTrue(Float.isNaN(v) || (s >= 0f && s <= 1f), v + " -> " + s);
    }
  }

  /** Vector lanes and the scalar tail, at every offset and length: the same bits as the scalar method. */
  @Test
  void inPlaceEqualsScalarAtEveryPositionBitForBit() {
    SplittableRandom r = new SplittableRandom(11);
    for (int n = 0; n <= 70; n++) {
      float[] x = new float[n];
      for (int j = 0; j < n; j++) {
        x[j] = (j * 7 + n) % 9 == 0 ? SPECIAL[(j + n) % SPECIAL.length] : (float) r.nextDouble(-30, 30);
      }
      float[] y = x.clone();
      Simd.sigmoidInPlace(y, n);
      for (int j = 0; j < n; j++) {
        assertEquals(Float.floatToIntBits(Simd.sigmoid(x[j])), Float.floatToIntBits(y[j]),
            "n=" + n + " j=" + j + " x=" + x[j]);
      }
    }
    // only the first n values change
    float[] z = {1f, 2f, 3f};
    Simd.sigmoidInPlace(z, 1);
    assertEquals(2f, z[1], 0f);
    assertEquals(3f, z[2], 0f);
  }

  @Test
  void scalarImplementationAgreesWithTheVectorOne() {
    SplittableRandom r = new SplittableRandom(5);
    float[] x = new float[1003];
    for (int j = 0; j < x.length; j++) {
      x[j] = j < SPECIAL.length ? SPECIAL[j] : (float) r.nextDouble(-100, 100);
    }
    float[] a = x.clone();
    float[] b = x.clone();
    Simd.create().sigmoid(a, a.length);
    new Simd.Scalar().sigmoid(b, b.length);
    for (int j = 0; j < x.length; j++) {
      assertEquals(Float.floatToIntBits(b[j]), Float.floatToIntBits(a[j]), "x=" + x[j]);
    }
  }
}
