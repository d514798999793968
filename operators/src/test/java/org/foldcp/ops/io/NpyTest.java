package org.foldcp.ops.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.Bf16;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

class NpyTest {
  @TempDir
  Path dir;

  // ---- round trips through our own writer ----

  @Test
  void pairRoundTripIsBitExactWithBatch() {
    PairTensor t = PairTensor.random(2, 5, 3, 11L, 0.0);
    Path f = dir.resolve("pair.npy");
    Npy.writePair(f, t);
    PairTensor back = Npy.readPair(f);
    assertEquals("(2, 5, 5, 3)", back.shapeString());
    assertFalse(back.hasMask());
    assertTrue(back.sameAs(t), "float32 holds every bf16 exactly, so the round trip is bit-exact");
    assertEquals(t.get(1, 4, 2, 1), back.get(1, 4, 2, 1));
  }

  @Test
  void writtenFileHasAlignedVersion1HeaderAndExactSize() throws IOException {
    PairTensor t = PairTensor.random(2, 5, 3, 12L, 0.0);
    Path f = dir.resolve("pair.npy");
    Npy.writePair(f, t);
    byte[] bytes = Files.readAllBytes(f);
    assertEquals((byte) 0x93, bytes[0]);
    assertEquals("NUMPY", new String(bytes, 1, 5, StandardCharsets.US_ASCII));
    assertEquals(1, bytes[6]);
    int headerLen = ByteBuffer.wrap(bytes, 8, 2).order(ByteOrder.LITTLE_ENDIAN).getShort() & 0xffff;
    assertEquals(0, (10 + headerLen) % 64, "numpy aligns the data to 64 bytes");
    String header = new String(bytes, 10, headerLen, StandardCharsets.ISO_8859_1);
    assertTrue(header.contains("'descr': '<f4'"), header);
    assertTrue(header.contains("'fortran_order': False"), header);
    assertTrue(header.contains("'shape': (2, 5, 5, 3)"), header);
    assertTrue(header.endsWith("\n"));
    assertEquals(10 + headerLen + 2 * 5 * 5 * 3 * 4, bytes.length);
    float first = ByteBuffer.wrap(bytes, 10 + headerLen, 4).order(ByteOrder.LITTLE_ENDIAN).getFloat();
    assertEquals(t.get(0, 0, 0, 0), first);
  }

  @Test
  void maskRoundTripAndReadPairWithMask() {
    PairTensor t = PairTensor.random(2, 6, 2, 13L, 0.3);
    assertTrue(t.hasMask());
    Path f = dir.resolve("pair.npy");
    Path m = dir.resolve("mask.npy");
    Npy.writePair(f, t);
    Npy.writeMask(m, t);
    PairTensor back = Npy.readPair(f, m);
    assertTrue(back.hasMask());
    assertTrue(back.sameAs(t));
    byte[][] mask = Npy.readMask(m, 2, 6);
    for (int b = 0; b < 2; b++) {
      for (int i = 0; i < 6; i++) {
        assertArrayEquals(t.maskRow(b, i), mask[b * 6 + i]);
      }
    }
  }

  @Test
  void maskOfUnmaskedTensorIsAllOnes() {
    PairTensor t = PairTensor.random(1, 4, 2, 14L, 0.0);
    Path m = dir.resolve("mask.npy");
    Npy.writeMask(m, t);
    byte[][] mask = Npy.readMask(m, 1, 4);
    assertEquals(4, mask.length);
    for (byte[] row : mask) {
      assertArrayEquals(new byte[] {1, 1, 1, 1}, row);
    }
  }

