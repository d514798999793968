package org.foldcp.ops.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.ops.InvalidInputException;
import org.junit.jupiter.api.Test;

/** cp per complex: the smallest that fits and meets the target, cp = 1 where that holds. */
class CpChooserTest {
  // Round rates (not the H200's), so that each expected choice can be checked by hand:
  // 500 TFLOP/s, 1 ns per element, 100 GB/s links.
  private static final CostModel MODEL = new CostModel(new DeviceRates(500e12, 1e-9, 100e9, 1L << 40, "test"));
  private static final int[] CPS = {1, 2, 4, 8};

  @Test
  void smallComplexesStayAtCp1() {
    CpChooser c = new CpChooser(MODEL, CPS, 8L << 30, 1.0);
    CpChooser.Choice ch = c.choose("small", 1, 256, 128, 4);
    assertEquals(1, ch.cp());
    assertEquals("fits and meets the target", ch.reason());
  }

  @Test
  void aComplexTooLargeForOneGpuGoesToTheSmallestCpThatHoldsIt() {
    long cap = 16L << 30; // 10 * 3000^2 * 128 bytes = 10.7 GiB at cp = 1 fits; at N = 5000, 29.8 GiB does not
    CpChooser c = new CpChooser(MODEL, CPS, cap, Double.POSITIVE_INFINITY);
    assertEquals(1, c.choose("a", 1, 3000, 128, 4).cp());
    CpChooser.Choice big = c.choose("b", 1, 5000, 128, 4);
    assertEquals(2, big.cp());
    assertTrue(big.deviceBytesPerRank() <= cap);
  }

  @Test
  void aTimeTargetMovesAComplexToALargerCp() {
    double t1 = 4 * MODEL.layer(1, 2048, 128, 1).fusedSeconds();
    double t2 = 4 * MODEL.layer(1, 2048, 128, 2).fusedSeconds();
    assertTrue(t2 < t1);
    CpChooser c = new CpChooser(MODEL, CPS, 1L << 40, (t1 + t2) / 2);
    CpChooser.Choice ch = c.choose("x", 1, 2048, 128, 4);
    assertEquals(2, ch.cp());
    assertEquals(t2, ch.predictedSeconds(), 1e-12);
  }

  @Test
  void anUnreachableTargetGivesTheFastestCpThatFits() {
    CpChooser c = new CpChooser(MODEL, CPS, 1L << 40, 1e-9);
    CpChooser.Choice ch = c.choose("x", 1, 2048, 128, 4);
    double best = Double.MAX_VALUE;
    int bestCp = 0;
    for (int cp : CPS) {
      double t = MODEL.layer(1, 2048, 128, cp).fusedSeconds();
      if (t < best) {
        best = t;
        bestCp = cp;
      }
    }
    assertEquals(bestCp, ch.cp());
    assertTrue(ch.reason().startsWith("no cp meets the target"), ch.reason());
  }

  @Test
  void cpsThatDoNotDivideDAreSkipped() {
    CpChooser c = new CpChooser(MODEL, new int[] {1, 3, 4}, 10L * 1024 * 1024 * 100, Double.POSITIVE_INFINITY);
    // 10 * 1024^2 * 100 bytes at cp = 1 is just over the cap; cp = 3 does not divide D = 100; cp = 4 does
    assertEquals(4, c.choose("x", 1, 1100, 100, 1).cp());
  }

  @Test
  void aComplexThatFitsNowhereIsAnErrorNamingItAndTheCap() {
    CpChooser c = new CpChooser(MODEL, CPS, 1L << 30, 1.0);
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> c.choose("huge", 1, 16384, 128, 4));
    assertTrue(e.getMessage().contains("complex 'huge'") && e.getMessage().contains(Long.toString(1L << 30)),
        e.getMessage());
  }

  @Test
  void candidatesMustBeAscending() {
    assertThrows(InvalidInputException.class, () -> new CpChooser(MODEL, new int[] {2, 1}, 1L << 30, 1.0));
  }
}
