package org.foldcp.ops.tensor;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.ops.NonFiniteInputException;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.junit.jupiter.api.Test;

/** NaN and Inf in the input fail before compute, exactly (no false positives), unless allowed. */
class NonFiniteTest {
  private static final int D = 8;

  /** A random tensor with NaN at (0, 1, 2, 3) and +Inf at (0, 4, 0, 5). */
  static PairTensor poisoned() {
    PairTensor x = PairTensor.random(1, 6, D, 3, 0.0);
    x.set(0, 1, 2, 3, Float.NaN);
    x.set(0, 4, 0, 5, Float.POSITIVE_INFINITY);
    return x;
  }

  @Test
  void cpuBackendRejectsNaNAndInfNamingTheFirstPositionAndTheCount() {
    LayerStack stack = LayerStack.randomAlternating(2, D, 5, true);
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      NonFiniteInputException e = assertThrows(NonFiniteInputException.class, () -> cpu.forward(poisoned(), stack));
      assertEquals(2, e.count());
      assertTrue(e.getMessage().contains("the first at (b, i, j, c) = (0, 1, 2, 3), NaN)"), e.getMessage());
      assertTrue(e.getMessage().startsWith("non-finite values in the pair tensor = 2 (NaN or Inf;"), e.getMessage());
      assertTrue(e.getMessage().contains("allowNonFinite"), e.getMessage());
      assertThrows(NonFiniteInputException.class, () -> cpu.forward(poisoned(), stack.get(0)));
    }
  }

  @Test
  void allowedNonFiniteInputRuns() {
    LayerStack stack = LayerStack.randomAlternating(2, D, 5, true);
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      PairTensor y = cpu.forward(poisoned(), stack, true);
      assertEquals(6, y.n());
      assertTrue(Float.isNaN(y.get(0, 1, 2, 3)), "a NaN input spreads");
    }
  }

  @Test
  void everyFiniteBf16PassesAndEveryNonFiniteOneIsCounted() {
    // All 65536 bit patterns, D = 256 channels by 256 columns: row i holds the patterns i*256 .. i*256+255.
    PairTensor finite = PairTensor.zeros(1, 256, 1, 256);
    int nonFinite = 0;
    for (int p = 0; p < 65536; p++) {
      short bits = (short) p;
      boolean expect = Float.isNaN(Bf16.toFloat(bits)) || Float.isInfinite(Bf16.toFloat(bits));
      assertEquals(expect, NonFinite.is(bits), Integer.toHexString(p));
      if (expect) {
        nonFinite++;
      } else {
        finite.setBits(0, p >>> 8, 0, p & 0xff, bits);
      }
    }
    assertEquals(256, nonFinite, "exponent 0xFF, either sign, any of the 128 mantissas");
    assertDoesNotThrow(() -> NonFinite.check(finite, "every finite bf16"));
    PairTensor largest = PairTensor.zeros(1, 2, 2, 2);
    largest.setBits(0, 1, 1, 1, (short) 0x7F7F); // the largest finite bf16
    largest.setBits(0, 0, 1, 0, (short) 0xFF7F); // and its negative
    assertDoesNotThrow(() -> NonFinite.check(largest, "largest finite"));

    PairTensor all = PairTensor.zeros(1, 256, 1, 256);
    for (int p = 0; p < 65536; p++) {
      all.setBits(0, p >>> 8, 0, p & 0xff, (short) p);
    }
    NonFiniteInputException e = assertThrows(NonFiniteInputException.class, () -> NonFinite.check(all, "all"));
    assertEquals(256, e.count());
    // 0x7F80 (+Inf) is the first: row 0x7F, channel 0x80
    assertEquals(java.util.List.of(0, 0x7F, 0, 0x80), java.util.Arrays.stream(e.first()).boxed().toList());
  }

  @Test
  void restatingMovesThePositionToTheComplexAndNamesTheNewHint() {
    NonFiniteInputException e = assertThrows(NonFiniteInputException.class,
        () -> NonFinite.check(poisoned(), "the pair tensor"));
    NonFiniteInputException r = e.restated("the tile of complex 'x'", 10, 20, "set key = true");
    assertEquals(java.util.List.of(0, 11, 22, 3), java.util.Arrays.stream(r.first()).boxed().toList());
    assertTrue(r.getMessage().startsWith("non-finite values in the tile of complex 'x' = 2"), r.getMessage());
    assertTrue(r.getMessage().endsWith("fix the input, or set key = true"), r.getMessage());
  }
}
