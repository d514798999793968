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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.WeightTensor;
import org.foldcp.ops.testing.Fuzz;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fuzzes the .safetensors reader ({@link SafeTensors}, {@link SafeTensorsHeader}) with mutations
 * of valid files: every truncation of each header, byte-level mutations (bit flips, the bytes
 * 0x00, 0xFF, 0x7F and 0x80, truncation, garbage, insertions, deletions, little-endian fields set
 * to huge values) and edits of the JSON header's fields (dtype, shape with up to 2^62 elements,
 * data_offsets negative, huge, swapped, overlapping or out of range, missing and unexpected
 * keys, metadata, nesting). Every input goes through metadata (the header alone), readAll and
 * readLayer; the
 * contract is {@link Fuzz}'s: InvalidInputException or success, in bounded time and memory.
 */
@Timeout(300)
class SafeTensorsFuzzTest {
  static final int RANDOM_INPUTS = Fuzz.iterations(10_000);
  static final String OUT = "pairformer.layers.0.tri_mul_out.";
  static final String IN = "pairformer.layers.0.tri_mul_in.";

  @TempDir
  static Path dir;

  /** A valid file, the layer prefix in it, its D, and where its data starts. */
  record Seed(String name, byte[] bytes, String prefix, int dim) {
    long headerLength() {
      return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
    }

    int dataStart() {
      return (int) (8 + headerLength());
    }

    String headerText() {
      return new String(bytes, 8, (int) headerLength(), StandardCharsets.UTF_8);
    }

    byte[] data() {
      return Arrays.copyOfRange(bytes, dataStart(), bytes.length);
    }
  }

  static List<Seed> seeds;

  @BeforeAll
  static void makeSeeds() throws IOException {
    seeds = new ArrayList<>();
    // one layer with biases, F32, with the PyTorch metadata
    Path a = dir.resolve("seed_f32.safetensors");
    SafeTensors.writeLayer(a, OUT, LayerWeights.random(4, 1L, true), "F32");
    seeds.add(new Seed("f32", Files.readAllBytes(a), OUT, 4));
    // two layers in BF16, no biases
    Map<String, LayerWeights> two = new LinkedHashMap<>();
    two.put(OUT, LayerWeights.random(4, 2L, false));
    two.put(IN, LayerWeights.random(4, 3L, false));
    Path b = dir.resolve("seed_bf16.safetensors");
    SafeTensors.writeLayers(b, two, "BF16");
    seeds.add(new Seed("bf16", Files.readAllBytes(b), IN, 4));
    // F16 and F64, one layer each, unprefixed, no metadata
    for (String dt : List.of("F16", "F64")) {
      Map<String, WeightTensor> t = new LinkedHashMap<>(LayerWeights.random(2, 4L, true).tensors());
      Path f = dir.resolve("seed_" + dt + ".safetensors");
      SafeTensors.write(f, t, dt, null);
      seeds.add(new Seed(dt.toLowerCase(), Files.readAllBytes(f), "", 2));
    }
    // hand-built: mixed dtypes, an empty tensor, a scalar, metadata (overlapping ranges are refused)
    ByteBuffer data = ByteBuffer.allocate(20).order(ByteOrder.LITTLE_ENDIAN);
    data.putShort((short) 0x3c00).putShort((short) 0xc000).putShort((short) 0x3fc0).putShort((short) 0xc020)
        .putFloat(0.75f).putDouble(-3.5);
    String json = "{\"__metadata__\":{\"k\":\"v\"},"
        + "\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
        + "\"b\":{\"dtype\":\"BF16\",\"shape\":[1,2],\"data_offsets\":[4,8]},"
        + "\"empty\":{\"dtype\":\"F16\",\"shape\":[2,0],\"data_offsets\":[8,8]},"
        + "\"f\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[8,12]},"
        + "\"step\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[12,20]}}";
    Path h = RawFiles.safetensors(dir.resolve("seed_hand.safetensors"), json, data.array());
    seeds.add(new Seed("hand", Files.readAllBytes(h), "b", -1));
  }

