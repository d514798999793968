package org.foldcp.ops.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.SplittableRandom;
import org.foldcp.ops.InvalidInputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class PairTensorTest {

  /** Asserts an InvalidInputException whose message contains every one of {@code parts}. */
  static InvalidInputException assertRejected(Executable call, String... parts) {
    InvalidInputException e = assertThrows(InvalidInputException.class, call);
    String msg = e.getMessage();
    for (String p : parts) {
      assertTrue(msg.contains(p), "message \"" + msg + "\" should contain \"" + p + "\"");
    }
    return e;
  }

  /** Values exactly representable in bf16: small integers and halves, with signs. */
  private static float[] exactValues(int count, long seed) {
    SplittableRandom rng = new SplittableRandom(seed);
    float[] v = new float[count];
    for (int q = 0; q < count; q++) {
      v[q] = (rng.nextInt(255) - 127) * 0.25f; // |k| <= 127, 7 significant bits: exact in bf16
    }
    return v;
  }

  private static int index(int b, int i, int j, int c, int n, int d) {
    return ((b * n + i) * n + j) * d + c;
  }

  // ---------------------------------------------------------------- construction and access

  @Test
  void zerosHasShapeAndNoMask() {
    PairTensor t = PairTensor.zeros(2, 3, 4);
    assertEquals(2, t.batch());
    assertEquals(3, t.rows());
    assertEquals(3, t.cols());
    assertEquals(4, t.dim());
    assertEquals(3, t.n());
    assertTrue(t.isSquare());
    assertEquals(2L * 3 * 3 * 4, t.elementCount());
    assertEquals("(2, 3, 3, 4)", t.shapeString());
    assertFalse(t.hasMask());
    assertNull(t.maskRow(1, 2));
    assertNull(t.maskCopy());
    assertTrue(t.valid(1, 2, 2));
    for (float v : t.toFloats()) {
      assertEquals(0, Float.floatToRawIntBits(v));
    }
    assertEquals(3 * 4, t.row(1, 2).length);
  }

  @Test
  void rectangularZeros() {
    PairTensor t = PairTensor.zeros(1, 2, 5, 3);
    assertEquals(2, t.rows());
    assertEquals(5, t.cols());
    assertFalse(t.isSquare());
    assertEquals(5 * 3, t.row(0, 1).length);
    assertEquals("PairTensor(1, 2, 5, 3)", t.toString());
  }

  @Test
  void fromFloatsToFloatsRoundTripsExactValues() {
    int b = 2;
    int n = 5;
    int d = 3;
    float[] v = exactValues(b * n * n * d, 1);
    PairTensor t = PairTensor.fromFloats(v, b, n, d);
    assertEquals(n, t.n());
    assertArrayEquals(v, t.toFloats());
    for (int bb = 0; bb < b; bb++) {
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
          for (int c = 0; c < d; c++) {
            float x = v[index(bb, i, j, c, n, d)];
            assertEquals(x, t.get(bb, i, j, c), "layout [B][N][N][D] at " + bb + "," + i + "," + j + "," + c);
            assertEquals(Bf16.fromFloat(x), t.getBits(bb, i, j, c));
            assertEquals(Bf16.fromFloat(x), t.row(bb, i)[j * d + c], "row layout [j][c]");
          }
        }
      }
    }
  }

  @Test
  void fromFloatsRoundsToBf16() {
    float[] v = {1f + 0x1.0p-8f, 1f + 0x1.0p-8f + 0x1.0p-20f, 3.4e38f, -0.0f};
    PairTensor t = PairTensor.fromFloats(v, 1, 1, 4);
    assertArrayEquals(new float[] {1f, 1f + 0x1.0p-7f, Float.POSITIVE_INFINITY, -0.0f}, t.toFloats());
    assertEquals(0x80000000, Float.floatToRawIntBits(t.get(0, 0, 0, 3)));
  }

  @Test
  void wrapSharesStorageAndKeepsTheMask() {
    short[][] data = new short[2 * 2][3 * 2];
    data[3][5] = Bf16.fromFloat(1.5f);
    byte[][] mask = {{1, 1, 0}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}};
    PairTensor t = PairTensor.wrap(2, 2, 3, 2, data, mask);
    assertEquals(1.5f, t.get(1, 1, 2, 1));
    assertSame(data[2], t.row(1, 0), "wrap does not copy");
    t.set(0, 0, 0, 0, 2.0f);
    assertEquals(Bf16.fromFloat(2.0f), data[0][0]);
    assertTrue(t.hasMask());
    assertFalse(t.valid(0, 0, 2));
    assertFalse(t.valid(1, 0, 0));
    assertTrue(t.valid(1, 0, 1));
    assertArrayEquals(new byte[] {0, 1, 1}, t.maskRow(1, 0));
    PairTensor unmasked = PairTensor.wrap(2, 2, 3, 2, data, null);
    assertFalse(unmasked.hasMask());
  }

  @Test
  void getSetAndBits() {
    PairTensor t = PairTensor.zeros(2, 3, 3, 2);
    t.set(1, 2, 0, 1, -3.25f);
    assertEquals(-3.25f, t.get(1, 2, 0, 1));
    assertEquals(0, t.get(1, 2, 0, 0));
    assertEquals(0, t.get(0, 2, 0, 1), "other batch untouched");
    t.set(0, 0, 1, 0, 1f + 0x1.0p-8f); // tie -> even = 1.0
    assertEquals(1f, t.get(0, 0, 1, 0));
    t.setBits(0, 1, 2, 1, (short) 0x7fc0);
    assertTrue(Float.isNaN(t.get(0, 1, 2, 1)));
    assertEquals((short) 0x7fc0, t.getBits(0, 1, 2, 1));
    t.set(0, 1, 1, 1, Float.NaN);
    assertTrue(Float.isNaN(t.get(0, 1, 1, 1)));
  }

  @Test
  void setValidCreatesAnAllValidMaskFirst() {
    PairTensor t = PairTensor.zeros(2, 3, 1);
    t.setValid(1, 2, 0, false);
    assertTrue(t.hasMask());
    int masked = 0;
    for (int b = 0; b < 2; b++) {
      for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
          if (!t.valid(b, i, j)) {
            masked++;
          }
        }
      }
    }
    assertEquals(1, masked);
    assertFalse(t.valid(1, 2, 0));
    t.setValid(1, 2, 0, true);
    assertTrue(t.valid(1, 2, 0));
    t.setMask(null);
    assertFalse(t.hasMask());
  }

  // ---------------------------------------------------------------- copies

  @Test
  void copyIsIndependentOfTheOriginal() {
    PairTensor t = PairTensor.random(2, 4, 3, 5, 0.3);
    PairTensor before = t.copy();
    assertTrue(before.sameAs(t));
    PairTensor c = t.copy();
    assertNotSame(t.row(0, 0), c.row(0, 0));
    c.set(1, 3, 2, 1, 100f);
    c.row(0, 0)[0] = (short) 0x4000;
    c.setValid(0, 1, 1, !t.valid(0, 1, 1));
    c.maskRow(1, 0)[0] = (byte) (1 - c.maskRow(1, 0)[0]);
    assertTrue(t.sameAs(before), "mutating the copy must not change the original");
    assertFalse(c.sameAs(t));
  }

  @Test
  void copyOfUnmaskedStaysUnmaskedAndIndependent() {
    PairTensor t = PairTensor.random(1, 3, 2, 9, 0);
    assertFalse(t.hasMask());
    PairTensor c = t.copy();
    assertFalse(c.hasMask());
    c.setValid(0, 0, 0, false);
    assertFalse(t.hasMask(), "setting a mask on the copy must not give the original one");
    assertTrue(t.valid(0, 0, 0));
  }

  @Test
  void maskCopyIsADeepCopy() {
    PairTensor t = PairTensor.random(2, 4, 1, 3, 0.5);
    byte[][] m = t.maskCopy();
    assertNotNull(m);
    assertEquals(2 * 4, m.length);
    for (int b = 0; b < 2; b++) {
      for (int i = 0; i < 4; i++) {
        assertArrayEquals(t.maskRow(b, i), m[b * 4 + i]);
        assertNotSame(t.maskRow(b, i), m[b * 4 + i]);
      }
    }
    boolean was = t.valid(0, 0, 0);
    m[0][0] = (byte) (was ? 0 : 1);
    assertEquals(was, t.valid(0, 0, 0), "changing the returned copy must not change the tensor");
    // and it is accepted back as a mask
    PairTensor u = t.copy();
    u.setMask(m);
    assertEquals(!was, u.valid(0, 0, 0));
  }

  // ---------------------------------------------------------------- sameAs

  @Test
  void sameAsComparesBitsAndEffectiveMasks() {
    PairTensor a = PairTensor.random(1, 3, 2, 4, 0);
    PairTensor b = a.copy();
    assertTrue(a.sameAs(b));
    // an explicit all-valid mask is the same as no mask
    b.setValid(0, 1, 1, true);
    assertTrue(b.hasMask());
    assertTrue(a.sameAs(b));
    assertTrue(b.sameAs(a));
    // one masked position differs
    b.setValid(0, 1, 1, false);
    assertFalse(a.sameAs(b));
    assertFalse(b.sameAs(a));
    // equal masks on both sides
    a.setValid(0, 1, 1, false);
    assertTrue(a.sameAs(b));
    // masked positions still compare their values
    b.set(0, 1, 1, 0, b.get(0, 1, 1, 0) + 1);
    assertFalse(a.sameAs(b));
  }

  @Test
  void sameAsIsBitwise() {
    PairTensor a = PairTensor.zeros(1, 1, 1);
    PairTensor b = PairTensor.zeros(1, 1, 1);
    b.set(0, 0, 0, 0, -0.0f);
    assertFalse(a.sameAs(b), "+0 and -0 differ in bits");
    a.setBits(0, 0, 0, 0, (short) 0x7fc0);
    b.setBits(0, 0, 0, 0, (short) 0x7fc0);
    assertTrue(a.sameAs(b), "identical NaN bits are the same");
  }

  @Test
  void sameAsRequiresTheSameShape() {
    assertFalse(PairTensor.zeros(1, 2, 3).sameAs(PairTensor.zeros(2, 2, 3)));
    assertFalse(PairTensor.zeros(1, 2, 3).sameAs(PairTensor.zeros(1, 3, 3)));
    assertFalse(PairTensor.zeros(1, 2, 3).sameAs(PairTensor.zeros(1, 2, 4)));
    assertFalse(PairTensor.zeros(1, 2, 3, 3).sameAs(PairTensor.zeros(1, 3, 2, 3)));
    assertTrue(PairTensor.zeros(1, 2, 3, 3).sameAs(PairTensor.zeros(1, 2, 3, 3)));
  }

  // ---------------------------------------------------------------- random

  @Test
  void randomIsDeterministicInItsSeed() {
    PairTensor a = PairTensor.random(2, 6, 4, 42, 0.3);
    PairTensor b = PairTensor.random(2, 6, 4, 42, 0.3);
    assertTrue(a.sameAs(b));
    assertArrayEquals(a.maskCopy(), b.maskCopy());
    assertFalse(a.sameAs(PairTensor.random(2, 6, 4, 43, 0.3)));
    PairTensor plain = PairTensor.random(2, 6, 4, 42, 0);
    assertFalse(plain.hasMask());
    assertArrayEquals(a.toFloats(), plain.toFloats(), "the mask is drawn after the values");
  }

  @Test
  void randomMasksRoughlyTheRequestedFraction() {
    for (long seed = 1; seed <= 5; seed++) {
      PairTensor t = PairTensor.random(1, 32, 1, seed, 0.3);
      int masked = 0;
      for (int i = 0; i < 32; i++) {
        for (int j = 0; j < 32; j++) {
          if (!t.valid(0, i, j)) {
            masked++;
          }
        }
      }
      double frac = masked / 1024.0;
      assertEquals(0.3, frac, 0.05, "seed " + seed);
    }
  }

  @Test
  void randomValuesAreStandardNormalInBf16() {
    PairTensor t = PairTensor.random(1, 32, 16, 7, 0);
    float[] v = t.toFloats();
    double sum = 0;
    double sq = 0;
    for (float x : v) {
      assertTrue(Float.isFinite(x));
      assertEquals(x, Bf16.round(x), "values are bf16");
      sum += x;
      sq += (double) x * x;
    }
    double mean = sum / v.length;
    double var = sq / v.length - mean * mean;
    assertEquals(0, mean, 0.05);
    assertEquals(1, var, 0.08);
  }

  @Test
  void gaussianIsFinite() {
    SplittableRandom rng = new SplittableRandom(0);
    for (int k = 0; k < 100_000; k++) {
      assertTrue(Double.isFinite(PairTensor.gaussian(rng)));
    }
  }

  // ---------------------------------------------------------------- window and paste

  @Test
  void windowCopiesValuesAndMask() {
    PairTensor t = PairTensor.random(2, 8, 3, 11, 0.3);
    PairTensor w = t.window(2, 3, 4, 5);
    assertEquals("(2, 4, 5, 3)", w.shapeString());
    assertTrue(w.hasMask());
    for (int b = 0; b < 2; b++) {
      for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 5; j++) {
          assertEquals(t.valid(b, 2 + i, 3 + j), w.valid(b, i, j));
          for (int c = 0; c < 3; c++) {
            assertEquals(t.getBits(b, 2 + i, 3 + j, c), w.getBits(b, i, j, c));
          }
        }
      }
    }
    // a window is a copy
    w.set(0, 0, 0, 0, 99f);
    w.setValid(1, 0, 0, !w.valid(1, 0, 0));
    assertTrue(t.window(2, 3, 4, 5).sameAs(PairTensor.random(2, 8, 3, 11, 0.3).window(2, 3, 4, 5)));
    // the whole tensor as a window
    assertTrue(t.window(0, 0, 8, 8).sameAs(t));
    assertFalse(PairTensor.zeros(1, 4, 2).window(1, 1, 2, 2).hasMask());
  }

  @Test
  void windowsPastedBackRebuildTheTensor() {
    PairTensor t = PairTensor.random(2, 7, 3, 5, 0.3);
    PairTensor rebuilt = PairTensor.zeros(2, 7, 3);
    int[] cuts = {0, 3, 5, 7}; // uneven tiles
    for (int a = 0; a + 1 < cuts.length; a++) {
      for (int c = 0; c + 1 < cuts.length; c++) {
        PairTensor tile = t.window(cuts[a], cuts[c], cuts[a + 1] - cuts[a], cuts[c + 1] - cuts[c]);
        rebuilt.paste(tile, cuts[a], cuts[c]);
      }
    }
    assertTrue(rebuilt.hasMask());
    assertTrue(rebuilt.sameAs(t));
    assertArrayEquals(t.maskCopy(), rebuilt.maskCopy());
  }

  @Test
  void pasteWritesOnlyItsRegion() {
    PairTensor target = PairTensor.random(1, 6, 2, 1, 0);
    PairTensor before = target.copy();
    PairTensor block = PairTensor.random(1, 2, 2, 99, 0);
    target.paste(block, 3, 1); // rows 3..4, cols 1..2
    for (int i = 0; i < 6; i++) {
      for (int j = 0; j < 6; j++) {
        for (int c = 0; c < 2; c++) {
          boolean inside = i >= 3 && i < 5 && j >= 1 && j < 3;
          short want = inside ? block.getBits(0, i - 3, j - 1, c) : before.getBits(0, i, j, c);
          assertEquals(want, target.getBits(0, i, j, c), "(" + i + ", " + j + ", " + c + ")");
        }
      }
    }
    assertFalse(target.hasMask(), "pasting an unmasked block into an unmasked tensor adds no mask");
  }

  @Test
  void pasteTakesTheBlocksEffectiveMask() {
    // masked block into an unmasked target: its masked positions appear
    PairTensor target = PairTensor.zeros(1, 4, 1);
    PairTensor block = PairTensor.zeros(1, 2, 1);
    block.setValid(0, 1, 0, false);
    target.paste(block, 1, 2);
    assertTrue(target.hasMask());
    assertFalse(target.valid(0, 2, 2));
    assertTrue(target.valid(0, 1, 2));
    assertTrue(target.valid(0, 0, 0));

    // unmasked block into a fully masked region: the region becomes valid, the rest keeps its mask
    PairTensor masked = PairTensor.zeros(1, 4, 1);
    for (int i = 0; i < 4; i++) {
      for (int j = 0; j < 4; j++) {
        masked.setValid(0, i, j, false);
      }
    }
    masked.paste(PairTensor.zeros(1, 2, 1), 0, 0);
    for (int i = 0; i < 4; i++) {
      for (int j = 0; j < 4; j++) {
        assertEquals(i < 2 && j < 2, masked.valid(0, i, j), "(" + i + ", " + j + ")");
      }
    }
  }

  @Test
  void serializationKeepsValuesAndMask() throws Exception {
    PairTensor t = PairTensor.random(2, 5, 3, 8, 0.3);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(t);
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      PairTensor back = (PairTensor) in.readObject();
      assertTrue(back.sameAs(t));
      assertArrayEquals(t.maskCopy(), back.maskCopy());
    }
  }

  // ---------------------------------------------------------------- bad inputs

  @Test
  void rejectsNonPositiveShape() {
    assertRejected(() -> PairTensor.zeros(0, 4, 4), "B = 0", ">= 1");
    assertRejected(() -> PairTensor.zeros(-2, 4, 4), "B = -2", "batch size must be >= 1");
    assertRejected(() -> PairTensor.zeros(1, 0, 4), "N (rows) = 0", "number of tokens must be >= 1");
    assertRejected(() -> PairTensor.zeros(1, 3, 0, 4), "N (cols) = 0", "number of tokens must be >= 1");
    assertRejected(() -> PairTensor.zeros(1, 4, 0), "D = 0", "pair channel count must be >= 1");
    assertRejected(() -> PairTensor.zeros(1, 4, -7), "D = -7", ">= 1");
    assertRejected(() -> PairTensor.random(1, 0, 4, 1, 0), "N (rows) = 0", ">= 1");
    assertRejected(() -> PairTensor.fromFloats(new float[0], 1, 0, 4), "N (rows) = 0", ">= 1");
    assertRejected(() -> PairTensor.wrap(0, 1, 1, 1, new short[0][], null), "B = 0", ">= 1");
  }

  @Test
  void rejectsShapesBeyondJavaArrays() {
    assertRejected(() -> PairTensor.zeros(1, 1, Integer.MAX_VALUE, 2),
        "shape = (1, 1, 2147483647, 2)", "must each fit in a Java array");
    assertRejected(() -> PairTensor.zeros(65536, 65536, 1, 1),
        "shape = (65536, 65536, 1, 1)", "fit in a Java array");
  }

  @Test
  void fromFloatsRejectsAWrongLength() {
    assertRejected(() -> PairTensor.fromFloats(new float[7], 1, 2, 2),
        "float value count = 7", "B*N*N*D = 8", "(1, 2, 2)");
    assertRejected(() -> PairTensor.fromFloats(new float[9], 1, 2, 2), "= 9", "B*N*N*D");
  }

  @Test
  void wrapRejectsWrongRows() {
    short[][] shortRow = {new short[6], new short[5]};
    assertRejected(() -> PairTensor.wrap(1, 2, 3, 2, shortRow, null),
        "pair row 1 length = 5", "must equal cols * D = 3 * 2");
    short[][] nullRow = {new short[6], null};
    assertRejected(() -> PairTensor.wrap(1, 2, 3, 2, nullRow, null), "pair row 1 length = null", "cols * D");
    short[][] tooFew = {new short[6]};
    assertRejected(() -> PairTensor.wrap(1, 2, 3, 2, tooFew, null),
        "pair row count = 1", "must equal B * rows = 1 * 2");
  }

  @Test
  void rejectsBadMasks() {
    short[][] data = {new short[3], new short[3], new short[3], new short[3]};
    // B = 2, rows = 2, cols = 3, D = 1
    assertRejected(() -> PairTensor.wrap(2, 2, 3, 1, data, new byte[3][3]),
        "mask row count = 3", "(B, rows, cols) = (2, 2, 3)");
    byte[][] shortRow = {{1, 1, 1}, {1, 1}, {1, 1, 1}, {1, 1, 1}};
    assertRejected(() -> PairTensor.wrap(2, 2, 3, 1, data, shortRow),
        "mask row 1 length = 2", "must equal cols = 3");
    byte[][] nullRow = {{1, 1, 1}, null, {1, 1, 1}, {1, 1, 1}};
    assertRejected(() -> PairTensor.wrap(2, 2, 3, 1, data, nullRow), "mask row 1 length = null", "cols = 3");
    byte[][] two = {{1, 1, 1}, {1, 0, 2}, {1, 1, 1}, {1, 1, 1}};
    assertRejected(() -> PairTensor.wrap(2, 2, 3, 1, data, two),
        "mask[0, 1, 2] = 2", "0 (masked) or 1 (valid)");
    byte[][] laterBatch = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {7, 1, 1}};
    assertRejected(() -> PairTensor.wrap(2, 2, 3, 1, data, laterBatch),
        "mask[1, 1, 0] = 7", "0 (masked) or 1 (valid)");
    byte[][] minusOne = {{1, 1, 1}, {1, 1, 1}, {1, (byte) 0xff, 1}, {1, 1, 1}};
    assertRejected(() -> PairTensor.wrap(2, 2, 3, 1, data, minusOne),
        "mask[1, 0, 1] = 255", "0 (masked) or 1 (valid)");
  }

  @Test
  void aRefusedMaskLeavesTheOldOneInPlace() {
    PairTensor t = PairTensor.random(1, 3, 1, 4, 0.5);
    byte[][] before = t.maskCopy();
    byte[][] bad = t.maskCopy();
    bad[2][2] = 3;
    assertRejected(() -> t.setMask(bad), "mask[0, 2, 2] = 3", "0 (masked) or 1 (valid)");
    assertArrayEquals(before, t.maskCopy());
  }

  @Test
  void nRejectsANonSquareBlock() {
    PairTensor t = PairTensor.zeros(1, 2, 3, 4);
    assertRejected(t::n, "shape = (1, 2, 3, 4)", "must be square (rows == cols)");
  }

  @Test
  void windowRejectsRegionsOutsideTheTensor() {
    PairTensor t = PairTensor.zeros(1, 8, 6, 2);
    assertRejected(() -> t.window(5, 0, 4, 2), "row window = [5, 9)", "must lie inside [0, 8)");
    assertRejected(() -> t.window(-1, 0, 2, 2), "row window = [-1, 1)", "must lie inside [0, 8)");
    assertRejected(() -> t.window(2, 0, 0, 2), "row window = [2, 2)", "must lie inside [0, 8)");
    assertRejected(() -> t.window(0, 4, 2, 3), "column window = [4, 7)", "must lie inside [0, 6)");
    assertRejected(() -> t.window(0, -2, 2, 3), "column window = [-2, 1)", "must lie inside [0, 6)");
    assertRejected(() -> t.window(0, 0, 2, 0), "column window = [0, 0)", "[0, 6)");
  }

  @Test
  void windowRejectsOverflowingOrigins() {
    PairTensor t = PairTensor.zeros(1, 8, 2);
    assertRejected(() -> t.window(Integer.MAX_VALUE, 0, 1, 1), "row window", "must lie inside [0, 8)");
    assertRejected(() -> t.window(0, Integer.MAX_VALUE, 1, 1), "column window", "must lie inside [0, 8)");
    assertRejected(() -> t.window(0, 0, 1, Integer.MAX_VALUE), "column window", "must lie inside [0, 8)");
  }

  @Test
  void pasteRejectsAnotherDOrB() {
    PairTensor t = PairTensor.zeros(1, 4, 4);
    assertRejected(() -> t.paste(PairTensor.zeros(1, 2, 3), 0, 0),
        "block shape = (1, 2, 2, 3)", "must match B = 1 and D = 4", "(1, 4, 4, 4)");
    assertRejected(() -> t.paste(PairTensor.zeros(2, 2, 4), 0, 0),
        "block shape = (2, 2, 2, 4)", "must match B = 1 and D = 4");
  }

  @Test
  void pasteRejectsABlockThatDoesNotFit() {
    PairTensor t = PairTensor.zeros(1, 4, 4);
    PairTensor block = PairTensor.zeros(1, 2, 4);
    assertRejected(() -> t.paste(block, 3, 0), "block origin = (3, 0)", "must fit inside (1, 4, 4, 4)");
    assertRejected(() -> t.paste(block, 0, 3), "block origin = (0, 3)", "must fit inside");
    assertRejected(() -> t.paste(block, -1, 0), "block origin = (-1, 0)", "must fit inside");
    assertRejected(() -> t.paste(PairTensor.zeros(1, 5, 4), 0, 0), "block origin = (0, 0)",
        "block (1, 5, 5, 4) must fit inside");
  }

  @Test
  void pasteRejectsOverflowingOrigins() {
    PairTensor t = PairTensor.zeros(1, 4, 2);
    PairTensor block = PairTensor.zeros(1, 2, 2);
    assertRejected(() -> t.paste(block, Integer.MAX_VALUE, 0), "block origin", "must fit inside");
    assertRejected(() -> t.paste(block, 0, Integer.MAX_VALUE), "block origin", "must fit inside");
  }
}
