package org.foldcp.spark.udf;

import static org.foldcp.spark.udf.UdfFixtures.IN;
import static org.foldcp.spark.udf.UdfFixtures.LAYERS;
import static org.foldcp.spark.udf.UdfFixtures.OUT;
import static org.foldcp.spark.udf.UdfFixtures.expected;
import static org.foldcp.spark.udf.UdfFixtures.maskBytes;
import static org.foldcp.spark.udf.UdfFixtures.pairBytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/** The UDF called directly, as an executor calls it for each row, outside Spark. */
class TriMulUdfTest {
  private static final int D = 8;
  private static final TriMulUdf UDF = new TriMulUdf();

  @TempDir
  static Path dir;
  private static Path weights;
  private static String path;

  @BeforeAll
  static void writeWeights() {
    weights = UdfFixtures.writeWeights(dir, "two-layers.safetensors", D, 21);
    path = weights.toString();
  }

  @Test
  void masksAndUnmaskedTensorsMatchTheCpuBackendBitForBit() {
    LayerStack stack = UdfFixtures.referenceStack(weights, D);
    for (PairTensor x : new PairTensor[] {PairTensor.random(1, 5, D, 1, 0.0), PairTensor.random(1, 9, D, 2, 0.3)}) {
      byte[] out = UDF.call(pairBytes(x), x.rows(), D, maskBytes(x), path, LAYERS);
      assertArrayEquals(expected(x, stack), out, x.toString());
    }
  }

  /** Layers of their own hidden width (H = 12, D = 8) in one file: the shapes decide H, the result is the CPU backend's. */
  @Test
  void weightsOfAHiddenWidthOfTheirOwnRunAsTheFileSays() {
    Map<String, LayerWeights> layers = new LinkedHashMap<>();
    layers.put(UdfFixtures.OUT, LayerWeights.random(D, 12, 31, true));
    layers.put(UdfFixtures.IN, LayerWeights.random(D, 12, 32, false));
    Path file = dir.resolve("hidden-12.safetensors");
    SafeTensors.writeLayers(file, layers, "F32");
    LayerStack stack = UdfFixtures.referenceStack(file, D);
    assertEquals(12, stack.hidden());
    PairTensor x = PairTensor.random(1, 7, D, 5, 0.2);
    assertArrayEquals(expected(x, stack), UDF.call(pairBytes(x), 7, D, maskBytes(x), file.toString(), LAYERS));
  }

  @Test
  void explicitOptionsChangeDirectionAndResidual() {
    PairTensor x = PairTensor.random(1, 6, D, 3, 0.2);
    LayerStack asWritten = LayerStack.of(
        new TriMulLayer(TriMulSpec.of(Direction.INCOMING, false), SafeTensors.readLayer(weights, OUT, D)));
    byte[] out = UDF.call(pairBytes(x), 6, D, maskBytes(x), path, OUT + ":in:noresidual");
    assertArrayEquals(expected(x, asWritten), out);
    assertFalse(Arrays.equals(out, UDF.call(pairBytes(x), 6, D, maskBytes(x), path, OUT)));
  }

  @Test
  void anyIntegerTypeAndFileUrisAreAccepted() {
    PairTensor x = PairTensor.random(1, 4, D, 4, 0.0);
    byte[] want = expected(x, UdfFixtures.referenceStack(weights, D));
    assertArrayEquals(want, UDF.call(pairBytes(x), 4L, (short) D, null, weights.toUri().toString(), LAYERS));
    assertArrayEquals(want, UDF.call(pairBytes(x), new java.math.BigDecimal("4"), D, null, path, LAYERS));
  }

  /** A local path and both spellings of its file: URI name one file: one key, so one cache entry. */
  @Test
  void everySpellingOfOneFileIsOneKey() {
    WeightsKey plain = WeightsKey.of(path, LAYERS);
    assertEquals(location(weights), plain.location());
    assertEquals(plain, WeightsKey.of(weights.toUri().toString(), LAYERS), "file:///...");
    assertEquals(plain, WeightsKey.of("file:" + weights, LAYERS), "file:/...");
  }

