package org.foldcp.ops.tensor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class Bf16Test {

  private static float f(int bits) {
    return Float.intBitsToFloat(bits);
  }

  private static int bf(float x) {
    return Bf16.fromFloat(x) & 0xffff;
  }

  private static String hex(int v) {
    return "0x" + Integer.toHexString(v);
  }

  // ---------------------------------------------------------------- round to nearest even

  @ParameterizedTest(name = "float {0} -> bf16 {1}")
  @CsvSource({
      // exact ties (low 16 bits == 0x8000): even bf16 lsb stays, odd lsb rounds up to even
      "3f808000, 3f80", // 1.0 + half ulp: lsb 0 -> down to 1.0
      "3f818000, 3f82", // lsb 1 -> up
      "3f828000, 3f82", // lsb 0 -> down
      "40490000, 4049", // no rounding needed
      "bf808000, bf80", // negative tie, even
      "bf818000, bf82", // negative tie, odd -> away from zero, to even
      // just below / above a tie
      "3f807fff, 3f80",
      "3f808001, 3f81",
      // rounding up carries into the next exponent
      "3f7f8000, 3f80", // tie with odd lsb 0x3f7f -> 1.0
      "3fffffff, 4000", // nextDown(2.0) -> 2.0
      "3fff8000, 4000", // tie with odd lsb -> 2.0
      "3fff7fff, 3fff",
      "bfffffff, c000", // negative: -nextDown(2.0) -> -2.0
      "007f8000, 0080", // largest subnormal range carries into the smallest normal
      "007fffff, 0080",
  })
  void roundsToNearestEven(String in, String out) {
    int bits = Integer.parseUnsignedInt(in, 16);
    assertEquals(Integer.parseInt(out, 16), bf(f(bits)), "float bits 0x" + in);
  }

  @Test
  void everyTieAndItsNeighboursOverAllPositiveFiniteBf16() {
    // For every bf16 value h below the largest finite one, the float midpoint to h+1 is the
    // pattern (h << 16) | 0x8000; it must go to the even one of h and h+1, and its float
    // neighbours to the nearer one. Negative values mirror this with the sign kept.
    for (int h = 0; h <= 0x7f7f; h++) {
      int mid = (h << 16) | 0x8000;
      int even = (h & 1) == 0 ? h : h + 1;
      assertEquals(even, bf(f(mid)), "tie above " + hex(h));
      assertEquals(h, bf(f(mid - 1)), "just below the tie above " + hex(h));
      assertEquals(h + 1, bf(f(mid + 1)), "just above the tie above " + hex(h));
      assertEquals(even | 0x8000, bf(f(mid | 0x80000000)), "negative tie above " + hex(h));
      assertEquals(h | 0x8000, bf(f((mid - 1) | 0x80000000)));
      assertEquals((h + 1) | 0x8000, bf(f((mid + 1) | 0x80000000)));
    }
  }

  @Test
  void everyBf16ValueRoundTripsExactly() {
    int nans = 0;
    for (int h = 0; h < 0x10000; h++) {
      float x = Bf16.toFloat((short) h);
      assertEquals(h << 16, Float.floatToRawIntBits(x), "toFloat puts the bits on top: " + hex(h));
      if (Float.isNaN(x)) {
        nans++;
        assertTrue(Float.isNaN(Bf16.round(x)), "NaN must stay NaN: " + hex(h));
      } else {
        assertEquals(h, bf(x), "bf16 " + hex(h) + " must round-trip");
      }
    }
    assertEquals(2 * 127, nans, "bf16 has 2 * (2^7 - 1) NaN patterns");
  }

  // ---------------------------------------------------------------- overflow to infinity

  @Test
  void largestFiniteBf16() {
    float max = Bf16.toFloat((short) 0x7f7f);
    assertEquals(0x1.FEp127f, max);
    assertEquals(3.3895314e38f, max);
    assertEquals(0x7f7f, bf(max));
    assertEquals(0xff7f, bf(-max));
  }

  @Test
  void valuesAboveTheMidpointPastMaxOverflowToInfinityLikePyTorch() {
    // The midpoint between bf16 max (0x7f7f) and the next step (0x7f80, inf) is 0x7f7f8000.
    assertEquals(0x7f7f, bf(f(0x7f7f7fff)), "just below the midpoint stays finite");
    assertEquals(0x7f80, bf(f(0x7f7f8000)), "the midpoint ties to even = inf (0x7f7f is odd)");
    assertEquals(0x7f80, bf(f(0x7f7f8001)));
    assertEquals(0x7f80, bf(Float.MAX_VALUE), "torch.tensor(3.4028e38).bfloat16() == inf");
    assertEquals(0xff80, bf(-Float.MAX_VALUE));
    assertEquals(0x7f80, bf(3.4e38f), "3.4e38 is above the midpoint 3.396e38");
    assertEquals(Float.POSITIVE_INFINITY, Bf16.round(3.4e38f));
    assertEquals(Float.NEGATIVE_INFINITY, Bf16.round(-3.4e38f));
    assertEquals(0x7f7f, bf(3.39e38f), "3.39e38 is below the midpoint and rounds to max");
  }

  // ---------------------------------------------------------------- special values

  @Test
  void zerosKeepTheirSign() {
    assertEquals(0x0000, bf(0.0f));
    assertEquals(0x8000, bf(-0.0f));
    assertEquals(0, Float.floatToRawIntBits(Bf16.toFloat((short) 0x0000)));
    assertEquals(0x80000000, Float.floatToRawIntBits(Bf16.toFloat((short) 0x8000)));
    assertEquals(0x80000000, Float.floatToRawIntBits(Bf16.round(-0.0f)));
  }

  @Test
  void infinitiesAreExact() {
    assertEquals(0x7f80, bf(Float.POSITIVE_INFINITY));
    assertEquals(0xff80, bf(Float.NEGATIVE_INFINITY));
    assertEquals(Float.POSITIVE_INFINITY, Bf16.toFloat((short) 0x7f80));
    assertEquals(Float.NEGATIVE_INFINITY, Bf16.toFloat((short) 0xff80));
  }

  @ParameterizedTest(name = "NaN bits {0}")
  @ValueSource(ints = {
      0x7fc00000, // canonical quiet NaN
      0xffc00000, // negative quiet NaN
      0x7f800001, // signalling NaN, payload only in the low 16 bits (would round to inf if treated as a number)
      0xff800001, // negative signalling NaN, low payload
      0x7f80ffff, // low payload all ones: + 0x7fff would carry into the exponent
      0x7fa00000, // signalling NaN, high payload
      0xffbfffff, // negative signalling NaN, every payload bit below the quiet bit
      0x7fffffff, // all-ones quiet NaN: + 0x7fff would overflow into the sign bit
      0xffffffff,
  })
  void nanStaysNanWithItsSign(int bits) {
    float x = f(bits);
    int raw = Float.floatToRawIntBits(x);
    int h = bf(x);
    float back = Bf16.toFloat((short) h);
    assertTrue(Float.isNaN(back), "NaN " + hex(bits) + " became " + hex(h) + " = " + back);
    assertEquals(0x7f80, h & 0x7f80, "exponent all ones: " + hex(h));
    assertTrue((h & 0x0040) != 0, "the quiet bit is set: " + hex(h));
    assertEquals(raw >>> 31, h >>> 15, "sign of NaN " + hex(bits) + " is kept: " + hex(h));
  }

  @Test
  void subnormals() {
    // bf16 subnormals are float subnormals with zero low 16 bits; the smallest is 2^-133.
    assertEquals(0x1.0p-133f, Bf16.toFloat((short) 0x0001));
    assertEquals(-0x1.0p-133f, Bf16.toFloat((short) 0x8001));
    assertEquals(0x0001, bf(0x1.0p-133f));
    assertEquals(0x0000, bf(Float.MIN_VALUE), "2^-149 is far below half the smallest bf16 subnormal");
    assertEquals(0x8000, bf(-Float.MIN_VALUE), "and keeps its sign as -0");
    assertEquals(0x0000, bf(f(0x00008000)), "tie with even lsb 0 -> +0");
    assertEquals(0x0002, bf(f(0x00018000)), "tie with odd lsb -> up to even");
    assertEquals(0x0001, bf(f(0x00008001)), "just above half the smallest subnormal");
    assertEquals(0x007f, bf(f(0x007f0000)), "largest bf16 subnormal is exact");
    assertEquals(0x0080, bf(Float.MIN_NORMAL));
  }

  @Test
  void roundEqualsToFloatOfFromFloat() {
    SplittableRandom rng = new SplittableRandom(11);
    for (int k = 0; k < 10_000; k++) {
      float x = f(rng.nextInt());
      float r = Bf16.round(x);
      float e = Bf16.toFloat(Bf16.fromFloat(x));
      if (Float.isNaN(x)) {
        assertTrue(Float.isNaN(r) && Float.isNaN(e));
      } else {
        assertEquals(Float.floatToRawIntBits(e), Float.floatToRawIntBits(r), "x = " + x);
      }
    }
  }

  // ---------------------------------------------------------------- accuracy

  @Test
  void relativeErrorOfRandomNormalFloatsIsAtMostUnitRoundoff() {
    // bf16 keeps 8 significant bits, so round-to-nearest has relative error <= 2^-8 (unit
    // roundoff), and the absolute error is at most half a bf16 ulp (2^16 float ulps / 2).
    SplittableRandom rng = new SplittableRandom(20240611L);
    double worst = 0;
    for (int k = 0; k < 200_000; k++) {
      int exp = 1 + rng.nextInt(253); // biased exponent 1..253: normal, and no overflow to inf
      int bits = (rng.nextBoolean() ? 0x80000000 : 0) | (exp << 23) | rng.nextInt(1 << 23);
      float x = f(bits);
      float r = Bf16.toFloat(Bf16.fromFloat(x));
      double absErr = Math.abs((double) r - x);
      double halfUlp = Math.ulp(x) * 32768.0; // half of 2^16 float ulps
      assertTrue(absErr <= halfUlp, "x = " + x + " -> " + r);
      double rel = absErr / Math.abs(x);
      assertTrue(rel <= 0x1.0p-8, "x = " + x + " -> " + r + ": relative error " + rel);
      assertEquals(Math.signum(x), Math.signum(r));
      worst = Math.max(worst, rel);
    }
    assertTrue(worst > 0x1.0p-9, "the bound 2^-8 is tight: worst seen " + worst);
  }

  @Test
  void worstCaseRelativeErrorExceedsTwoToTheMinusNine() {
    // 1 + 2^-8 - 2^-23 lies just below the midpoint between 1 and 1 + 2^-7 and rounds to 1:
    // relative error ~ 2^-8, so a bound of 2^-9 would be wrong for bf16.
    float x = 1f + 0x1.0p-8f - 0x1.0p-23f;
    assertEquals(1f, Bf16.round(x));
    double rel = Math.abs(Bf16.round(x) - (double) x) / x;
    assertTrue(rel > 0x1.0p-9 && rel <= 0x1.0p-8, "relative error " + rel);
  }

  // ---------------------------------------------------------------- IEEE half -> float

  @ParameterizedTest(name = "half {0} -> {1}")
  @CsvSource({
      "3c00, 1.0",
      "bc00, -1.0",
      "c000, -2.0",
      "4000, 2.0",
      "3800, 0.5",
      "7bff, 65504.0",
      "fbff, -65504.0",
      "0400, 6.103515625E-5", // smallest normal 2^-14
      "0001, 5.9604644775390625E-8", // smallest subnormal 2^-24
      "8001, -5.9604644775390625E-8",
      "03ff, 6.097555160522461E-5", // largest subnormal 1023 * 2^-24
      "3555, 0.333251953125",
      "7c00, Infinity",
      "fc00, -Infinity",
  })
  void halfToFloatKnownValues(String half, double expected) {
    short h = (short) Integer.parseInt(half, 16);
    assertEquals((float) expected, Bf16.halfToFloat(h), "half 0x" + half);
  }

  @Test
  void halfSmallestSubnormalIsTwoToTheMinus24() {
    assertEquals(0x1.0p-24f, Bf16.halfToFloat((short) 0x0001));
  }

  @Test
  void halfZerosKeepTheirSign() {
    assertEquals(0, Float.floatToRawIntBits(Bf16.halfToFloat((short) 0x0000)));
    assertEquals(0x80000000, Float.floatToRawIntBits(Bf16.halfToFloat((short) 0x8000)));
  }

  @ParameterizedTest(name = "half NaN {0}")
  @ValueSource(ints = {0x7e00, 0xfe00, 0x7c01, 0x7dff, 0xffff})
  void halfNanIsNan(int h) {
    float x = Bf16.halfToFloat((short) h);
    assertTrue(Float.isNaN(x), "half " + hex(h) + " -> " + x);
    assertEquals(h >>> 15, Float.floatToRawIntBits(x) >>> 31, "sign kept");
  }

  @Test
  void everyFiniteHalfMatchesItsDefinition() {
    for (int h = 0; h < 0x10000; h++) {
      int exp = (h >>> 10) & 0x1f;
      if (exp == 0x1f) {
        continue;
      }
      int mant = h & 0x3ff;
      double v = exp == 0 ? mant * 0x1.0p-24 : (1 + mant / 1024.0) * Math.pow(2, exp - 15);
      if ((h & 0x8000) != 0) {
        v = -v;
      }
      float got = Bf16.halfToFloat((short) h);
      assertEquals(v, got, 0.0, "half " + hex(h));
      assertEquals(h >>> 15, Float.floatToRawIntBits(got) >>> 31, "sign of half " + hex(h));
    }
  }
}
