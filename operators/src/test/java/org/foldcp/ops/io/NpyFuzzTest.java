package org.foldcp.ops.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.ops.testing.Fuzz;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fuzzes the .npy reader ({@link Npy}, {@link NpyHeader}, {@link PyLiteral}) with mutations of
 * valid pair tensors and masks: every truncation of each preamble and header, byte-level
 * mutations (bit flips, the bytes 0x00, 0xFF, 0x7F and 0x80, truncation, garbage, little-endian
 * fields set to huge values: the header length above all) and edits of the header dict (descr,
 * fortran_order, shape with dimensions up to 2^63 - 1 and 2^40 elements in all, missing,
 * unexpected and repeated keys, the version bytes, nesting). Every input goes through pairRank,
 * readPair and readMask; the contract is {@link Fuzz}'s.
 */
@Timeout(300)
class NpyFuzzTest {
  static final int RANDOM_INPUTS = Fuzz.iterations(10_000);

  @TempDir
  static Path dir;

  /** A valid file and the (B, rows, cols) its mask, or its pair tensor's mask, has. */
  record Seed(String name, byte[] bytes, boolean pair, int batch, int rows, int cols) {
    int dataStart() {
      int major = bytes[6];
      int len = major == 1 ? (bytes[8] & 0xff) | (bytes[9] & 0xff) << 8
          : ByteBuffer.wrap(bytes, 8, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
      return (major == 1 ? 10 : 12) + len;
    }
  }

  static List<Seed> seeds;
  private static final java.util.Map<String, NpyHeader> HEADERS = new java.util.HashMap<>();
  private static Level npyLogLevel;

  @BeforeAll
  static void makeSeeds() throws IOException {
    // float16 pair tensors log a warning per read; 10,000 of them would bury the CI log
    Logger npyLog = Logger.getLogger(Npy.class.getName());
    npyLogLevel = npyLog.getLevel();
    npyLog.setLevel(Level.OFF);

    seeds = new ArrayList<>();
    Path p4 = dir.resolve("seed_pair4.npy");
    Npy.writePair(p4, PairTensor.random(2, 3, 2, 1L, 0));
    seeds.add(new Seed("pair f4 (2, 3, 3, 2)", Files.readAllBytes(p4), true, 2, 3, 3));
    Path p3 = dir.resolve("seed_pair3.npy");
    Npy.writePair(p3, PairTensor.random(1, 4, 1, 2L, 0), 3);
    seeds.add(new Seed("pair f4 (4, 4, 1)", Files.readAllBytes(p3), true, 1, 4, 4));
    Path f2 = RawFiles.npy(dir.resolve("seed_f2.npy"), 2,
        "{'descr': '<f2', 'fortran_order': False, 'shape': (2L, 2L, 1L), }", RawFiles.u16(0x3c00, 0xc000, 0x7bff, 0x0001));
    seeds.add(new Seed("pair f2 v2.0 (2, 2, 1)", Files.readAllBytes(f2), true, 1, 2, 2));
    Path v3 = RawFiles.npy(dir.resolve("seed_v3.npy"), 3,
        "{\"shape\": (1, 1, 1, 2), \"fortran_order\": False, \"descr\": \"<f4\"}", RawFiles.f32(1.5f, -2f));
    seeds.add(new Seed("pair f4 v3.0 (1, 1, 1, 2)", Files.readAllBytes(v3), true, 1, 1, 1));
    Path mu1 = dir.resolve("seed_mask.npy");
    PairTensor masked = PairTensor.random(2, 3, 1, 3L, 0.4);
    Npy.writeMask(mu1, masked);
    seeds.add(new Seed("mask u1 (2, 3, 3)", Files.readAllBytes(mu1), false, 2, 3, 3));
    Path mb1 = RawFiles.npy(dir.resolve("seed_mask_b1.npy"), "|b1", "(2, 3)", RawFiles.u8(1, 0, 1, 1, 1, 0));
    seeds.add(new Seed("mask b1 (2, 3)", Files.readAllBytes(mb1), false, 1, 2, 3));
    Path mf4 = RawFiles.npy(dir.resolve("seed_mask_f4.npy"), "<f4", "(1, 2, 2)", RawFiles.f32(1, 0, 0, 1));
    seeds.add(new Seed("mask f4 (1, 2, 2)", Files.readAllBytes(mf4), false, 1, 2, 2));
  }