  @Test
  void nonSquareBlockIsWrittenAsRowsByColsButNotReadAsPair() {
    PairTensor t = PairTensor.random(1, 4, 4, 15L, 0.5).window(1, 0, 2, 3);
    Path f = dir.resolve("block.npy");
    Path m = dir.resolve("block_mask.npy");
    Npy.writePair(f, t);
    Npy.writeMask(m, t);
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("(1, 2, 3, 4)") && msg.contains("must be square"), msg);
    byte[][] mask = Npy.readMask(m, 1, 2, 3);
    for (int i = 0; i < 2; i++) {
      for (int j = 0; j < 3; j++) {
        assertEquals(t.valid(0, i, j) ? 1 : 0, mask[i][j]);
      }
    }
  }

  // ---- hand-built files: the format as numpy writes it ----

  @Test
  void readsFloat32WithoutBatchAxisAndRoundsToBf16() throws IOException {
    // 1 + 2^-8 is halfway between the bf16 values 1 and 1 + 2^-7: ties go to the even 1.0.
    float[] v = {1.00390625f, 0.1f, -3.5f, 1e-3f, 7f, -0.0f, 100.25f, 2f};
    Path f = RawFiles.npy(dir.resolve("nnd.npy"), "<f4", "(2, 2, 2)", RawFiles.f32(v));
    PairTensor t = Npy.readPair(f);
    assertEquals("(1, 2, 2, 2)", t.shapeString());
    assertEquals(1.0f, t.get(0, 0, 0, 0));
    int q = 0;
    for (int i = 0; i < 2; i++) {
      for (int j = 0; j < 2; j++) {
        for (int c = 0; c < 2; c++) {
          assertEquals(Bf16.round(v[q]), t.get(0, i, j, c), "element " + q);
          q++;
        }
      }
    }
    assertEquals(100.0f, t.get(0, 1, 1, 0), "100.25 rounds to the bf16 value 100");
  }

  @Test
  void readsFloat16WithAndWithoutBatchAxis() throws IOException {
    // Half bits written by hand: 1, -2, 0.5, 65504 (max half), 2^-24 (smallest subnormal),
    // 0x3555 = 0.333251953125, 0 and -0.
    int[] halves = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x3555, 0x0000, 0x8000};
    float[] exact = {1f, -2f, 0.5f, 65504f, 0x1.0p-24f, 0.333251953125f, 0f, -0f};
    Path with = RawFiles.npy(dir.resolve("b.npy"), "<f2", "(1, 2, 2, 2)", RawFiles.u16(halves));
    Path without = RawFiles.npy(dir.resolve("nob.npy"), "<f2", "(2, 2, 2)", RawFiles.u16(halves));
    for (Path f : new Path[] {with, without}) {
      PairTensor t = Npy.readPair(f);
      assertEquals("(1, 2, 2, 2)", t.shapeString());
      float[] got = t.toFloats();
      for (int q = 0; q < exact.length; q++) {
        assertEquals(Bf16.round(exact[q]), got[q], "element " + q + " of " + f.getFileName());
      }
      assertEquals(65536f, got[3], "65504 rounds up to the bf16 value 65536");
      assertEquals(0x1.0p-24f, got[4], "bf16 has float32's exponent range, so 2^-24 is exact");
      assertEquals(Float.floatToIntBits(-0f), Float.floatToIntBits(got[7]));
    }
  }

  @Test
  void readsFloat16BatchOfTwo() throws IOException {
    int[] halves = new int[2 * 1 * 1 * 3];
    for (int q = 0; q < halves.length; q++) {
      halves[q] = 0x3c00 + (q << 10); // 1, 2, 4, 8, 16, 32
    }
    PairTensor t = Npy.readPair(RawFiles.npy(dir.resolve("b2.npy"), "<f2", "(2, 1, 1, 3)", RawFiles.u16(halves)));
    assertEquals("(2, 1, 1, 3)", t.shapeString());
    assertEquals(1f, t.get(0, 0, 0, 0));
    assertEquals(4f, t.get(0, 0, 0, 2));
    assertEquals(8f, t.get(1, 0, 0, 0));
    assertEquals(32f, t.get(1, 0, 0, 2));
  }

  @Test
  void readsVersion2And3HeadersAndPython2Longs() throws IOException {
    byte[] data = RawFiles.f32(1, 2, 3, 4);
    String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 2, 1), }";
    for (int major = 2; major <= 3; major++) {
      PairTensor t = Npy.readPair(RawFiles.npy(dir.resolve("v" + major + ".npy"), major, dict, data));
      assertArrayEquals(new float[] {1, 2, 3, 4}, t.toFloats());
    }
    // Python 2 numpy wrote longs with an L suffix; key order and quotes may also differ.
    String py2 = "{\"shape\": (2L, 2L, 1L), \"fortran_order\": False, \"descr\": \"<f4\"}";
    PairTensor t = Npy.readPair(RawFiles.npy(dir.resolve("py2.npy"), 1, py2, data));
    assertArrayEquals(new float[] {1, 2, 3, 4}, t.toFloats());
  }

  @Test
  void largeHeaderIsWrittenAsVersion2() throws IOException {
    String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 2), " + " ".repeat(70_000) + "}";
    byte[] pre = NpyHeader.encodeDict(dict);
    assertEquals(2, pre[6], "a header over 65535 bytes needs the 4-byte length of version 2.0");
    assertEquals(0, pre.length % 64);
    byte[] data = RawFiles.f32(0.5f, -8f);
    byte[] all = new byte[pre.length + data.length];
    System.arraycopy(pre, 0, all, 0, pre.length);
    System.arraycopy(data, 0, all, pre.length, data.length);
    Path f = Files.write(dir.resolve("v2.npy"), all);
    assertArrayEquals(new float[] {0.5f, -8f}, Npy.readPair(f).toFloats());
  }

  @Test
  void readsMasksOfEveryDtypeWithAndWithoutBatchAxis() throws IOException {
    int[] bits = {1, 0, 1, 1, 0, 0, 1, 0};
    byte[][] expect2 = {{1, 0}, {1, 1}, {0, 0}, {1, 0}}; // (2, 2, 2) -> [B*N][N]
    float[] fl = new float[bits.length];
    for (int q = 0; q < bits.length; q++) {
      fl[q] = bits[q];
    }
    Path u1 = RawFiles.npy(dir.resolve("u1.npy"), "|u1", "(2, 2, 2)", RawFiles.u8(bits));
    Path b1 = RawFiles.npy(dir.resolve("b1.npy"), "|b1", "(2, 2, 2)", RawFiles.u8(bits));
    Path f4 = RawFiles.npy(dir.resolve("f4.npy"), "<f4", "(2, 2, 2)", RawFiles.f32(fl));
    for (Path f : new Path[] {u1, b1, f4}) {
      assertArrayEquals(expect2, Npy.readMask(f, 2, 2), f.getFileName().toString());
    }
    Path flat = RawFiles.npy(dir.resolve("flat.npy"), "|b1", "(2, 2)", RawFiles.u8(0, 1, 1, 1));
    assertArrayEquals(new byte[][] {{0, 1}, {1, 1}}, Npy.readMask(flat, 1, 2));
  }

  @Test
  void readPairWithMaskAttachesIt() throws IOException {
    Path f = RawFiles.npy(dir.resolve("p.npy"), "<f4", "(2, 2, 1)", RawFiles.f32(1, 2, 3, 4));
    Path m = RawFiles.npy(dir.resolve("m.npy"), "|u1", "(2, 2)", RawFiles.u8(1, 0, 1, 1));
    PairTensor t = Npy.readPair(f, m);
    assertTrue(t.valid(0, 0, 0));
    assertFalse(t.valid(0, 0, 1));
    assertTrue(t.valid(0, 1, 1));
    assertEquals(4f, t.get(0, 1, 1, 0));
  }

  // ---- bad inputs: each message names the value and the rule ----

  @Test
  void badMagic() throws IOException {
    Path f = Files.write(dir.resolve("zip.npy"), new byte[] {'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0});
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("b'PK\\x03\\x04\\x00\\x00'") && msg.contains("must start with the 6 bytes \\x93NUMPY"), msg);
  }

  @Test
  void unsupportedVersion() throws IOException {
    Path f = RawFiles.npy(dir.resolve("v4.npy"), 4, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1), }",
        RawFiles.f32(1));
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("= 4.0") && msg.contains("supported versions are 1.0, 2.0 and 3.0"), msg);
  }

  @Test
  void unsupportedDtype() throws IOException {
    Path f = RawFiles.npy(dir.resolve("i8.npy"), "<i8", "(1, 1, 1)", new byte[8]);
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("'<i8'") && msg.contains("supported dtypes are '<f4', '<f2'"), msg);
    Path m = RawFiles.npy(dir.resolve("mi4.npy"), "<i4", "(1, 1)", new byte[4]);
    String mmsg = message(() -> Npy.readMask(m, 1, 1));
    assertTrue(mmsg.contains("'<i4'") && mmsg.contains("supported dtypes are '|u1', '|b1', '<f4'"), mmsg);
  }

  @Test
  void bigEndian() throws IOException {
    Path f = RawFiles.npy(dir.resolve("be.npy"), ">f4", "(1, 1, 1)", new byte[4]);
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("'>f4'") && msg.contains("big-endian data is not supported"), msg);
  }

  @Test
  void fortranOrder() throws IOException {
    Path f = RawFiles.npy(dir.resolve("fo.npy"), 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1, 1), }",
        RawFiles.f32(1));
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("fortran_order") && msg.contains("= True") && msg.contains("only C-order"), msg);
  }

  @Test
  void wrongRank() throws IOException {
    Path f = RawFiles.npy(dir.resolve("r2.npy"), "<f4", "(2, 2)", RawFiles.f32(1, 2, 3, 4));
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("(2, 2)") && msg.contains("rank 4 (B, N, N, D) or rank 3 (N, N, D), not rank 2"), msg);
  }

  @Test
  void nonSquare() throws IOException {
    Path f = RawFiles.npy(dir.resolve("ns.npy"), "<f4", "(2, 3, 1)", RawFiles.f32(1, 2, 3, 4, 5, 6));
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("(2, 3, 1)") && msg.contains("must be square (N, N): rows 2 != cols 3"), msg);
  }

  @Test
  void zeroDimension() throws IOException {
    Path f = RawFiles.npy(dir.resolve("z.npy"), "<f4", "(0, 2, 2, 1)", new byte[0]);
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("(0, 2, 2, 1)") && msg.contains("between 1 and"), msg);
  }

  @Test
  void truncatedData() throws IOException {
    Path f = RawFiles.npy(dir.resolve("t.npy"), "<f4", "(1, 2, 2, 2)", new byte[20]);
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("= 20 bytes") && msg.contains("needs exactly 32 bytes") && msg.contains("truncated"), msg);
  }

  @Test
  void truncatedHeader() throws IOException {
    byte[] good = Files.readAllBytes(RawFiles.npy(dir.resolve("g.npy"), "<f4", "(1, 1, 1)", RawFiles.f32(1)));
    Path f = Files.write(dir.resolve("th.npy"), Arrays.copyOf(good, 30));
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("= 30 bytes") && msg.contains("beyond the end of the file: truncated file"), msg);
  }

  @Test
  void headerNotParseable() throws IOException {
    Path f = RawFiles.npy(dir.resolve("bad.npy"), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1}",
        RawFiles.f32(1));
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("'shape': (1, 1, 1}") && msg.contains("not parseable as a Python dict literal"), msg);
  }

  @Test
  void headerMissingKey() throws IOException {
    Path f = RawFiles.npy(dir.resolve("nokey.npy"), 1, "{'descr': '<f4', 'fortran_order': False, }", RawFiles.f32(1));
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("'descr': '<f4'") && msg.contains("missing [shape]"), msg);
  }

  @Test
  void headerNestedTooDeepIsRefusedNotAStackOverflow() throws IOException {
    // found by NpyFuzzTest: 30,000 '(' in a version 1.0 header overflowed the recursive parser's stack
    String deep = "{'descr': '<f4', 'fortran_order': False, 'shape': " + "(".repeat(30_000) + ")".repeat(30_000) + "}";
    Path f = RawFiles.npy(dir.resolve("deep.npy"), 1, deep, RawFiles.f32(1));
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("not parseable as a Python dict literal") && msg.contains("nesting deeper than 64 levels"),
        msg);
    assertTrue(msg.length() < 1000, "the header is shown as an excerpt: " + msg.length() + " characters");
  }

  @Test
  void aShapeOf2To40ElementsIsRefusedBeforeAnythingIsAllocated() throws IOException {
    // (1, 2^20, 2^20, 1) float32 would be 4 TiB; the file holds one value
    Path f = RawFiles.npy(dir.resolve("huge.npy"), "<f4", "(1, 1048576, 1048576, 1)", RawFiles.f32(1));
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("data size of") && msg.contains("= 4 bytes")
        && msg.contains("shape (1, 1048576, 1048576, 1) of dtype '<f4' needs exactly 4398046511104 bytes"), msg);
    Path m = RawFiles.npy(dir.resolve("hugemask.npy"), "|u1", "(1, 1048576, 1048576)", RawFiles.u8(1));
    String mmsg = message(() -> Npy.readMask(m, 1, 1048576));
    assertTrue(mmsg.contains("= 1 bytes") && mmsg.contains("needs exactly 1099511627776 bytes"), mmsg);
    // four dimensions below 2^31 each, whose product passes 2^63
    Path o = RawFiles.npy(dir.resolve("overflow.npy"), "<f4", "(2147483000, 2147483000, 2147483000, 1)", RawFiles.f32(1));
    String omsg = message(() -> Npy.readPair(o));
    assertTrue(omsg.contains("= (2147483000, 2147483000, 2147483000, 1)") && omsg.contains("the element count overflows 64 bits"),
        omsg);
  }

  @Test
  void headerLengthFieldBeyondTheFile() throws IOException {
    byte[] good = Files.readAllBytes(RawFiles.npy(dir.resolve("g2.npy"), 2,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1), }", RawFiles.f32(1)));
    ByteBuffer.wrap(good).order(ByteOrder.LITTLE_ENDIAN).putInt(8, 0xffffffff);
    Path f = Files.write(dir.resolve("len.npy"), good);
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("= " + good.length + " bytes") && msg.contains("declares 4294967295 bytes")
        && msg.contains("beyond the end of the file"), msg);
  }

  @Test
  void headerValuesOfTheWrongKind() throws IOException {
    Path fo = RawFiles.npy(dir.resolve("fo1.npy"), 1, "{'descr': '<f4', 'fortran_order': 1, 'shape': (1, 1, 1), }",
        RawFiles.f32(1));
    String msg = message(() -> Npy.readPair(fo));
    assertTrue(msg.contains("'fortran_order' in npy header of") && msg.contains("= 1:") && msg.contains("True or False"),
        msg);
    Path neg = RawFiles.npy(dir.resolve("neg.npy"), "<f4", "(1, -1, 1)", RawFiles.f32(1));
    msg = message(() -> Npy.readPair(neg));
    assertTrue(msg.contains("'shape' in npy header of") && msg.contains("= [1, -1, 1]")
        && msg.contains("every dimension must be a non-negative integer"), msg);
    Path list = RawFiles.npy(dir.resolve("str.npy"), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': '(1, 1)', }",
        RawFiles.f32(1));
    msg = message(() -> Npy.readPair(list));
    assertTrue(msg.contains("= (1, 1):") && msg.contains("must be a tuple of integers"), msg);
    Path extra = RawFiles.npy(dir.resolve("extra.npy"), 1,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1), 'order': 'C', }", RawFiles.f32(1));
    msg = message(() -> Npy.readPair(extra));
    assertTrue(msg.contains("'order': 'C'") && msg.contains("unexpected [order]"), msg);
  }

  @Test
  void maskValueNotZeroOrOne() throws IOException {
    Path u1 = RawFiles.npy(dir.resolve("m2.npy"), "|u1", "(1, 2, 2)", RawFiles.u8(1, 1, 2, 0));
    String msg = message(() -> Npy.readMask(u1, 1, 2));
    assertTrue(msg.contains("mask[0, 1, 0]") && msg.contains("= 2:") && msg.contains("must be 0 (masked) or 1 (valid)"),
        msg);
    Path f4 = RawFiles.npy(dir.resolve("mh.npy"), "<f4", "(2, 2)", RawFiles.f32(1, 0, 0, 0.5f));
    String fmsg = message(() -> Npy.readMask(f4, 1, 2));
    assertTrue(fmsg.contains("mask[0, 1, 1]") && fmsg.contains("= 0.5:") && fmsg.contains("must be 0"), fmsg);
  }

  @Test
  void maskShapeMismatch() throws IOException {
    Path f = RawFiles.npy(dir.resolve("ms.npy"), "|u1", "(1, 3, 3)", new byte[9]);
    String msg = message(() -> Npy.readMask(f, 2, 3));
    assertTrue(msg.contains("(1, 3, 3)") && msg.contains("(B, rows, cols) = (2, 3, 3)"), msg);
  }

  @Test
  void missingFile() {
    Path f = dir.resolve("nope.npy");
    String msg = message(() -> Npy.readPair(f));
    assertTrue(msg.contains("nope.npy") && msg.contains("does not exist"), msg);
  }

  @Test
  void float16InputIsNarrowedWithOneWarningThatCountsRoundedValues() throws IOException {
    int[] halves = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x3555, 0x0000, 0x8000}; // 65504 and 0x3555 round
    Path f = RawFiles.npy(dir.resolve("warn.npy"), "<f2", "(2, 2, 2)", RawFiles.u16(halves));
    java.util.List<String> warnings = new java.util.ArrayList<>();
    java.util.logging.Logger jul = java.util.logging.Logger.getLogger(Npy.class.getName());
    java.util.logging.Handler h = new java.util.logging.Handler() {
      @Override
      public void publish(java.util.logging.LogRecord r) {
        if (r.getLevel() == java.util.logging.Level.WARNING) {
          warnings.add(r.getMessage());
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    jul.addHandler(h);
    try {
      Npy.readPair(f);
      Npy.readPair(RawFiles.npy(dir.resolve("f32.npy"), "<f4", "(1, 1, 1)", RawFiles.f32(new float[] {1f})));
    } finally {
      jul.removeHandler(h);
    }
    assertEquals(1, warnings.size(), "one warning for the float16 file, none for float32: " + warnings);
    String w = warnings.get(0);
    assertTrue(w.contains("float16") && w.contains("rounded to bf16") && w.contains("2 of 8 values changed")
        && w.contains("None overflows"), w);
  }

  @Test
  void rank3InputIsWrittenBackAsRank3() {
    PairTensor x = PairTensor.random(1, 5, 3, 9, 0.0);
    Path in = dir.resolve("in.npy");
    Path out = dir.resolve("out.npy");
    Npy.writePair(in, x, 3);
    assertEquals(3, Npy.pairRank(in));
    PairTensor read = Npy.readPair(in);
    assertTrue(read.sameAs(x));
    Npy.writePair(out, read, Npy.pairRank(in));
    assertEquals(3, Npy.pairRank(out), "(N, N, D) in, (N, N, D) out");
    assertTrue(Npy.readPair(out).sameAs(x));
    Npy.writePair(out, read);
    assertEquals(4, Npy.pairRank(out), "the default stays (B, N, N, D)");
    String msg = message(() -> Npy.writePair(dir.resolve("b2.npy"), PairTensor.random(2, 3, 2, 1, 0.0), 3));
    assertTrue(msg.contains("rank 3 (N, N, D) when B = 1"), msg);
  }

  static String message(Executable call) {
    return assertThrows(InvalidInputException.class, call).getMessage();
  }
}