  @Test
  void aNullPairGivesNullWhateverTheOtherArguments() {
    assertNull(UDF.call(null, 7, D, null, path, LAYERS));
    assertNull(UDF.call(null, null, null, null, null, null));
  }

  @Test
  void aWeightsFileRewrittenInPlaceIsReadAgain() throws Exception {
    Path file = UdfFixtures.writeWeights(dir, "rewritten.safetensors", D, 100);
    PairTensor x = PairTensor.random(1, 5, D, 5, 0.0);
    byte[] before = UDF.call(pairBytes(x), 5, D, null, file.toString(), LAYERS);
    assertArrayEquals(expected(x, UdfFixtures.referenceStack(file, D)), before);

    FileTime t = Files.getLastModifiedTime(file);
    UdfFixtures.writeWeights(dir, "rewritten.safetensors", D, 200); // same size, new values
    Files.setLastModifiedTime(file, FileTime.fromMillis(t.toMillis() + 2000)); // in case the clock is coarse
    byte[] after = UDF.call(pairBytes(x), 5, D, null, file.toString(), LAYERS);
    assertArrayEquals(expected(x, UdfFixtures.referenceStack(file, D)), after);
    assertFalse(Arrays.equals(before, after));
  }

  @Test
  void badShapesNameTheArgumentAndTheRule() {
    PairTensor x = PairTensor.random(1, 7, D, 6, 0.0);
    byte[] pair = pairBytes(x);
    fails("pair length = 100 bytes: must be 2 * n * n * dim = 2 * 7 * 7 * 8 = 784 bytes (bf16 little-endian, [n][n][dim])",
        () -> UDF.call(new byte[100], 7, D, null, path, LAYERS));
    fails("pair length = 784 bytes: must be 2 * n * n * dim = 2 * 6 * 6 * 8 = 576 bytes",
        () -> UDF.call(pair, 6, D, null, path, LAYERS));
    fails("n = 0: the number of tokens N must be an integer >= 1", () -> UDF.call(pair, 0, D, null, path, LAYERS));
    fails("dim = -8: the pair channel count D must be an integer >= 1", () -> UDF.call(pair, 7, -8, null, path, LAYERS));
    fails("n = null: must be given: the number of tokens N, an integer >= 1",
        () -> UDF.call(pair, null, D, null, path, LAYERS));
    fails("n = 7.5: the number of tokens N must be a whole number", () -> UDF.call(pair, 7.5, D, null, path, LAYERS));
    fails("n = 4294967296: the number of tokens N must be an integer >= 1 (and below 2^31)",
        () -> UDF.call(pair, 1L << 32, D, null, path, LAYERS));
    fails("(n, dim) = (40000, 1024): a pair tensor of 2 * n * n * dim = 3276800000000 bytes does not fit in one BINARY",
        () -> UDF.call(pair, 40000, 1024, null, path, LAYERS));
    fails("mask length = 48 bytes: must be n * n = 7 * 7 = 49 bytes (one uint8 per pair position, 1 = valid), or NULL",
        () -> UDF.call(pair, 7, D, new byte[48], path, LAYERS));
    byte[] mask = new byte[49];
    Arrays.fill(mask, (byte) 1);
    mask[10] = 2;
    fails("mask[0, 1, 3] = 2: mask values must be 0 (masked) or 1 (valid)", () -> UDF.call(pair, 7, D, mask, path, LAYERS));
  }