  @AfterAll
  static void restoreLogging() {
    Logger.getLogger(Npy.class.getName()).setLevel(npyLogLevel);
  }

  @Test
  void seedsParse() throws IOException {
    Path f = dir.resolve("check.npy");
    for (Seed s : seeds) {
      Files.write(f, s.bytes());
      if (s.pair()) {
        PairTensor t = Npy.readPair(f);
        assertEquals(s.batch() * s.rows(), t.batch() * t.rows(), s.name());
        assertEquals(s.cols(), t.cols(), s.name());
        assertTrue(Npy.pairRank(f) == 3 || Npy.pairRank(f) == 4, s.name());
      } else {
        assertEquals(s.batch() * s.rows(), Npy.readMask(f, s.batch(), s.rows(), s.cols()).length, s.name());
      }
    }
    Files.write(f, seeds.get(3).bytes());
    assertEquals(-2f, Npy.readPair(f).get(0, 0, 0, 1));
    Files.write(f, seeds.get(5).bytes());
    assertArrayEquals(new byte[] {1, 1, 0}, Npy.readMask(f, 1, 2, 3)[1]);
  }

  @Test
  void fuzz() throws IOException {
    Path f = dir.resolve("input.npy");
    try (Fuzz fuzz = new Fuzz("npy", 10_000, 16L << 20, 64)) {
      int index = 0;
      for (Seed s : seeds) {
        for (Fuzz.Input in : Fuzz.edges(s.name(), s.bytes(), s.dataStart(), 1, 2, 4, 64, 4096)) {
          run(fuzz, f, s, index++, in.how(), in.bytes());
        }
      }
      for (int q = 0; q < RANDOM_INPUTS; q++) {
        SplittableRandom rng = Fuzz.rng("npy", q);
        Seed s = seeds.get(rng.nextInt(seeds.size()));
        StringBuilder how = new StringBuilder(s.name() + ":");
        byte[] input;
        int mode = rng.nextInt(10);
        if (mode < 4) {
          input = Fuzz.mutateBytes(s.bytes(), s.dataStart(), rng, how);
        } else {
          input = editHeader(s, rng, how);
          if (mode >= 8) {
            input = Fuzz.mutateBytes(input, Math.min(input.length, 128), rng, how);
          }
        }
        run(fuzz, f, s, index++, how.toString(), input);
      }
      fuzz.assertClean();
      assertTrue(fuzz.inputs() >= 10_000 || RANDOM_INPUTS < 10_000, fuzz.summary());
      assertTrue(fuzz.accepted() > 0, "some mutants are still valid files: " + fuzz.summary());
    }
  }

  private static void run(Fuzz fuzz, Path f, Seed s, int index, String how, byte[] input) throws IOException {
    Files.write(f, input);
    fuzz.check(index, how, input,
        () -> Npy.pairRank(f),
        () -> Npy.readPair(f),
        () -> Npy.readMask(f, s.batch(), s.rows(), s.cols()));
  }

  // ------------------------------------------------------------------ header edits

  private static final String[] DESCRS = {
      "'<f4'", "'<f2'", "'|u1'", "'|b1'", "'<u1'", "'>f4'", "'<f8'", "'<i4'", "'|O'", "'<c8'", "'f4'", "''",
      "'<f4 '", "[('x', '<f4')]", "5", "None", "True", "'\\x00'", "('<f4',)", "'" + "f".repeat(10_000) + "'"};
  private static final String[] FORTRAN = {"False", "True", "0", "1", "'False'", "None", "()", "Fals"};

