package org.foldcp.ops.layer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.foldcp.ops.InvalidInputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LayerWeightsTest {
  private static final String PREFIX = "pairformer.layers.0.tri_mul_out.";

  static InvalidInputException assertRejected(Executable call, String... parts) {
    InvalidInputException e = assertThrows(InvalidInputException.class, call);
    String msg = e.getMessage();
    for (String p : parts) {
      assertTrue(msg.contains(p), "message \"" + msg + "\" should contain \"" + p + "\"");
    }
    return e;
  }

  /** Deep copy of a layer's tensors (values cloned), in a mutable map. */
  private static Map<String, WeightTensor> tensorsCopy(LayerWeights w) {
    Map<String, WeightTensor> out = new LinkedHashMap<>();
    w.tensors().forEach((k, t) -> out.put(k, new WeightTensor(k, t.shape(), t.values().clone())));
    return out;
  }

  private static Map<String, WeightTensor> valid(int d, boolean biases) {
    return tensorsCopy(LayerWeights.random(d, 5, biases));
  }

  private static WeightTensor tensor(String name, long[] shape, float fill) {
    long count = 1;
    for (long s : shape) {
      count *= s;
    }
    float[] v = new float[(int) count];
    java.util.Arrays.fill(v, fill);
    return new WeightTensor(name, shape, v);
  }

  // ---------------------------------------------------------------- shapes and names

  @Test
  void expectedShapes() {
    int d = 64;
    assertArrayEquals(new long[] {64}, LayerWeights.expectedShape(LayerWeights.NORM_IN_W, d));
    assertArrayEquals(new long[] {64}, LayerWeights.expectedShape(LayerWeights.NORM_IN_B, d));
    assertArrayEquals(new long[] {64}, LayerWeights.expectedShape(LayerWeights.NORM_OUT_W, d));
    assertArrayEquals(new long[] {64}, LayerWeights.expectedShape(LayerWeights.NORM_OUT_B, d));
    assertArrayEquals(new long[] {128, 64}, LayerWeights.expectedShape(LayerWeights.P_IN_W, d));
    assertArrayEquals(new long[] {128, 64}, LayerWeights.expectedShape(LayerWeights.G_IN_W, d));
    assertArrayEquals(new long[] {64, 64}, LayerWeights.expectedShape(LayerWeights.P_OUT_W, d));
    assertArrayEquals(new long[] {64, 64}, LayerWeights.expectedShape(LayerWeights.G_OUT_W, d));
    assertArrayEquals(new long[] {128}, LayerWeights.expectedShape(LayerWeights.P_IN_B, d));
    assertArrayEquals(new long[] {128}, LayerWeights.expectedShape(LayerWeights.G_IN_B, d));
    assertArrayEquals(new long[] {64}, LayerWeights.expectedShape(LayerWeights.P_OUT_B, d));
    assertArrayEquals(new long[] {64}, LayerWeights.expectedShape(LayerWeights.G_OUT_B, d));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> LayerWeights.expectedShape("p_in.scale", d));
    assertTrue(e.getMessage().contains("p_in.scale"));
  }

  @ParameterizedTest(name = "D = {0}")
  @ValueSource(ints = {1, 4, 16, 64})
  void randomWithoutBiasesHasExactlyTheRequiredNames(int d) {
    LayerWeights w = LayerWeights.random(d, 3, false);
    assertEquals(d, w.dim());
    assertEquals(LayerWeights.REQUIRED, w.names());
    Map<String, WeightTensor> t = w.tensors();
    assertEquals(LayerWeights.REQUIRED, new ArrayList<>(t.keySet()));
    for (String name : LayerWeights.REQUIRED) {
      assertTrue(w.has(name), name);
      assertTrue(t.get(name).hasShape(LayerWeights.expectedShape(name, d)), name + " " + t.get(name).shapeString());
      assertEquals(name, t.get(name).name());
      long[] s = LayerWeights.expectedShape(name, d);
      assertEquals(s.length == 1 ? s[0] : s[0] * s[1], w.get(name).length, name);
    }
    for (String name : LayerWeights.OPTIONAL) {
      assertFalse(w.has(name), name);
      assertNull(w.bias(name), name);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> w.get(name));
      assertTrue(e.getMessage().contains(name));
    }
  }

  @Test
  void randomWithBiasesHasEveryName() {
    int d = 8;
    LayerWeights w = LayerWeights.random(d, 3, true);
    List<String> all = new ArrayList<>(LayerWeights.REQUIRED);
    all.addAll(LayerWeights.OPTIONAL);
    assertEquals(all, w.names());
    for (String name : all) {
      long[] s = LayerWeights.expectedShape(name, d);
      assertTrue(w.tensors().get(name).hasShape(s), name);
    }
    for (String name : LayerWeights.OPTIONAL) {
      assertEquals(LayerWeights.expectedShape(name, d)[0], w.bias(name).length, name);
    }
    assertTrue(w.toString().contains("biases=4"), w.toString());
    assertTrue(LayerWeights.random(d, 3, false).toString().contains("biases=0"));
  }

  @Test
  void randomUsesPyTorchDefaultScales() {
    int d = 16;
    LayerWeights w = LayerWeights.random(d, 9, true);
    double bound = 1.0 / Math.sqrt(d);
    for (String name : w.names()) {
      for (float v : w.get(name)) {
        assertTrue(Float.isFinite(v));
        if (name.startsWith("norm_") && name.endsWith(".weight")) {
          assertTrue(v >= 0.8f && v <= 1.2f, name + ": " + v);
        } else if (name.startsWith("norm_")) {
          assertTrue(Math.abs(v) <= 0.2f, name + ": " + v);
        } else {
          assertTrue(Math.abs(v) <= bound, name + ": " + v);
        }
      }
    }
  }

  @Test
  void randomRejectsNonPositiveD() {
    assertRejected(() -> LayerWeights.random(0, 1, false), "D = 0", "must be >= 1");
    assertRejected(() -> LayerWeights.random(-4, 1, true), "D = -4", "must be >= 1");
  }

  // ---------------------------------------------------------------- digest

  @Test
  void digestIsEqualForEqualSeeds() {
    LayerWeights a = LayerWeights.random(16, 77, true);
    LayerWeights b = LayerWeights.random(16, 77, true);
    assertEquals(a.digest(), b.digest());
    assertEquals(64, a.digest().length(), "hex SHA-256");
    assertTrue(a.digest().matches("[0-9a-f]{64}"));
    assertNotEquals(a.digest(), LayerWeights.random(16, 78, true).digest());
    assertNotEquals(a.digest(), LayerWeights.random(16, 77, false).digest(), "biases are part of the digest");
    assertTrue(a.toString().contains(a.digest().substring(0, 12)));
  }

  @Test
  void digestSurvivesARoundTripThroughTensors() {
    LayerWeights a = LayerWeights.random(16, 77, true);
    LayerWeights b = LayerWeights.fromTensors(tensorsCopy(a), PREFIX, 16);
    assertEquals(a.digest(), b.digest());
    assertEquals(a.names(), b.names());
  }

  @Test
  void digestChangesWithOneUlpInOneValue() {
    LayerWeights a = LayerWeights.random(16, 77, false);
    for (String name : LayerWeights.REQUIRED) {
      Map<String, WeightTensor> t = tensorsCopy(a);
      float[] v = t.get(name).values();
      int q = v.length / 2;
      v[q] = Math.nextUp(v[q]);
      LayerWeights b = LayerWeights.fromTensors(t, "", 16);
      assertNotEquals(a.digest(), b.digest(), "one ulp in " + name + "[" + q + "]");
    }
  }

  @Test
  void digestDistinguishesZeroSigns() {
    Map<String, WeightTensor> t = valid(4, false);
    t.get(LayerWeights.NORM_IN_B).values()[0] = 0.0f;
    String plus = LayerWeights.fromTensors(t, "", 4).digest();
    t.get(LayerWeights.NORM_IN_B).values()[0] = -0.0f;
    String minus = LayerWeights.fromTensors(t, "", 4).digest();
    assertNotEquals(plus, minus, "the digest is over the float bits");
  }

  @Test
  void layerIsImmutableAndItsDigestStaysTrue() {
    Map<String, WeightTensor> source = valid(8, false);
    LayerWeights w = LayerWeights.fromTensors(source, "", 8);
    String digest = w.digest();
    float first = w.get(LayerWeights.P_IN_W)[0];

    source.get(LayerWeights.P_IN_W).values()[0] = first + 1; // the caller's array
    w.tensors().get(LayerWeights.G_IN_W).values()[0] += 1; // the array handed out by tensors()

    assertEquals(first, w.get(LayerWeights.P_IN_W)[0], "the layer must not alias the caller's arrays");
    assertEquals(digest, LayerWeights.fromTensors(tensorsCopy(w), "", 8).digest(),
        "the cached digest must still describe the layer's values");
  }

  @Test
  void serializationKeepsValuesAndDigest() throws Exception {
    LayerWeights w = LayerWeights.random(8, 2, true);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(w);
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      LayerWeights back = (LayerWeights) in.readObject();
      assertEquals(w.digest(), back.digest());
      assertEquals(w.names(), back.names());
      assertEquals(w.digest(), LayerWeights.fromTensors(tensorsCopy(back), "", 8).digest());
    }
  }

  // ---------------------------------------------------------------- fromTensors

  @Test
  void fromTensorsTakesDFromNormInWhenNotExpected() {
    LayerWeights w = LayerWeights.fromTensors(valid(12, true), PREFIX, -1);
    assertEquals(12, w.dim());
    assertEquals(12, LayerWeights.fromTensors(valid(12, false), null, 12).dim());
  }

  @Test
  void fromTensorsAcceptsAnySubsetOfBiases() {
    Map<String, WeightTensor> t = valid(8, true);
    t.remove(LayerWeights.G_IN_B);
    t.remove(LayerWeights.P_OUT_B);
    LayerWeights w = LayerWeights.fromTensors(t, PREFIX, 8);
    assertTrue(w.has(LayerWeights.P_IN_B));
    assertFalse(w.has(LayerWeights.G_IN_B));
    assertNull(w.bias(LayerWeights.P_OUT_B));
    assertEquals(8, w.bias(LayerWeights.G_OUT_B).length);
    List<String> expect = new ArrayList<>(LayerWeights.REQUIRED);
    expect.add(LayerWeights.P_IN_B);
    expect.add(LayerWeights.G_OUT_B);
    assertEquals(expect, w.names(), "required first, then the present biases in fixed order");
  }

  @Test
  void fromTensorsOrderDoesNotMatter() {
    Map<String, WeightTensor> t = valid(8, true);
    List<String> keys = new ArrayList<>(t.keySet());
    java.util.Collections.reverse(keys);
    Map<String, WeightTensor> reversed = new LinkedHashMap<>();
    keys.forEach(k -> reversed.put(k, t.get(k)));
    assertEquals(LayerWeights.fromTensors(t, "", 8).digest(), LayerWeights.fromTensors(reversed, "", 8).digest());
  }

  @ParameterizedTest(name = "missing {0}")
  @ValueSource(strings = {"norm_in.weight", "norm_in.bias", "p_in.weight", "g_in.weight",
      "norm_out.weight", "norm_out.bias", "p_out.weight", "g_out.weight"})
  void fromTensorsRejectsAMissingKey(String name) {
    Map<String, WeightTensor> t = valid(64, false);
    t.remove(name);
    assertRejected(() -> LayerWeights.fromTensors(t, PREFIX, 64),
        "weight key '" + PREFIX + name + "' = missing", "a TriMul layer needs", "found [");
  }

  @Test
  void missingGOutNamesTheFullPrefixedKey() {
    Map<String, WeightTensor> t = valid(64, false);
    t.remove(LayerWeights.G_OUT_W);
    assertRejected(() -> LayerWeights.fromTensors(t, PREFIX, 64),
        "pairformer.layers.0.tri_mul_out.g_out.weight", "missing");
  }

  @Test
  void fromTensorsRejectsAnEmptyMap() {
    assertRejected(() -> LayerWeights.fromTensors(new LinkedHashMap<>(), PREFIX, 64),
        PREFIX + "norm_in.weight", "missing", "found []");
  }

  @Test
  void fromTensorsRejectsAMisShapedWeight() {
    Map<String, WeightTensor> t = valid(64, false);
    t.put(LayerWeights.P_IN_W, tensor(LayerWeights.P_IN_W, new long[] {128, 128}, 0.01f));
    assertRejected(() -> LayerWeights.fromTensors(t, PREFIX, 64),
        "shape of '" + PREFIX + "p_in.weight' = [128, 128]", "must be [2H, D]", "D = 64");
  }

  /** H comes from p_in.weight; a tensor that disagrees with it is named with the H it was checked against. */
  @Test
  void aHiddenWidthIsTakenFromPInAndTheOthersAreCheckedAgainstIt() {
    LayerWeights w = LayerWeights.random(64, 32, 5, true);
    assertEquals(64, w.dim());
    assertEquals(32, w.hidden());
    assertArrayEquals(new long[] {64, 32}, w.tensors().get(LayerWeights.P_OUT_W).shape());
    assertArrayEquals(new long[] {32}, w.tensors().get(LayerWeights.NORM_OUT_W).shape());
    assertArrayEquals(new long[] {64}, w.tensors().get(LayerWeights.G_OUT_B).shape());
    LayerWeights back = LayerWeights.fromTensors(w.tensors(), PREFIX, 64);
    assertEquals(w.digest(), back.digest());
    assertTrue(w.toString().contains("H=32"), w.toString());
    Map<String, WeightTensor> t = new LinkedHashMap<>(w.tensors());
    t.put(LayerWeights.NORM_OUT_W, tensor(LayerWeights.NORM_OUT_W, new long[] {64}, 1f));
    assertRejected(() -> LayerWeights.fromTensors(t, PREFIX, 64),
        "shape of '" + PREFIX + "norm_out.weight' = [64]", "must be [32]", "H = 32 (H from p_in.weight)");
    Map<String, WeightTensor> odd = new LinkedHashMap<>(w.tensors());
    odd.put(LayerWeights.P_IN_W, tensor(LayerWeights.P_IN_W, new long[] {63, 64}, 0.01f));
    assertRejected(() -> LayerWeights.fromTensors(odd, PREFIX, 64), "p_in.weight' = [63, 64]", "[2H, D]");
  }

  @Test
  void fromTensorsRejectsATransposedWeight() {
    Map<String, WeightTensor> t = valid(8, false);
    t.put(LayerWeights.G_IN_W, tensor(LayerWeights.G_IN_W, new long[] {8, 16}, 0.01f));
    assertRejected(() -> LayerWeights.fromTensors(t, PREFIX, 8),
        PREFIX + "g_in.weight", "[8, 16]", "must be [16, 8]");
  }

  @Test
  void fromTensorsRejectsAMisShapedBias() {
    Map<String, WeightTensor> t = valid(8, true);
    t.put(LayerWeights.P_IN_B, tensor(LayerWeights.P_IN_B, new long[] {8}, 0f));
    assertRejected(() -> LayerWeights.fromTensors(t, PREFIX, 8),
        PREFIX + "p_in.bias' = [8]", "must be [16]");
  }

  @Test
  void fromTensorsRejectsAnotherD() {
    Map<String, WeightTensor> t = valid(32, false);
    assertRejected(() -> LayerWeights.fromTensors(t, PREFIX, 64),
        "D of '" + PREFIX + "norm_in.weight' = 32", "channel count D = 64");
  }

  @Test
  void fromTensorsRejectsAnUnknownKey() {
    Map<String, WeightTensor> t = valid(8, false);
    t.put("p_in.weight_scale", tensor("p_in.weight_scale", new long[] {1}, 1f));
    assertRejected(() -> LayerWeights.fromTensors(t, PREFIX, 8),
        "'" + PREFIX + "p_in.weight_scale'", "unexpected", "optional biases");
  }

  @Test
  void fromTensorsRejectsANestedLayerKey() {
    // e.g. a prefix one level too short picks up the tensors of a sibling layer
    Map<String, WeightTensor> t = valid(8, false);
    t.put("tri_mul_in.p_in.weight", tensor("tri_mul_in.p_in.weight", new long[] {16, 8}, 1f));
    assertRejected(() -> LayerWeights.fromTensors(t, "pairformer.layers.0.", 8),
        "'pairformer.layers.0.tri_mul_in.p_in.weight'", "unexpected");
  }

  @ParameterizedTest(name = "{0} in {1}")
  @org.junit.jupiter.params.provider.CsvSource({
      "NaN, p_out.weight",
      "Infinity, norm_in.bias",
      "-Infinity, g_in.weight",
      "NaN, g_out.bias",
  })
  void fromTensorsRejectsNonFiniteValues(String value, String name) {
    Map<String, WeightTensor> t = valid(8, true);
    float bad = Float.parseFloat(value);
    float[] v = t.get(name).values();
    v[v.length - 1] = bad;
    assertRejected(() -> LayerWeights.fromTensors(t, PREFIX, 8),
        "a value of '" + PREFIX + name + "' = " + value, "weights must be finite");
  }

  @Test
  void fromTensorsRejectsNormInOfRankTwo() {
    Map<String, WeightTensor> t = valid(64, false);
    t.put(LayerWeights.NORM_IN_W, tensor(LayerWeights.NORM_IN_W, new long[] {64, 1}, 1f));
    assertRejected(() -> LayerWeights.fromTensors(t, PREFIX, 64),
        "shape of '" + PREFIX + "norm_in.weight' = [64, 1]", "must be [D], one value per pair channel");
    t.put(LayerWeights.NORM_IN_W, tensor(LayerWeights.NORM_IN_W, new long[] {}, 1f));
    assertRejected(() -> LayerWeights.fromTensors(t, PREFIX, -1), "norm_in.weight' = []", "must be [D]");
    t.put(LayerWeights.NORM_IN_W, tensor(LayerWeights.NORM_IN_W, new long[] {0}, 1f));
    assertRejected(() -> LayerWeights.fromTensors(t, PREFIX, -1), "norm_in.weight' = [0]", "must be [D]");
  }

  @Test
  void noPrefixGivesBareNames() {
    Map<String, WeightTensor> t = valid(8, false);
    t.remove(LayerWeights.NORM_OUT_B);
    assertRejected(() -> LayerWeights.fromTensors(t, null, 8), "weight key 'norm_out.bias' = missing");
  }

  @Test
  void fromTensorsChecksByMapKey() {
    Map<String, WeightTensor> t = valid(8, false);
    WeightTensor p = t.get(LayerWeights.P_IN_W);
    t.put(LayerWeights.P_IN_W, new WeightTensor(PREFIX + LayerWeights.P_IN_W, p.shape(), p.values()));
    assertEquals(8, LayerWeights.fromTensors(t, PREFIX, 8).dim());
  }

  // ---------------------------------------------------------------- WeightTensor

  @Test
  void weightTensorBasics() {
    long[] shape = {2, 3};
    WeightTensor w = new WeightTensor("x", shape, new float[6]);
    shape[0] = 99;
    assertTrue(w.hasShape(2, 3), "the shape is copied on the way in");
    w.shape()[1] = 99;
    assertTrue(w.hasShape(2, 3), "and on the way out");
    assertEquals("[2, 3]", w.shapeString());
    assertFalse(w.hasShape(3, 2));
    assertFalse(w.hasShape(6));
    assertEquals("x", w.name());
    assertTrue(new WeightTensor("s", new long[] {}, new float[1]).hasShape(), "a scalar has one value");
  }

  @Test
  void weightTensorRejectsAValueCountThatDoesNotMatchItsShape() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new WeightTensor("p_in.weight", new long[] {4, 2}, new float[7]));
    assertTrue(e.getMessage().contains("'p_in.weight'"), e.getMessage());
    assertTrue(e.getMessage().contains("[4, 2]"), e.getMessage());
    assertTrue(e.getMessage().contains("= 7") && e.getMessage().contains("product of its shape"), e.getMessage());
  }

  @Test
  void weightTensorRejectsAShapeWhoseProductOverflows() {
    // 2^32 * 2^32 wraps to 0 in a long: the empty array must not pass for 2^64 values
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new WeightTensor("w", new long[] {1L << 32, 1L << 32}, new float[0]));
    assertTrue(e.getMessage().startsWith("shape of 'w' = [4294967296, 4294967296]: the element count overflows 64 bits"),
        e.getMessage());
    assertEquals(0, new WeightTensor("z", new long[] {1L << 62, 1L << 62, 0}, new float[0]).values().length,
        "a zero dimension makes the product zero");
  }

  @Test
  void weightTensorOfManyDimensionsIsCheckedInLinearTime() {
    // found by SafeTensorsFuzzTest: a header shape of 5,000 ones cost 250 MB of garbage, one
    // Arrays.toString(shape) per dimension; 10^6 ones would have run for hours
    long[] ones = new long[1_000_000];
    java.util.Arrays.fill(ones, 1);
    assertTimeoutPreemptively(java.time.Duration.ofSeconds(10), () -> new WeightTensor("w", ones, new float[1]));
  }

  @Test
  void weightTensorRejectsNegativeDimensions() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new WeightTensor("x", new long[] {-2, -4}, new float[8]));
    assertTrue(e.getMessage().startsWith("shape of 'x' = [-2, -4]: dimensions must be >= 0"), e.getMessage());
  }
}
