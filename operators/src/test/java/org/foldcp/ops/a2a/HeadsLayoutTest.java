package org.foldcp.ops.a2a;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.junit.jupiter.api.Test;

class HeadsLayoutTest {
  /** Worlds 2, 4, 6, 8 with H = 12 or 24, B in {1, 3}, odd S_local and Dh, plus the degenerate sizes. */
  static List<HeadsShape> shapes() {
    List<HeadsShape> shapes = new ArrayList<>();
    for (int w : new int[] {2, 4, 6, 8}) {
      for (int h : new int[] {12, 24}) {
        if (h % w != 0) {
          continue;
        }
        for (int b : new int[] {1, 3}) {
          shapes.add(new HeadsShape(b, 5, h, 7, w));
        }
      }
    }
    shapes.add(new HeadsShape(1, 1, 8, 1, 8));  // one head of one element per rank: runs of 1
    shapes.add(new HeadsShape(2, 3, 6, 5, 1));  // a team of one: the identity
    shapes.add(new HeadsShape(3, 1, 12, 3, 6)); // one position per rank
    return shapes;
  }

  /** Distinct values, so that any misplaced element shows. */
  private static Object[] distinctInputs(HeadsShape s) {
    Object[] in = new Object[s.world()];
    for (int r = 0; r < s.world(); r++) {
      int[] a = new int[s.elements()];
      for (int i = 0; i < a.length; i++) {
        a[i] = r * s.elements() + i;
      }
      in[r] = a;
    }
    return in;
  }

  private static Object[] applyLayout(HeadsShape s, HeadsDirection d, Object[] in, boolean normalise) {
    Object[] out = new Object[s.world()];
    for (int dst = 0; dst < s.world(); dst++) {
      int[] o = new int[s.elements()];
      Arrays.fill(o, -1);
      int written = 0;
      for (int src = 0; src < s.world(); src++) {
        BlockCopy c = HeadsLayout.block(s, d, src, dst);
        written += c.elements();
        (normalise ? c.normalised() : c).apply(in[src], o);
      }
      assertEquals(s.elements(), written, "elements written into rank " + dst + " for " + s);
      out[dst] = o;
    }
    return out;
  }

  @Test
  void scatterBlocksMatchTheAllGatherAndSliceReference() {
    for (HeadsShape s : shapes()) {
      Object[] in = distinctInputs(s);
      Object[] want = HeadsReference.scatter(s, in);
      for (boolean normalise : new boolean[] {false, true}) {
        Object[] got = applyLayout(s, HeadsDirection.SCATTER, in, normalise);
        for (int r = 0; r < s.world(); r++) {
          assertArrayEquals((int[]) want[r], (int[]) got[r], "rank " + r + " of " + s + ", normalised " + normalise);
        }
      }
    }
  }

  @Test
  void gatherBlocksMatchTheReferenceAndInvertTheScatter() {
    for (HeadsShape s : shapes()) {
      Object[] headsMajor = distinctInputs(s); // any [B, S, H/W, Dh] parts
      Object[] want = HeadsReference.gather(s, headsMajor);
      Object[] got = applyLayout(s, HeadsDirection.GATHER, headsMajor, true);
      Object[] original = distinctInputs(s);
      Object[] roundTrip = applyLayout(s, HeadsDirection.GATHER, applyLayout(s, HeadsDirection.SCATTER, original, true), true);
      for (int r = 0; r < s.world(); r++) {
        assertArrayEquals((int[]) want[r], (int[]) got[r], "rank " + r + " of " + s);
        assertArrayEquals((int[]) original[r], (int[]) roundTrip[r], "gather(scatter(x)) on rank " + r + " of " + s);
      }
    }
  }

