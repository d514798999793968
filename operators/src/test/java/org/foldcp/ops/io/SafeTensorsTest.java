package org.foldcp.ops.io;

import static org.foldcp.ops.io.NpyTest.message;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.WeightTensor;
import org.foldcp.ops.tensor.Bf16;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SafeTensorsTest {
  static final String OUT = "pairformer.layers.0.tri_mul_out.";
  static final String IN = "pairformer.layers.0.tri_mul_in.";

  @TempDir
  Path dir;

  /** A file with two layers: tri_mul_out with the optional biases, tri_mul_in without. */
  private Path twoLayers(String dtype, LayerWeights out, LayerWeights in) {
    Map<String, LayerWeights> layers = new LinkedHashMap<>();
    layers.put(OUT, out);
    layers.put(IN, in);
    Path f = dir.resolve("weights_" + dtype + ".safetensors");
    SafeTensors.writeLayers(f, layers, dtype);
    return f;
  }

  private static float rounded(String dtype, float v) {
    switch (dtype) {
      case "BF16": return Bf16.round(v);
      case "F16": return Half.toFloat(Half.fromFloat(v));
      default: return v;
    }
  }

  // ---- round trips ----

  @ParameterizedTest
  @ValueSource(strings = {"F32", "BF16", "F16", "F64"})
  void prefixPicksOneLayerOfTwo(String dtype) {
    LayerWeights out = LayerWeights.random(8, 1L, true);
    LayerWeights in = LayerWeights.random(8, 2L, false);
    Path f = twoLayers(dtype, out, in);

    LayerWeights gotOut = SafeTensors.readLayer(f, OUT, 8);
    LayerWeights gotIn = SafeTensors.readLayer(f, IN, -1);
    assertEquals(8, gotOut.dim());
    assertEquals(LayerWeights.REQUIRED.size() + LayerWeights.OPTIONAL.size(), gotOut.names().size());
    assertTrue(gotOut.has(LayerWeights.P_IN_B) && gotOut.has(LayerWeights.G_OUT_B));
    assertEquals(LayerWeights.REQUIRED, gotIn.names(), "tri_mul_in was written without biases");
    assertNull(gotIn.bias(LayerWeights.P_IN_B));

    for (String name : out.names()) {
      float[] want = out.get(name);
      float[] got = gotOut.get(name);
      assertEquals(want.length, got.length, name);
      for (int q = 0; q < want.length; q++) {
        assertEquals(rounded(dtype, want[q]), got[q], name + "[" + q + "]");
        assertEquals(want[q], got[q], Math.abs(want[q]) * 0x1.0p-8 + 1e-7, "within " + dtype + " rounding");
      }
    }
    for (String name : in.names()) {
      float[] want = in.get(name);
      float[] got = gotIn.get(name);
      for (int q = 0; q < want.length; q++) {
        assertEquals(rounded(dtype, want[q]), got[q], name + "[" + q + "]");
      }
    }
    if (dtype.equals("F32") || dtype.equals("F64")) {
      assertEquals(out.digest(), gotOut.digest(), "F32 and F64 hold float32 values exactly");
      assertEquals(in.digest(), gotIn.digest());
    } else {
      assertNotEquals(out.digest(), gotOut.digest(), "narrow dtypes round the random weights");
    }
  }

  @Test
  void writeLayerAndPrefixWithoutTrailingDot() {
    LayerWeights w = LayerWeights.random(4, 3L, true);
    Path f = dir.resolve("one.safetensors");
    SafeTensors.writeLayer(f, "model.tri_mul_out", w, "F32");
    assertTrue(SafeTensors.keys(f).contains("model.tri_mul_out.p_in.weight"));
    assertEquals(w.digest(), SafeTensors.readLayer(f, "model.tri_mul_out", 4).digest());
    assertEquals(w.digest(), SafeTensors.readLayer(f, "model.tri_mul_out.", 4).digest());
    assertEquals(Map.of("format", "pt"), SafeTensors.metadata(f));
  }

  @Test
  void emptyPrefixReadsAFileOfOneUnprefixedLayer() {
    LayerWeights w = LayerWeights.random(4, 4L, false);
    Path f = dir.resolve("bare.safetensors");
    SafeTensors.write(f, w.tensors(), "F32", null);
    assertEquals(w.digest(), SafeTensors.readLayer(f, "", 4).digest());
    assertEquals(Map.of(), SafeTensors.metadata(f));
  }

  @Test
  void readAllKeysAndMetadata() {
    Map<String, WeightTensor> t = new LinkedHashMap<>();
    t.put("b.weight", new WeightTensor("b.weight", new long[] {2, 3}, new float[] {1, 2, 3, 4, 5, 6}));
    t.put("a.scalar", new WeightTensor("a.scalar", new long[] {}, new float[] {-7.5f}));
    t.put("caf\u00e9.\"q\"", new WeightTensor("x", new long[] {1}, new float[] {0.25f}));
    Map<String, String> meta = new LinkedHashMap<>();
    meta.put("format", "pt");
    meta.put("note", "line1\nline2 \"quoted\" \\ \u00e9");
    Path f = dir.resolve("all.safetensors");
    SafeTensors.write(f, t, "F32", meta);

    assertEquals(List.of("b.weight", "a.scalar", "caf\u00e9.\"q\""), SafeTensors.keys(f));
    assertEquals(meta, SafeTensors.metadata(f));
    Map<String, WeightTensor> all = SafeTensors.readAll(f);
    assertEquals(List.of("b.weight", "a.scalar", "caf\u00e9.\"q\""), List.copyOf(all.keySet()));
    assertArrayEquals(new long[] {2, 3}, all.get("b.weight").shape());
    assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, all.get("b.weight").values());
    assertArrayEquals(new long[] {}, all.get("a.scalar").shape());
    assertArrayEquals(new float[] {-7.5f}, all.get("a.scalar").values());
    assertArrayEquals(new float[] {0.25f}, all.get("caf\u00e9.\"q\"").values());
  }

  @Test
  void writtenLayoutMatchesTheFormat() throws IOException {
    Map<String, WeightTensor> t = new LinkedHashMap<>();
    t.put("x", new WeightTensor("x", new long[] {4}, new float[] {1f, -2f, 65504f, 1f / 3}));
    Path f = dir.resolve("f16.safetensors");
    SafeTensors.write(f, t, "F16", null);
    byte[] bytes = Files.readAllBytes(f);
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    long n = b.getLong(0);
    assertEquals(0, (8 + n) % 8, "the data buffer starts 8-byte aligned");
    String json = new String(bytes, 8, (int) n, StandardCharsets.UTF_8).strip();
    assertEquals("{\"x\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]}}", json);
    int data = (int) (8 + n);
    assertEquals(data + 8, bytes.length);
    assertEquals(0x3c00, b.getShort(data) & 0xffff);
    assertEquals(0xc000, b.getShort(data + 2) & 0xffff);
    assertEquals(0x7bff, b.getShort(data + 4) & 0xffff);
    assertEquals(0x3555, b.getShort(data + 6) & 0xffff);
  }

  @Test
  void readsHandBuiltHalfAndBfloatBytes() throws IOException {
    ByteBuffer data = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
    data.putShort((short) 0x3c00).putShort((short) 0xc000); // F16 1, -2
    data.putShort((short) 0x3fc0).putShort((short) 0xc020); // BF16 1.5, -2.5
    data.putFloat(0.75f);
    String json = "{\"__metadata__\":{\"k\":\"v\"},"
        + "\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
        + "\"b\":{\"dtype\":\"BF16\",\"shape\":[1,2],\"data_offsets\":[4,8]},"
        + "\"f\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}";
    Path f = RawFiles.safetensors(dir.resolve("hand.safetensors"), json, data.array());
    Map<String, WeightTensor> all = SafeTensors.readAll(f);
    assertArrayEquals(new float[] {1f, -2f}, all.get("h").values());
    assertArrayEquals(new float[] {1.5f, -2.5f}, all.get("b").values());
    assertArrayEquals(new long[] {1, 2}, all.get("b").shape());
    assertArrayEquals(new float[] {0.75f}, all.get("f").values());
    assertEquals(Map.of("k", "v"), SafeTensors.metadata(f));
  }

  @Test
  void keysReadsOnlyTheHeader() throws IOException {
    LayerWeights w = LayerWeights.random(4, 5L, false);
    Path f = dir.resolve("full.safetensors");
    SafeTensors.writeLayer(f, OUT, w, "F32");
    byte[] bytes = Files.readAllBytes(f);
    long n = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
    Path cut = Files.write(dir.resolve("cut.safetensors"), Arrays.copyOf(bytes, (int) (8 + n + 10)));
    assertEquals(SafeTensors.keys(f), SafeTensors.keys(cut), "the data is not needed for keys()");
    assertEquals(8, SafeTensors.keys(cut).size());
    String msg = message(() -> SafeTensors.readAll(cut));
    assertTrue(msg.contains("data_offsets of '" + OUT) && msg.contains("must lie inside the data buffer of 10 bytes"),
        msg);
  }

  @Test
  void unrelatedUnsupportedTensorsDoNotHurtReadLayer() throws IOException {
    LayerWeights w = LayerWeights.random(2, 6L, false);
    Map<String, WeightTensor> t = new LinkedHashMap<>();
    w.tensors().forEach((k, v) -> t.put(OUT + k, v));
    Path good = dir.resolve("good.safetensors");
    SafeTensors.write(good, t, "F32", null);
    // Re-declare the file with an extra I64 tensor elsewhere in the model.
    byte[] bytes = Files.readAllBytes(good);
    long n = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
    String json = new String(bytes, 8, (int) n, StandardCharsets.UTF_8).strip();
    int dataLen = bytes.length - (int) (8 + n);
    json = json.substring(0, json.length() - 1) + ",\"step\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":["
        + dataLen + "," + (dataLen + 8) + "]}}";
    byte[] data = Arrays.copyOfRange(bytes, (int) (8 + n), bytes.length + 8);
    Path f = RawFiles.safetensors(dir.resolve("with_i64.safetensors"), json, data);
    assertEquals(w.digest(), SafeTensors.readLayer(f, OUT, 2).digest());
    String msg = message(() -> SafeTensors.readAll(f));
    assertTrue(msg.contains("'step'") && msg.contains("= I64") && msg.contains("BF16, F16, F32, F64"), msg);
  }

  // ---- bad inputs ----

  @Test
  void unknownPrefixListsExistingLayerPrefixes() {
    Path f = twoLayers("F32", LayerWeights.random(4, 1L, false), LayerWeights.random(4, 2L, false));
    String msg = message(() -> SafeTensors.readLayer(f, "pairformer.layers.0.tri_mul_ot.", 4));
    assertTrue(msg.contains("'pairformer.layers.0.tri_mul_ot.'") && msg.contains("has a name starting with it"), msg);
    assertTrue(msg.contains("'" + OUT + "'") && msg.contains("'" + IN + "'"), msg);
    assertTrue(msg.indexOf("'" + OUT + "'") < msg.indexOf("'" + IN + "'"), "closest prefix first: " + msg);
  }

  @Test
  void prefixAboveTheLayersNamesTheLayersInside() {
    Path f = twoLayers("F32", LayerWeights.random(4, 1L, false), LayerWeights.random(4, 2L, false));
    String msg = message(() -> SafeTensors.readLayer(f, "pairformer.layers.0", 4));
    assertTrue(msg.contains("'pairformer.layers.0.'") && msg.contains("must name one TriMul layer")
        && msg.contains("'" + OUT + "'") && msg.contains("'" + IN + "'"), msg);
  }

  @Test
  void unknownPrefixFallsBackToParentPaths() throws IOException {
    Map<String, WeightTensor> t = new LinkedHashMap<>();
    for (String k : List.of("embed.a.weight", "embed.b.weight", "head.weight")) {
      t.put(k, new WeightTensor(k, new long[] {1}, new float[] {1}));
    }
    Path f = dir.resolve("other.safetensors");
    SafeTensors.write(f, t, "F32", null);
    String msg = message(() -> SafeTensors.readLayer(f, "trunk.", -1));
    assertTrue(msg.contains("'trunk.'") && msg.contains("'embed.a.'") && msg.contains("'embed.b.'")
        && msg.contains("'head.'"), msg);
  }

  @Test
  void unsupportedDtypeOfNeededTensor() throws IOException {
    Path f = withEntry("p_in.weight", "I64", "[2, 1]", 16);
    String msg = message(() -> SafeTensors.readLayer(f, OUT, -1));
    assertTrue(msg.contains("'" + OUT + "p_in.weight'") && msg.contains("= I64")
        && msg.contains("supported tensor dtypes are BF16, F16, F32, F64"), msg);
  }

  @Test
  void offsetsThatDoNotMatchTheShape() throws IOException {
    Path f = withEntry("p_in.weight", "F32", "[2, 1]", 12); // needs 8 bytes, declares 12
    String msg = message(() -> SafeTensors.readLayer(f, OUT, -1));
    assertTrue(msg.contains("data_offsets of '" + OUT + "p_in.weight'") && msg.contains("= [8, 20]")
        && msg.contains("(12 bytes) must equal numel * itemsize = 2 * 4 = 8 bytes for shape [2, 1] of dtype F32"), msg);
  }

  @Test
  void offsetsOutOfRange() throws IOException {
    String json = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}";
    Path f = RawFiles.safetensors(dir.resolve("range.safetensors"), json, new byte[12]);
    String msg = message(() -> SafeTensors.readAll(f));
    assertTrue(msg.contains("data_offsets of 'w'") && msg.contains("= [8, 16]")
        && msg.contains("must lie inside the data buffer of 12 bytes"), msg);
  }

  @Test
  void headerLengthLargerThanFile() throws IOException {
    ByteBuffer b = ByteBuffer.allocate(20).order(ByteOrder.LITTLE_ENDIAN).putLong(5000);
    Path f = Files.write(dir.resolve("long.safetensors"), b.array());
    String msg = message(() -> SafeTensors.keys(f));
    assertTrue(msg.contains("header length") && msg.contains("= 5000") && msg.contains("it has 20 bytes")
        && msg.contains("at most 12"), msg);
    Path tiny = Files.write(dir.resolve("tiny.safetensors"), new byte[3]);
    String tmsg = message(() -> SafeTensors.keys(tiny));
    assertTrue(tmsg.contains("= 3 bytes") && tmsg.contains("8-byte little-endian header length"), tmsg);
  }

  @Test
  void headerNotJson() throws IOException {
    Path f = RawFiles.safetensors(dir.resolve("nj.safetensors"), "{\"w\": {\"dtype\": F32}}", new byte[0]);
    String msg = message(() -> SafeTensors.keys(f));
    assertTrue(msg.contains("{\"w\": {\"dtype\": F32}}") && msg.contains("not parseable as JSON")
        && msg.contains("starting with 'F'"), msg);
  }

  @Test
  void headerEntryWithoutOffsets() throws IOException {
    Path f = RawFiles.safetensors(dir.resolve("no.safetensors"), "{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", new byte[4]);
    String msg = message(() -> SafeTensors.keys(f));
    assertTrue(msg.contains("\"data_offsets\" of header entry 'w'") && msg.contains("= null")
        && msg.contains("\"data_offsets\": [begin, end]"), msg);
  }

  @Test
  void headerNestedTooDeepIsRefusedNotAStackOverflow() throws IOException {
    // found by SafeTensorsFuzzTest: 100,000 '[' overflowed the recursive parser's stack
    String deep = "[".repeat(100_000) + "]".repeat(100_000);
    Path f = RawFiles.safetensors(dir.resolve("deep.safetensors"), deep, new byte[0]);
    String msg = message(() -> SafeTensors.keys(f));
    assertTrue(msg.contains("header of ") && msg.contains("not parseable as JSON")
        && msg.contains("nesting deeper than 64 levels"), msg);
    assertTrue(msg.length() < 1000, "the value is shown as an excerpt: " + msg.length() + " characters");
  }

  @Test
  void headerNotUtf8NotAnObjectOrWithBadMetadata() throws IOException {
    byte[] latin1 = "{\"w\u00e9\":{}}".getBytes(StandardCharsets.ISO_8859_1);
    ByteBuffer b = ByteBuffer.allocate(8 + latin1.length).order(ByteOrder.LITTLE_ENDIAN).putLong(latin1.length).put(latin1);
    Path notUtf8 = Files.write(dir.resolve("latin1.safetensors"), b.array());
    String msg = message(() -> SafeTensors.keys(notUtf8));
    assertTrue(msg.contains("= (" + latin1.length + " bytes)") && msg.contains("the JSON header must be UTF-8"), msg);
    Path array = RawFiles.safetensors(dir.resolve("array.safetensors"), "[1, 2]", new byte[0]);
    msg = message(() -> SafeTensors.keys(array));
    assertTrue(msg.contains("= '[1, 2]'") && msg.contains("must be a JSON object {name:"), msg);
    Path meta = RawFiles.safetensors(dir.resolve("meta.safetensors"), "{\"__metadata__\":{\"format\":7}}", new byte[0]);
    msg = message(() -> SafeTensors.metadata(meta));
    assertTrue(msg.contains("\"__metadata__\" entry 'format'") && msg.contains("= 7:")
        && msg.contains("must be a JSON object of string values"), msg);
  }

  @Test
  void headerEntryWithNonStringDtypeNegativeShapeOrThreeOffsets() throws IOException {
    Path dtype = RawFiles.safetensors(dir.resolve("dt.safetensors"),
        "{\"w\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", new byte[4]);
    String msg = message(() -> SafeTensors.keys(dtype));
    assertTrue(msg.startsWith("\"dtype\" of header entry 'w'") && msg.contains("= 32:")
        && msg.contains("must be {\"dtype\": str"), msg);
    Path negative = RawFiles.safetensors(dir.resolve("neg.safetensors"),
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", new byte[4]);
    msg = message(() -> SafeTensors.keys(negative));
    assertTrue(msg.contains("\"shape\" of header entry 'w'") && msg.contains("= [-1]")
        && msg.contains("with non-negative integers"), msg);
    Path three = RawFiles.safetensors(dir.resolve("three.safetensors"),
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", new byte[4]);
    msg = message(() -> SafeTensors.keys(three));
    assertTrue(msg.contains("\"data_offsets\" of header entry 'w'") && msg.contains("= [0, 4, 8]")
        && msg.contains("[begin, end]"), msg);
  }

  @Test
  void offsetsInReverseOrder() throws IOException {
    Path f = RawFiles.safetensors(dir.resolve("rev.safetensors"),
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", new byte[4]);
    String msg = message(() -> SafeTensors.readAll(f));
    assertTrue(msg.contains("data_offsets of 'w'") && msg.contains("= [4, 0]") && msg.contains("end - begin (-4 bytes)"),
        msg);
  }

  @Test
  void overlappingOffsetsAreRefusedNamingBothTensors() throws IOException {
    // "b" shares bytes 4..8 with "a"; "c" starts where "b" ends and "z" owns no bytes, both fine
    String json = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        + "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
        + "\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]},"
        + "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
    Path f = RawFiles.safetensors(dir.resolve("overlap.safetensors"), json, new byte[16]);
    String msg = message(() -> SafeTensors.keys(f));
    assertTrue(msg.contains("data_offsets of 'b' and 'a'") && msg.contains("= [4, 12] and [0, 8]")
        && msg.contains("the byte ranges of two tensors must not overlap"), msg);
    // a range inside a longer earlier one is caught too, and coinciding ranges are overlaps
    String inside = "{\"long\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        + "\"mid\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
        + "\"end\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]}}";
    Path g = RawFiles.safetensors(dir.resolve("inside.safetensors"), inside, new byte[16]);
    msg = message(() -> SafeTensors.readAll(g));
    assertTrue(msg.contains("data_offsets of 'mid' and 'long'") && msg.contains("= [8, 12] and [0, 16]"), msg);
    String same = "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        + "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    Path h = RawFiles.safetensors(dir.resolve("same.safetensors"), same, new byte[4]);
    msg = message(() -> SafeTensors.readAll(h));
    assertTrue(msg.contains("data_offsets of 'y' and 'x'") && msg.contains("must not overlap"), msg);
  }

  @Test
  void aShapeOf2To40ElementsIsRefusedBeforeAnythingIsAllocated() throws IOException {
    // 2^40 float32 values would be 4 TiB; the offsets (and the file) hold 16 bytes
    Path f = RawFiles.safetensors(dir.resolve("huge.safetensors"),
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1048576,1048576],\"data_offsets\":[0,16]}}", new byte[16]);
    String msg = message(() -> SafeTensors.readAll(f));
    assertTrue(msg.contains("data_offsets of 'w'") && msg.contains("= [0, 16]")
        && msg.contains("numel * itemsize = 1099511627776 * 4 = 4398046511104 bytes for shape [1048576, 1048576]"), msg);
    // offsets that agree with the claim are refused against the file's size, still before allocating
    Path agreeing = RawFiles.safetensors(dir.resolve("agreeing.safetensors"),
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1048576,1048576],\"data_offsets\":[0,4398046511104]}}", new byte[16]);
    msg = message(() -> SafeTensors.readAll(agreeing));
    assertTrue(msg.contains("= [0, 4398046511104]") && msg.contains("must lie inside the data buffer of 16 bytes"), msg);
    // and a product beyond 64 bits is named as such, not as a wrapped or saturated number
    Path overflow = RawFiles.safetensors(dir.resolve("overflow.safetensors"),
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,16]}}", new byte[16]);
    msg = message(() -> SafeTensors.readAll(overflow));
    assertTrue(msg.contains("must equal numel * itemsize, more than 2^63 - 1 bytes for shape [4294967296, 4294967296]"),
        msg);
  }

  @Test
  void badWriteDtypeAndOverflow() {
    Map<String, WeightTensor> t = Map.of("w", new WeightTensor("w", new long[] {2}, new float[] {1f, 70000f}));
    Path f = dir.resolve("w.safetensors");
    String msg = message(() -> SafeTensors.write(f, t, "I32", null));
    assertTrue(msg.contains("dtype = I32") && msg.contains("writable dtypes are BF16, F16, F32, F64"), msg);
    String over = message(() -> SafeTensors.write(f, t, "F16", null));
    assertTrue(over.contains("w[1] = 70000.0") && over.contains("rounds to infinity in F16"), over);
    SafeTensors.write(f, t, "BF16", null);
    assertArrayEquals(new float[] {1f, Bf16.round(70000f)}, SafeTensors.readAll(f).get("w").values());
  }

  @Test
  void aWriteThatFailsHalfWayLeavesThePreviousFileAndNoPartialOne() throws IOException {
    Path f = dir.resolve("kept.safetensors");
    Map<String, WeightTensor> good = Map.of("w", new WeightTensor("w", new long[] {2}, new float[] {1f, 2f}));
    SafeTensors.write(f, good, "F16", null);
    byte[] before = Files.readAllBytes(f);
    // the header is out and the first value written when the second turns out not to fit F16
    Map<String, WeightTensor> bad = Map.of("w", new WeightTensor("w", new long[] {2}, new float[] {3f, 70000f}));
    String msg = message(() -> SafeTensors.write(f, bad, "F16", null));
    assertTrue(msg.contains("rounds to infinity in F16"), msg);
    assertArrayEquals(before, Files.readAllBytes(f), "the previous file is untouched");
    try (java.util.stream.Stream<Path> files = Files.list(dir)) {
      assertEquals(List.of(), files.filter(p -> p.getFileName().toString().endsWith(".partial")).toList(),
          "no temporary file is left behind");
    }
    Path fresh = dir.resolve("never.safetensors");
    message(() -> SafeTensors.write(fresh, bad, "F16", null));
    assertTrue(!Files.exists(fresh), "a failed first write leaves no file at all");
  }

  // ---- LayerWeights' name and shape checks, reached through the reader ----

  @Test
  void missingKeyNamesTheFullKey() {
    Map<String, WeightTensor> t = prefixed(LayerWeights.random(4, 7L, false));
    t.remove(OUT + "g_in.weight");
    Path f = write(t);
    String msg = message(() -> SafeTensors.readLayer(f, OUT, 4));
    assertTrue(msg.contains("'" + OUT + "g_in.weight'") && msg.contains("missing"), msg);
  }

  @Test
  void misShapedKeyNamesFoundAndExpectedShapes() {
    int d = 128;
    Map<String, WeightTensor> t = prefixed(LayerWeights.random(d, 8L, false));
    t.put(OUT + "p_in.weight", new WeightTensor("p_in.weight", new long[] {d, d}, new float[d * d]));
    Path f = write(t);
    String msg = message(() -> SafeTensors.readLayer(f, OUT, d));
    // p_in.weight [128, 128] reads as H = 64: g_in.weight, still [256, 128], is the one that disagrees
    assertTrue(msg.contains(OUT + "g_in.weight") && msg.contains("= [256, 128]") && msg.contains("[128, 128]")
        && msg.contains("H = 64 (H from p_in.weight)"), msg);
  }

  @Test
  void dimensionMismatchWithExpectedDim() {
    Path f = write(prefixed(LayerWeights.random(16, 9L, true)));
    String msg = message(() -> SafeTensors.readLayer(f, OUT, 64));
    assertTrue(msg.contains("'" + OUT + "norm_in.weight'") && msg.contains("= 16") && msg.contains("D = 64"), msg);
  }

  @Test
  void unknownKeyUnderPrefix() {
    Map<String, WeightTensor> t = prefixed(LayerWeights.random(4, 10L, false));
    t.put(OUT + "extra.weight", new WeightTensor("extra.weight", new long[] {3}, new float[3]));
    Path f = write(t);
    String msg = message(() -> SafeTensors.readLayer(f, OUT, 4));
    assertTrue(msg.contains("'" + OUT + "extra.weight'") && msg.contains("unexpected"), msg);
    assertFalse(msg.contains("missing"), msg);
  }

  // ---- OpenFold's names (TriangleMultiplicativeUpdate(c_z, c_hidden) and its fused variant) ----

  /** OpenFold's tensors of layer w under {@code prefix}: split a/b projections, or fused linear_ab_*. */
  private static Map<String, WeightTensor> openFold(String prefix, LayerWeights w, boolean fused) {
    int h = w.hidden();
    int d = w.dim();
    Map<String, WeightTensor> t = new LinkedHashMap<>();
    BiConsumer<String, String> same = (of, ours) -> {
      if (w.has(ours)) {
        t.put(prefix + of, new WeightTensor(of, w.tensors().get(ours).shape(), w.get(ours)));
      }
    };
    same.accept("layer_norm_in.weight", LayerWeights.NORM_IN_W);
    same.accept("layer_norm_in.bias", LayerWeights.NORM_IN_B);
    same.accept("layer_norm_out.weight", LayerWeights.NORM_OUT_W);
    same.accept("layer_norm_out.bias", LayerWeights.NORM_OUT_B);
    same.accept("linear_z.weight", LayerWeights.P_OUT_W);
    same.accept("linear_z.bias", LayerWeights.P_OUT_B);
    same.accept("linear_g.weight", LayerWeights.G_OUT_W);
    same.accept("linear_g.bias", LayerWeights.G_OUT_B);
    if (fused) {
      same.accept("linear_ab_p.weight", LayerWeights.P_IN_W);
      same.accept("linear_ab_g.weight", LayerWeights.G_IN_W);
      same.accept("linear_ab_p.bias", LayerWeights.P_IN_B);
      same.accept("linear_ab_g.bias", LayerWeights.G_IN_B);
    } else {
      for (String[] pg : new String[][] {{"p", LayerWeights.P_IN_W, LayerWeights.P_IN_B}, {"g", LayerWeights.G_IN_W,
          LayerWeights.G_IN_B}}) {
        float[] wv = w.get(pg[1]);
        t.put(prefix + "linear_a_" + pg[0] + ".weight", new WeightTensor("a", new long[] {h, d},
            Arrays.copyOfRange(wv, 0, h * d)));
        t.put(prefix + "linear_b_" + pg[0] + ".weight", new WeightTensor("b", new long[] {h, d},
            Arrays.copyOfRange(wv, h * d, 2 * h * d)));
        if (w.has(pg[2])) {
          float[] bv = w.get(pg[2]);
          t.put(prefix + "linear_a_" + pg[0] + ".bias", new WeightTensor("a", new long[] {h}, Arrays.copyOfRange(bv, 0, h)));
          t.put(prefix + "linear_b_" + pg[0] + ".bias", new WeightTensor("b", new long[] {h},
              Arrays.copyOfRange(bv, h, 2 * h)));
        }
      }
    }
    return t;
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void openFoldNamesLoadAsTheSameLayerWithTheirHiddenWidth(boolean fused) {
    String prefix = "model.evoformer.blocks.3.pair_stack.tri_mul_out.";
    LayerWeights w = LayerWeights.random(48, 32, 17L, true);
    Path f = dir.resolve("openfold_" + fused + ".safetensors");
    Map<String, WeightTensor> t = openFold(prefix, w, fused);
    t.putAll(openFold("model.evoformer.blocks.3.pair_stack.tri_mul_in.", LayerWeights.random(48, 32, 18L, false), fused));
    SafeTensors.write(f, t, "F32", null);
    LayerWeights read = SafeTensors.readLayer(f, prefix, 48);
    assertEquals(32, read.hidden());
    assertEquals(w.digest(), read.digest(), "the same values in our layout: a rows before b rows");
    // the prefix above both layers is named with OpenFold's layers as the choices
    String msg = message(() -> SafeTensors.readLayer(f, "model.evoformer.blocks.3.pair_stack.", 48));
    assertTrue(msg.contains("tri_mul_in.") && msg.contains("tri_mul_out."), msg);
  }

  @Test
  void openFoldNamesMixedWithOursOrHalfAPairAreNamed() {
    LayerWeights w = LayerWeights.random(16, 8, 19L, false);
    Map<String, WeightTensor> t = openFold(OUT, w, false);
    t.put(OUT + "norm_in.bias", new WeightTensor("norm_in.bias", new long[] {16}, new float[16]));
    String mixed = refusalOf(t);
    assertTrue(mixed.contains("'" + OUT + "norm_in.bias'") && mixed.contains("mixed with OpenFold names"), mixed);
    Map<String, WeightTensor> half = openFold(OUT, w, false);
    half.remove(OUT + "linear_b_g.weight");
    String missing = refusalOf(half);
    assertTrue(missing.contains("'" + OUT + "linear_b_g.weight'") && missing.contains("missing"), missing);
    Map<String, WeightTensor> both = openFold(OUT, w, false);
    both.putAll(openFold(OUT, w, true));
    String twice = refusalOf(both);
    assertTrue(twice.contains("alternatives"), twice);
    // the file's own keys in the messages: a transposed linear_z, a missing linear_z
    Map<String, WeightTensor> transposed = openFold(OUT, w, false);
    transposed.put(OUT + "linear_z.weight", new WeightTensor("linear_z.weight", new long[] {8, 16}, new float[128]));
    String shape = refusalOf(transposed);
    assertTrue(shape.contains("shape of '" + OUT + "linear_z.weight' = [8, 16]") && shape.contains("[16, 8]"), shape);
    Map<String, WeightTensor> noZ = openFold(OUT, w, false);
    noZ.remove(OUT + "linear_z.weight");
    String gone = refusalOf(noZ);
    assertTrue(gone.contains("'" + OUT + "linear_z.weight' = missing") && gone.contains("linear_g.weight"), gone);
    // two halves of the wrong width: both named with their prefix
    Map<String, WeightTensor> narrow = openFold(OUT, w, false);
    for (String k : new String[] {"linear_a_p.weight", "linear_b_p.weight"}) {
      narrow.put(OUT + k, new WeightTensor(k, new long[] {8, 12}, new float[96]));
    }
    String halves = refusalOf(narrow);
    assertTrue(halves.contains("shape of '" + OUT + "linear_a_p.weight' + '" + OUT + "linear_b_p.weight' = [16, 12]")
        && halves.contains("[2H, D]"), halves);
  }

  private Map<String, WeightTensor> prefixed(LayerWeights w) {
    Map<String, WeightTensor> t = new LinkedHashMap<>();
    w.tensors().forEach((k, v) -> t.put(OUT + k, v));
    return t;
  }

  /** The message with which reading {@code t} as the layer under OUT (D = 16) is refused. */
  private String refusalOf(Map<String, WeightTensor> t) {
    return message(() -> SafeTensors.readLayer(write(t), OUT, 16));
  }

  private Path write(Map<String, WeightTensor> t) {
    Path f = dir.resolve("layer.safetensors");
    SafeTensors.write(f, t, "F32", null);
    return f;
  }

  /** A layer of D = 1 whose {@code name} entry is declared by hand with dtype, shape and byte length. */
  private Path withEntry(String name, String dtype, String shape, int bytes) throws IOException {
    StringBuilder json = new StringBuilder("{");
    long off = 0;
    for (String req : LayerWeights.REQUIRED) {
      String d = req.equals(name) ? dtype : "F32";
      String s = req.equals(name) ? shape : Arrays.toString(LayerWeights.expectedShape(req, 1));
      long len = req.equals(name) ? bytes : 4L * (req.startsWith("p_in") || req.startsWith("g_in") ? 2 : 1);
      json.append(json.length() == 1 ? "" : ",").append('"').append(OUT).append(req).append("\":{\"dtype\":\"")
          .append(d).append("\",\"shape\":").append(s).append(",\"data_offsets\":[").append(off).append(',')
          .append(off + len).append("]}");
      off += len;
    }
    json.append('}');
    return RawFiles.safetensors(dir.resolve("hand_" + dtype + ".safetensors"), json.toString(), new byte[(int) off]);
  }
}