  @Test
  void seedsParse() throws IOException {
    Path f = dir.resolve("check.safetensors");
    for (Seed s : seeds) {
      Files.write(f, s.bytes());
      Map<String, WeightTensor> all = SafeTensors.readAll(f);
      assertEquals(SafeTensors.keys(f), new ArrayList<>(all.keySet()), s.name());
      if (s.dim() > 0) {
        assertEquals(s.dim(), SafeTensors.readLayer(f, s.prefix(), s.dim()).dim(), s.name());
      }
    }
    Files.write(f, seeds.get(4).bytes());
    assertArrayEquals(new float[] {0.75f}, SafeTensors.readAll(f).get("f").values());
  }

  @Test
  void fuzz() throws IOException {
    Path f = dir.resolve("input.safetensors");
    try (Fuzz fuzz = new Fuzz("safetensors", 10_000, 16L << 20, 64)) {
      int index = 0;
      // every truncation of every header (and the first bytes of the data), and extensions
      for (Seed s : seeds) {
        for (Fuzz.Input in : Fuzz.edges(s.name(), s.bytes(), s.dataStart(), 1, 7, 8, 64, 4096)) {
          run(fuzz, f, s, index++, in.how(), in.bytes());
        }
      }
      // random mutations: byte-level, header edits, or both
      for (int q = 0; q < RANDOM_INPUTS; q++) {
        SplittableRandom rng = Fuzz.rng("safetensors", q);
        Seed s = seeds.get(rng.nextInt(seeds.size()));
        StringBuilder how = new StringBuilder(s.name() + ":");
        byte[] input;
        int mode = rng.nextInt(10);
        if (mode < 4) {
          input = Fuzz.mutateBytes(s.bytes(), s.dataStart(), rng, how);
        } else {
          input = editHeader(s, rng, how);
          if (mode >= 8) {
            input = Fuzz.mutateBytes(input, s.dataStart(), rng, how);
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
    int expectedDim = index % 2 == 0 ? s.dim() : -1;
    fuzz.check(index, how, input,
        () -> SafeTensors.metadata(f),
        () -> SafeTensors.readAll(f),
        () -> SafeTensors.readLayer(f, s.prefix(), expectedDim));
  }

  // ------------------------------------------------------------------ header edits

  /** A raw JSON token, for what the model cannot hold (fractions, true, null, bad nesting). */
  record Raw(String text) {}

  private static final Object[] DTYPES = {
      "F32", "BF16", "F16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2", "f32", "",
      "F32 ", "F3", "\u00e9", "F".repeat(10_000), 32L, List.of("F32"), new Raw("null"), new Raw("true"), new Raw("1.5")};

  @SuppressWarnings("unchecked")
  static byte[] editHeader(Seed s, SplittableRandom rng, StringBuilder how) {
    Map<String, Object> root;
    try {
      root = (Map<String, Object>) Json.parse(s.headerText().strip());
    } catch (Json.SyntaxError e) {
      throw new IllegalStateException(e);
    }
    byte[] data = s.data();
    Object top = root;
    int edits = 1 + rng.nextInt(3);
    for (int k = 0; k < edits; k++) {
      top = editOnce(root, top, data.length, rng, how);
    }
    String text = write(top);
    if (rng.nextInt(4) == 0) {
      text = text + " ".repeat(rng.nextInt(9)); // padding, as the reference writer adds
    }
    byte[] header = text.getBytes(StandardCharsets.UTF_8);
    long declared = header.length;
    if (rng.nextInt(12) == 0) {
      declared = rng.nextBoolean() ? header.length + rng.nextInt(5) - 2 : Fuzz.interestingLong(rng);
      how.append(" header length field = ").append(declared).append(';');
    }
    switch (rng.nextInt(8)) {
      case 0:
        data = Arrays.copyOf(data, Fuzz.truncationLength(data.length, 0, rng));
        how.append(" data truncated to ").append(data.length).append(';');
        break;
      case 1:
        data = Fuzz.concat(data, Fuzz.garbage(rng, 1 + rng.nextInt(64)));
        how.append(" data extended to ").append(data.length).append(';');
        break;
      default:
    }
    ByteBuffer b = ByteBuffer.allocate(8 + header.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(declared).put(header).put(data);
    return b.array();
  }

  @SuppressWarnings("unchecked")
  private static Object editOnce(Map<String, Object> root, Object top, int dataLength, SplittableRandom rng,
      StringBuilder how) {
    List<String> names = new ArrayList<>(root.keySet());
    names.remove(SafeTensorsHeader.METADATA);
    if (names.isEmpty() || rng.nextInt(20) == 0) {
      return wholeHeader(root, rng, how);
    }
    String name = names.get(rng.nextInt(names.size()));
    Object value = root.get(name);
    if (!(value instanceof Map)) {
      root.put(name, new LinkedHashMap<>(Map.of("dtype", "F32", "shape", List.of(1L), "data_offsets", List.of(0L, 4L))));
      how.append(" entry '").append(name).append("' rebuilt;");
      return top;
    }
    Map<String, Object> e = (Map<String, Object>) value;
    int op = rng.nextInt(16);
    how.append(" '").append(name).append("'");
    switch (op) {
      case 0:
      case 1: {
        Object dt = Fuzz.pick(rng, DTYPES);
        e.put("dtype", dt);
        how.append(" dtype = ").append(String.valueOf(dt).length() > 20 ? "(long)" : dt).append(';');
        break;
      }
      case 2:
      case 3:
      case 4: {
        List<Object> shape = list(e.get("shape"));
        long v = Fuzz.interestingLong(rng);
        int kind = rng.nextInt(7);
        if (kind == 0 || shape.isEmpty()) {
          shape.add(rng.nextInt(shape.size() + 1), v);
        } else if (kind == 1) {
          shape.remove(rng.nextInt(shape.size()));
        } else if (kind == 2) {
          shape = new ArrayList<>(List.of(1L << 20, 1L << 20)); // 2^40 elements
        } else if (kind == 3) {
          shape = new ArrayList<>(List.of(1L << 31, 1L << 31, 1L << 31)); // overflows 64 bits as bytes
        } else if (kind == 4) {
          shape = new ArrayList<>(Collections.nCopies(5000, 1L)); // a value too long to quote whole
        } else {
          shape.set(rng.nextInt(shape.size()), v);
        }
        e.put("shape", shape);
        how.append(" shape = ").append(shape.size() > 8 ? shape.size() + " dims" : shape).append(';');
        break;
      }
      case 5:
      case 6:
      case 7:
      case 8: {
        List<Object> off = list(e.get("data_offsets"));
        while (off.size() < 2) {
          off.add(0L);
        }
        long b0 = off.get(0) instanceof Long ? (Long) off.get(0) : 0;
        long e0 = off.get(1) instanceof Long ? (Long) off.get(1) : 0;
        switch (rng.nextInt(8)) {
          case 0: off.set(0, Fuzz.interestingLong(rng)); break;
          case 1: off.set(1, Fuzz.interestingLong(rng)); break;
          case 2: off.set(0, e0); off.set(1, b0); break; // swapped
          case 3: off.set(1, (long) dataLength + 1 + rng.nextInt(8)); break; // past the end
          case 4: { // overlap (or coincide) with another entry
            Object other = root.get(Fuzz.pick(rng, root.keySet().toArray(new String[0])));
            if (other instanceof Map && ((Map<?, ?>) other).get("data_offsets") instanceof List) {
              off = list(((Map<?, ?>) other).get("data_offsets"));
            }
            break;
          }
          case 5: off.set(0, b0 - 1 - rng.nextInt(4)); off.set(1, e0 - 1 - rng.nextInt(4)); break;
          case 6: off.add(e0); break; // three values
          default: off.remove(rng.nextInt(off.size())); break; // one value
        }
        e.put("data_offsets", off);
        how.append(" data_offsets = ").append(off).append(';');
        break;
      }
      case 9: {
        String field = Fuzz.pick(rng, "dtype", "shape", "data_offsets");
        e.remove(field);
        how.append(" without ").append(field).append(';');
        break;
      }
      case 10: {
        String field = Fuzz.pick(rng, "dtype", "shape", "data_offsets");
        Object v = Fuzz.pick(rng, "x", 5L, List.of(), Map.of(), new Raw("null"), List.of(List.of(1L)),
            List.of("1", "2"), List.of(-1L, 4L));
        e.put(field, v);
        how.append(' ').append(field).append(" = ").append(v).append(';');
        break;
      }
      case 11: {
        e.put("extra", 1L);
        how.append(" with an extra field;");
        break;
      }
      case 12: {
        root.remove(name);
        how.append(" removed;");
        break;
      }
      case 13: { // rename: a missing and an unexpected key at once, or a nested one
        Object v = root.remove(name);
        String renamed = Fuzz.pick(rng, name + "_scale", name.replace("weight", "wieght"), "x." + name,
            name.isEmpty() ? "y" : name.substring(0, name.length() - 1), SafeTensorsHeader.METADATA, "");
        root.put(renamed, v);
        how.append(" renamed to '").append(renamed).append("';");
        break;
      }
      case 14: {
        Object meta = Fuzz.pick(rng, 5L, List.of("a"), Map.of("k", 1L), Map.of("k", Map.of()), "pt",
            Map.of("format", "pt", "", ""));
        root.put(SafeTensorsHeader.METADATA, meta);
        how.append(" metadata = ").append(meta).append(';');
        break;
      }
      default: { // entries in another order: offsets out of order with respect to the keys
        List<Map.Entry<String, Object>> all = new ArrayList<>(root.entrySet());
        Collections.shuffle(all, new java.util.Random(rng.nextLong()));
        root.clear();
        for (Map.Entry<String, Object> x : all) {
          root.put(x.getKey(), x.getValue());
        }
        how.append(" entries shuffled;");
      }
    }
    return top;
  }

  /** Replaces the whole header: not an object, deeply nested, or empty. */
  private static Object wholeHeader(Map<String, Object> root, SplittableRandom rng, StringBuilder how) {
    int kind = rng.nextInt(6);
    int depth = Fuzz.pick(rng, 10, 1000, 100_000);
    Object top;
    switch (kind) {
      case 0: top = new Raw("[".repeat(depth) + "]".repeat(depth)); break;
      case 1: top = new Raw("{\"a\":".repeat(depth) + "{}" + "}".repeat(depth)); break;
      case 2: top = new Raw("[".repeat(depth)); break; // unterminated
      case 3: top = List.of(root); break;
      case 4: top = "just a string"; break;
      default: top = new LinkedHashMap<>(); break;
    }
    how.append(" whole header = kind ").append(kind).append(" depth ").append(depth).append(';');
    return top;
  }

  private static List<Object> list(Object v) {
    return v instanceof List ? new ArrayList<>((List<?>) v) : new ArrayList<>();
  }

  /** JSON text of the model: maps, lists, strings, integers and raw tokens. */
  static String write(Object v) {
    StringBuilder sb = new StringBuilder();
    write(v, sb);
    return sb.toString();
  }

  private static void write(Object v, StringBuilder sb) {
    if (v instanceof Raw) {
      sb.append(((Raw) v).text());
    } else if (v instanceof String) {
      sb.append(Json.quote((String) v));
    } else if (v instanceof Map) {
      sb.append('{');
      String sep = "";
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        sb.append(sep).append(Json.quote(String.valueOf(e.getKey()))).append(':');
        write(e.getValue(), sb);
        sep = ",";
      }
      sb.append('}');
    } else if (v instanceof List) {
      sb.append('[');
      String sep = "";
      for (Object x : (List<?>) v) {
        sb.append(sep);
        write(x, sb);
        sep = ",";
      }
      sb.append(']');
    } else {
      sb.append(v);
    }
  }
}