  @Test
  void blocksFollowTheWrittenFormulas() {
    // B = 3, S_local = 5, H = 12, Dh = 7, W = 4: hl = 3, S = 20, run = hl*Dh = 21
    HeadsShape s = new HeadsShape(3, 5, 12, 7, 4);
    // scatter 1 -> 2: src ((b*5 + sl)*12 + 2*3)*7, dst ((b*20 + 1*5 + sl)*3)*7
    assertEquals(new BlockCopy(42, 105, 3, 5, 21, 420, 84, 420, 21),
        HeadsLayout.block(s, HeadsDirection.SCATTER, 1, 2));
    // gather 1 -> 2: src ((b*20 + 2*5 + sl)*3)*7, dst ((b*5 + sl)*12 + 1*3)*7
    assertEquals(new BlockCopy(210, 21, 3, 5, 21, 420, 21, 420, 84),
        HeadsLayout.block(s, HeadsDirection.GATHER, 1, 2));
  }

  @Test
  void normalisationMergesInnerRowsOnlyWhereBothSidesAreContiguous() {
    BlockCopy strided = HeadsLayout.block(new HeadsShape(3, 5, 12, 7, 4), HeadsDirection.SCATTER, 1, 2);
    assertSame(strided, strided.normalised()); // the source skips the other ranks' heads
    // a team of one: both sides are contiguous rows of H*Dh, one run of S_local*H*Dh per batch
    BlockCopy whole = HeadsLayout.block(new HeadsShape(3, 5, 12, 7, 1), HeadsDirection.SCATTER, 0, 0);
    assertEquals(new BlockCopy(0, 0, 3, 1, 420, 420, 420, 420, 420), whole.normalised());
    // packing to a contiguous slot merges wherever the source allows
    assertEquals(new BlockCopy(42, 315, 3, 5, 21, 420, 84, 105, 21), strided.toContiguous(315));
    BlockCopy gather = HeadsLayout.block(new HeadsShape(3, 5, 12, 7, 4), HeadsDirection.GATHER, 1, 2);
    assertEquals(new BlockCopy(210, 0, 3, 1, 105, 420, 105, 105, 105), gather.toContiguous(0));
  }

  @Test
  void headsThatDoNotSplitEvenlyAreRefusedNamingHAndW() {
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> new HeadsShape(2, 5, 12, 7, 5));
    assertTrue(e.getMessage().contains("H = 12"), e.getMessage());
    assertTrue(e.getMessage().contains("W = 5"), e.getMessage());
    assertTrue(e.getMessage().contains("divisible"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> new HeadsShape(1, 3, 6, 4, 4));
    assertTrue(e.getMessage().startsWith("H = 6: ") && e.getMessage().contains("W = 4"), e.getMessage());
  }

  @Test
  void otherBadShapesAreRefusedNamingTheValue() {
    assertTrue(assertThrows(InvalidInputException.class, () -> new HeadsShape(0, 5, 12, 7, 4))
        .getMessage().startsWith("B = 0: "));
    assertTrue(assertThrows(InvalidInputException.class, () -> new HeadsShape(1, 0, 12, 7, 4))
        .getMessage().startsWith("S_local = 0: "));
    assertTrue(assertThrows(InvalidInputException.class, () -> new HeadsShape(1, 5, 12, 0, 4))
        .getMessage().startsWith("Dh = 0: "));
    assertTrue(assertThrows(InvalidInputException.class, () -> new HeadsShape(1, 5, 12, 7, 0))
        .getMessage().startsWith("W = 0: "));
    assertTrue(assertThrows(InvalidInputException.class, () -> new HeadsShape(1024, 1024, 64, 128, 8))
        .getMessage().contains("= 8589934592: "));
    assertTrue(assertThrows(InvalidInputException.class,
        () -> HeadsLayout.block(new HeadsShape(1, 5, 12, 7, 4), HeadsDirection.SCATTER, 4, 0))
        .getMessage().startsWith("source rank = 4: "));
  }

  @Test
  void shapeHelpers() {
    HeadsShape s = new HeadsShape(3, 5, 24, 7, 8);
    assertEquals(40, s.seq());
    assertEquals(3, s.headsLocal());
    assertEquals(3 * 5 * 24 * 7, s.elements());
    assertEquals(3 * 40 * 3 * 7, s.elements());
    assertEquals(3 * 5 * 3 * 7, s.blockElements());
  }
}