  /** The seed's header rebuilt as (key, value) text pairs, edited, and written as a new file. */
  static byte[] editHeader(Seed s, SplittableRandom rng, StringBuilder how) {
    int major = s.bytes()[6];
    NpyHeader h = HEADERS.computeIfAbsent(s.name(), k -> parse(s));
    List<String[]> dict = new ArrayList<>();
    dict.add(new String[] {"'descr'", "'" + h.descr + "'"});
    dict.add(new String[] {"'fortran_order'", h.fortranOrder ? "True" : "False"});
    dict.add(new String[] {"'shape'", null}); // written from shape or shapeText
    List<Long> shape = new ArrayList<>();
    for (long d : h.shape) {
      shape.add(d);
    }
    String shapeText = null;
    String wholeText = null;
    byte[] data = Arrays.copyOfRange(s.bytes(), s.dataStart(), s.bytes().length);
    int edits = 1 + rng.nextInt(3);
    for (int k = 0; k < edits; k++) {
      switch (rng.nextInt(14)) {
        case 0:
        case 1: {
          String d = Fuzz.pick(rng, DESCRS);
          put(dict, "'descr'", d);
          how.append(" descr = ").append(d.length() > 20 ? "(long)" : d).append(';');
          break;
        }
        case 2: {
          String fo = Fuzz.pick(rng, FORTRAN);
          put(dict, "'fortran_order'", fo);
          how.append(" fortran_order = ").append(fo).append(';');
          break;
        }
        case 3:
        case 4:
        case 5: {
          long v = Fuzz.interestingLong(rng);
          int kind = rng.nextInt(5);
          if (kind == 0 || shape.isEmpty()) {
            shape.add(rng.nextInt(shape.size() + 1), v);
          } else if (kind == 1) {
            shape.remove(rng.nextInt(shape.size()));
          } else {
            shape.set(rng.nextInt(shape.size()), v);
          }
          shapeText = null;
          how.append(" shape = ").append(shape).append(';');
          break;
        }
        case 6: {
          shapeText = Fuzz.pick(rng,
              "(1, 1048576, 1048576, 1)", // 2^40 elements, square
              "(1048576, 1048576, 1)",
              "(1, 4294967296, 4294967296, 1)",
              "(1, 2147483647, 2147483647, 2147483647)",
              "(9223372036854775807, 2, 2, 2)",
              "(1, 9223372036854775808, 2, 2)", // beyond 64 bits
              "(65536, 65536, 1, 1)", "(1, 65536, 65536)", "(2147483647, 2147483647)",
              "(1099511627776,)", "()", "(3,)", "[2, 2, 2]", "(2, 2, -2)", "((1, 2), 2, 2)",
              "(2, 2, 2", "(+2, 2, 1)", "(2 2 1)", "(1.0, 1, 1)", "'(1, 1, 1)'", "(1e3, 1, 1)",
              "(" + "1, ".repeat(5000) + ")");
          how.append(" shape text = ").append(shapeText.length() > 60 ? "(5000 dims)" : shapeText).append(';');
          break;
        }
        case 7: {
          int at = rng.nextInt(dict.size() + 1);
          String extra = Fuzz.pick(rng, "'extra': 1", "'shape': (1, 1, 1)", "'descr': '<f4'", "'': None",
              "1: 2", "'fortran_order': False");
          if (at < dict.size() && rng.nextBoolean()) {
            dict.remove(at);
            how.append(" key ").append(at).append(" removed;");
          } else {
            String[] kv = extra.split(": ", 2);
            dict.add(at, new String[] {kv[0], kv[1]});
            how.append(" added ").append(extra).append(';');
          }
          break;
        }
        case 8: {
          Collections.shuffle(dict, new java.util.Random(rng.nextLong()));
          how.append(" keys shuffled;");
          break;
        }
        case 9: {
          int depth = Fuzz.pick(rng, 10, 1000, 30_000);
          wholeText = Fuzz.pick(rng,
              "{'descr': '<f4', 'fortran_order': False, 'shape': " + "(".repeat(depth) + ")".repeat(depth) + "}",
              "{'a': " + "{'a': ".repeat(depth) + "1" + "}".repeat(depth + 1),
              "{'shape': " + "[".repeat(depth) + "}");
          how.append(" nested ").append(depth).append(" deep;");
          break;
        }
        case 10: {
          wholeText = Fuzz.pick(rng, "", "{", "}", "{}", "[]", "None", "{'descr': '<f4', 'fortran_order': False, 'shape'",
              "{'descr': '<f4\\', 'fortran_order': False, 'shape': (1, 1, 1), }", "{'descr' '<f4'}",
              "{\"descr\": \"<f4\", \"fortran_order\": false, \"shape\": [1, 1, 1]}", "\u00e9\u00ff\u0000");
          how.append(" header text = ").append(wholeText).append(';');
          break;
        }
        case 11: {
          major = Fuzz.pick(rng, 0, 1, 2, 3, 4, 255);
          how.append(" version ").append(major).append(";");
          break;
        }
        case 12: {
          data = Arrays.copyOf(data, Fuzz.truncationLength(data.length, 0, rng));
          how.append(" data truncated to ").append(data.length).append(';');
          break;
        }
        default: {
          data = Fuzz.concat(data, Fuzz.garbage(rng, 1 + rng.nextInt(64)));
          how.append(" data extended to ").append(data.length).append(';');
        }
      }
    }
    String text;
    if (wholeText != null) {
      text = wholeText;
    } else {
      StringBuilder sb = new StringBuilder("{");
      for (String[] kv : dict) {
        String v = kv[1] != null ? kv[1] : shapeText != null ? shapeText : tuple(shape);
        sb.append(kv[0]).append(": ").append(v).append(", ");
      }
      text = sb.append('}').toString();
    }
    return file(major, text, data, rng, how);
  }