  @Test
  void badWeightReferencesNameTheFileOrKeyAndTheRule() {
    PairTensor x = PairTensor.random(1, 7, D, 7, 0.0);
    byte[] pair = pairBytes(x);
    Path missing = dir.resolve("nope.safetensors");
    fails("weights file = '" + missing + "': does not exist on this machine (looked at " + missing + ")",
        () -> UDF.call(pair, 7, D, null, missing.toString(), LAYERS));
    fails("weights file = '" + dir + "': must be a regular .safetensors file",
        () -> UDF.call(pair, 7, D, null, dir.toString(), LAYERS));
    fails("weights = 'nosuchfs://bucket/m.safetensors': its scheme has no Hadoop FileSystem on this machine (No"
            + " FileSystem for scheme \"nosuchfs\"): use file:, hdfs:, s3a:",
        () -> UDF.call(pair, 7, D, null, "nosuchfs://bucket/m.safetensors", LAYERS));
    String absent = missing.toUri().toString();
    fails("weights file = '" + absent + "': does not exist on this machine (looked at file:" + missing + ")",
        () -> UDF.call(pair, 7, D, null, absent, LAYERS));
    fails("weights file = '" + dir.toUri() + "': must be a regular .safetensors file, but file:" + dir + " is not",
        () -> UDF.call(pair, 7, D, null, dir.toUri().toString(), LAYERS));
    fails("weights = null: must be the path or URI of a .safetensors file",
        () -> UDF.call(pair, 7, D, null, null, LAYERS));
    fails("key prefix = 'a.tri_mul_inn.': no tensor in " + location(weights) + " (20 tensors) has a name starting with it;"
            + " prefixes present: ['a.tri_mul_in.', 'a.tri_mul_out.']",
        () -> UDF.call(pair, 7, D, null, path, OUT + ",a.tri_mul_inn."));
    fails("option ':both' of entry 1 of layers", () -> UDF.call(pair, 7, D, null, path, OUT + "," + IN + ":both"));
  }

  @Test
  void dMismatchesNameBothSides() {
    PairTensor x16 = PairTensor.random(1, 5, 16, 8, 0.0);
    fails("dim = 16: must equal D = 8 of the layers [a.tri_mul_out.:out, a.tri_mul_in.:in] in " + location(weights)
            + " (their norm_in.weight has 8 values)",
        () -> UDF.call(pairBytes(x16), 5, 16, null, path, LAYERS));

    Map<String, LayerWeights> mixed = new LinkedHashMap<>();
    mixed.put("m.tri_mul_out.", LayerWeights.random(8, 1, false));
    mixed.put("m.tri_mul_in.", LayerWeights.random(16, 2, false));
    Path file = dir.resolve("mixed.safetensors");
    SafeTensors.writeLayers(file, mixed, "F32");
    fails("D of layer 'm.tri_mul_in.' in " + location(file) + " = 16: must equal D = 8 of the first layer 'm.tri_mul_out.'",
        () -> UDF.call(pairBytes(x16), 5, 16, null, file.toString(), "m.tri_mul_out.,m.tri_mul_in."));
  }

  /** How messages name a local file: its real path as Hadoop writes a file: URI. */
  private static String location(Path p) {
    try {
      return "file:" + p.toRealPath();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static void fails(String expectedStart, Executable call) {
    InvalidInputException e = assertThrows(InvalidInputException.class, call);
    assertTrue(e.getMessage().startsWith(expectedStart), "expected a message starting with\n  " + expectedStart
        + "\nbut got\n  " + e.getMessage());
    assertEquals(e.getMessage().trim(), e.getMessage());
  }

  @Test
  void nonFinitePairIsRefusedNamingTheArgumentThePositionTheCountAndTheKey() {
    PairTensor x = PairTensor.random(1, 6, D, 4, 0.0);
    x.set(0, 1, 2, 3, Float.POSITIVE_INFINITY);
    x.set(0, 5, 5, 0, Float.NaN);
    String msg = assertThrows(InvalidInputException.class,
        () -> UDF.call(pairBytes(x), 6, D, null, path, LAYERS)).getMessage();
    assertTrue(msg.startsWith("non-finite values in the pair argument of foldcp_trimul (n = 6, dim = 8) = 2 (NaN or"
        + " Inf; the first at (b, i, j, c) = (0, 1, 2, 3), Infinity)"), msg);
    assertTrue(msg.contains("set spark.foldcp.input.allowNonFinite = true"), msg);
  }
}
