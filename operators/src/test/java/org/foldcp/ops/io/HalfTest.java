package org.foldcp.ops.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class HalfTest {
  @Test
  void everyHalfRoundTripsExactly() {
    int nans = 0;
    for (int h = 0; h < 0x10000; h++) {
      float f = Half.toFloat((short) h);
      if (Float.isNaN(f)) {
        assertTrue(Float.isNaN(Half.toFloat(Half.fromFloat(f))), "NaN must stay NaN: " + Integer.toHexString(h));
        nans++;
      } else {
        assertEquals(h, Half.fromFloat(f) & 0xffff, "half 0x" + Integer.toHexString(h));
      }
    }
    assertEquals(2 * 1023, nans);
  }

  @Test
  void midpointsTieToEvenAndNeighboursRoundToNearest() {
    // Every pair of adjacent finite non-negative halves, subnormals included.
    for (int h = 0; h < 0x7bff; h++) {
      float lo = Half.toFloat((short) h);
      float hi = Half.toFloat((short) (h + 1));
      float mid = (float) (((double) lo + hi) / 2); // 12 significant bits: exact in float
      int even = (h & 1) == 0 ? h : h + 1;
      assertEquals(even, Half.fromFloat(mid) & 0xffff, "tie between 0x" + Integer.toHexString(h));
      assertEquals(h, Half.fromFloat(Math.nextDown(mid)) & 0xffff);
      assertEquals(h + 1, Half.fromFloat(Math.nextUp(mid)) & 0xffff);
      assertEquals((h + 1) | 0x8000, Half.fromFloat(-Math.nextUp(mid)) & 0xffff, "sign is kept");
    }
  }

  @Test
  void overflowUnderflowAndSpecials() {
    assertEquals(0x7bff, Half.fromFloat(65504f) & 0xffff);
    assertEquals(0x7bff, Half.fromFloat(Math.nextDown(65520f)) & 0xffff);
    assertEquals(0x7c00, Half.fromFloat(65520f) & 0xffff, "65520 ties to the even 2^16 = infinity");
    assertEquals(0x7c00, Half.fromFloat(1e9f) & 0xffff);
    assertEquals(0xfc00, Half.fromFloat(Float.NEGATIVE_INFINITY) & 0xffff);
    assertEquals(0x0000, Half.fromFloat(0x1.0p-25f) & 0xffff, "2^-25 ties to the even zero");
    assertEquals(0x0001, Half.fromFloat(Math.nextUp(0x1.0p-25f)) & 0xffff);
    assertEquals(0x8000, Half.fromFloat(-1e-30f) & 0xffff);
    assertEquals(0x0400, Half.fromFloat(0x1.0p-14f) & 0xffff, "smallest normal");
    assertEquals(0x3555, Half.fromFloat(1f / 3) & 0xffff);
    assertTrue(Float.isNaN(Half.toFloat(Half.fromFloat(Float.NaN))));
  }

  @Test
  void randomFloatsGoToTheNearestHalf() {
    SplittableRandom rng = new SplittableRandom(7);
    for (int n = 0; n < 200_000; n++) {
      float x = (float) ((rng.nextDouble() * 2 - 1) * Math.pow(2, rng.nextInt(-26, 16)));
      int h = Half.fromFloat(x) & 0xffff;
      double err = Math.abs(x - (double) Half.toFloat((short) h));
      int mag = h & 0x7fff;
      // No neighbouring half (one step up or down in magnitude) may be strictly closer.
      for (int d = -1; d <= 1; d += 2) {
        int other = mag + d;
        if (other < 0 || other > 0x7bff) {
          continue;
        }
        double oerr = Math.abs(x - (double) Half.toFloat((short) ((h & 0x8000) | other)));
        assertTrue(err <= oerr, x + " -> 0x" + Integer.toHexString(h) + " but 0x" + Integer.toHexString(other)
            + " is closer");
      }
    }
  }
}