  /** Sets the value of {@code key}, adding the key when an earlier edit removed it. */
  private static void put(List<String[]> dict, String key, String value) {
    for (String[] kv : dict) {
      if (kv[0].equals(key)) {
        kv[1] = value;
        return;
      }
    }
    dict.add(new String[] {key, value});
  }

  private static String tuple(List<Long> shape) {
    StringBuilder sb = new StringBuilder("(");
    for (int q = 0; q < shape.size(); q++) {
      sb.append(q == 0 ? "" : ", ").append(shape.get(q));
    }
    return sb.append(shape.size() == 1 ? ",)" : ")").toString();
  }

  /** Preamble, header (padded to 64 bytes but for one input in eight), data. */
  private static byte[] file(int major, String dict, byte[] data, SplittableRandom rng, StringBuilder how) {
    boolean wide = major != 1;
    int prefix = wide ? 12 : 10;
    StringBuilder header = new StringBuilder(dict);
    if (rng.nextInt(8) != 0) {
      while ((prefix + header.length() + 1) % 64 != 0) {
        header.append(' ');
      }
    }
    header.append('\n');
    byte[] text = header.toString().getBytes(major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
    long declared = text.length;
    if (rng.nextInt(10) == 0) {
      declared = rng.nextBoolean() ? text.length + rng.nextInt(9) - 4 : Fuzz.interestingLong(rng);
      how.append(" header length field = ").append(declared).append(';');
    }
    ByteBuffer b = ByteBuffer.allocate(prefix + text.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
    b.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) major).put((byte) 0);
    if (wide) {
      b.putInt((int) declared);
    } else {
      b.putShort((short) declared);
    }
    return b.put(text).put(data).array();
  }

  private static NpyHeader parse(Seed s) {
    try {
      Path f = Files.write(dir.resolve("parse_" + Math.abs(s.name().hashCode()) + ".npy"), s.bytes());
      try (java.nio.channels.FileChannel ch = FileReads.openRead(f)) {
        return NpyHeader.read(ch, f);
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
