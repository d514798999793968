package org.foldcp.ops.layer;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;
import org.foldcp.ops.InvalidInputException;

/**
 * The weights of one TriMul layer under their PyTorch state-dict names (docs/design.md section 1),
 * held as float32 row-major (out_features x in_features), exactly as nn.Linear stores them.
 *
 * <p>Two widths: the pair width D (the pair tensor's channels: norm_in, g_out, the output) and
 * the hidden width H (the channels of a, b and the triangle product: p_in and g_in map D -> 2H,
 * norm_out has H values, p_out maps H -> D). The shapes decide both: D from norm_in.weight, H
 * from p_in.weight's rows / 2. Boltz and AlphaFold3 use H = D; OpenFold's c_hidden may differ.
 *
 * <p>Construction checks every name and shape against D and H, so a layer that exists is a layer
 * that can run. The digest identifies the values bit for bit; CP ranks compare digests at
 * construction so that no rank silently computes with different weights.
 */
public final class LayerWeights implements Serializable {
  private static final long serialVersionUID = 2L;

  public static final String NORM_IN_W = "norm_in.weight";
  public static final String NORM_IN_B = "norm_in.bias";
  public static final String P_IN_W = "p_in.weight";
  public static final String G_IN_W = "g_in.weight";
  public static final String NORM_OUT_W = "norm_out.weight";
  public static final String NORM_OUT_B = "norm_out.bias";
  public static final String P_OUT_W = "p_out.weight";
  public static final String G_OUT_W = "g_out.weight";
  public static final String P_IN_B = "p_in.bias";
  public static final String G_IN_B = "g_in.bias";
  public static final String P_OUT_B = "p_out.bias";
  public static final String G_OUT_B = "g_out.bias";

  /** Required names, in a fixed order (also the digest order). */
  public static final List<String> REQUIRED = List.of(
      NORM_IN_W, NORM_IN_B, P_IN_W, G_IN_W, NORM_OUT_W, NORM_OUT_B, P_OUT_W, G_OUT_W);
  /** Optional bias names. */
  public static final List<String> OPTIONAL = List.of(P_IN_B, G_IN_B, P_OUT_B, G_OUT_B);

  private final int dim;
  private final int hidden;
  private final Map<String, float[]> values; // name -> values, REQUIRED then present OPTIONAL
  private final String digest;

  private LayerWeights(int dim, int hidden, Map<String, float[]> values) {
    this.dim = dim;
    this.hidden = hidden;
    this.values = values;
    this.digest = computeDigest(dim, hidden, values);
  }

  /** The expected shape of {@code name} for pair width D = hidden width H. */
  public static long[] expectedShape(String name, int d) {
    return expectedShape(name, d, d);
  }

  /** The expected shape of {@code name} for pair width D and hidden width H. */
  public static long[] expectedShape(String name, int d, int h) {
    switch (name) {
      case NORM_IN_W: case NORM_IN_B: case P_OUT_B: case G_OUT_B:
        return new long[] {d};
      case NORM_OUT_W: case NORM_OUT_B:
        return new long[] {h};
      case P_IN_B: case G_IN_B:
        return new long[] {2L * h};
      case P_IN_W: case G_IN_W:
        return new long[] {2L * h, d};
      case P_OUT_W:
        return new long[] {d, h};
      case G_OUT_W:
        return new long[] {d, d};
      default:
        throw new IllegalArgumentException("not a TriMul weight name: " + name);
    }
  }

  /**
   * Builds and validates a layer from tensors keyed by their names without prefix: ours, or
   * OpenFold's ({@link OpenFoldNames}).
   *
   * @param keyPrefix prefix the names had in their file, used only in error messages
   * @param expectedDim the pair dimension D the caller needs, or -1 to take it from norm_in.weight
   */
  public static LayerWeights fromTensors(Map<String, WeightTensor> given, String keyPrefix, int expectedDim) {
    String prefix = keyPrefix == null ? "" : keyPrefix;
    Map<String, WeightTensor> tensors = OpenFoldNames.toOurs(given, prefix);
    boolean openFold = tensors != given; // messages name the file's own keys
    WeightTensor normIn = tensors.get(NORM_IN_W);
    if (normIn == null) {
      throw missing(prefix, NORM_IN_W, given, openFold);
    }
    long[] s = normIn.shape();
    InvalidInputException.require(s.length == 1 && s[0] >= 1, "shape of '" + shownKey(prefix, normIn, NORM_IN_W) + "'",
        normIn.shapeString(), "must be [D], one value per pair channel");
    int d = (int) s[0];
    if (expectedDim >= 0) {
      InvalidInputException.require(d == expectedDim, "D of '" + shownKey(prefix, normIn, NORM_IN_W) + "'", d,
          "must equal the pair tensor's channel count D = " + expectedDim);
    }
    WeightTensor pIn = tensors.get(P_IN_W);
    if (pIn == null) {
      throw missing(prefix, P_IN_W, given, openFold);
    }
    long[] ps = pIn.shape();
    InvalidInputException.require(ps.length == 2 && ps[0] >= 2 && ps[0] % 2 == 0 && ps[1] == d,
        "shape of '" + shownKey(prefix, pIn, P_IN_W) + "'", pIn.shapeString(),
        "must be [2H, D] with D = " + d + ": the projections of a and b, H rows each");
    int h = (int) (ps[0] / 2);
    Map<String, float[]> vals = new LinkedHashMap<>();
    for (String name : REQUIRED) {
      WeightTensor t = tensors.get(name);
      if (t == null) {
        throw missing(prefix, name, given, openFold);
      }
      vals.put(name, checked(prefix, name, t, d, h));
    }
    for (String name : OPTIONAL) {
      WeightTensor t = tensors.get(name);
      if (t != null) {
        vals.put(name, checked(prefix, name, t, d, h));
      }
    }
    TreeSet<String> unknown = new TreeSet<>(tensors.keySet());
    unknown.removeAll(REQUIRED);
    unknown.removeAll(OPTIONAL);
    if (!unknown.isEmpty()) {
      throw InvalidInputException.of("weight key '" + prefix + unknown.first() + "'", "unexpected",
          "a TriMul layer has only " + REQUIRED + " and the optional biases " + OPTIONAL
              + " under its prefix '" + prefix + "'");
    }
    return new LayerWeights(d, h, vals);
  }

  private static InvalidInputException missing(String prefix, String name, Map<String, WeightTensor> present,
                                               boolean openFold) {
    return InvalidInputException.of("weight key '" + prefix + (openFold ? OpenFoldNames.theirs(name) : name) + "'",
        "missing", "a TriMul layer needs " + REQUIRED + (openFold ? " (under OpenFold's names)" : "")
            + " under its prefix; found " + new TreeSet<>(present.keySet()));
  }

  /** The name a message gives tensor {@code t} of our name {@code name}: the file's own (OpenFold's) where it differs. */
  private static String shown(WeightTensor t, String name) {
    return t.name() == null || t.name().equals(name) ? name : t.name();
  }

  /** {@code prefix} before the shown name, before each of two stacked halves ("a + b") alike. */
  private static String shownKey(String prefix, WeightTensor t, String name) {
    return prefix + shown(t, name).replace(" + ", "' + '" + prefix);
  }

  /** Checks shape and values under the map key {@code name}; returns a private copy (the digest must stay true). */
  private static float[] checked(String prefix, String name, WeightTensor t, int d, int h) {
    long[] want = expectedShape(name, d, h);
    String key = shownKey(prefix, t, name);
    InvalidInputException.require(t.hasShape(want), "shape of '" + key + "'", t.shapeString(),
        "must be " + Arrays.toString(want) + " for D = " + d + ", H = " + h + " (H from " + P_IN_W + ")");
    for (float v : t.values()) {
      if (!Float.isFinite(v)) {
        throw InvalidInputException.of("a value of '" + key + "'", v, "weights must be finite");
      }
    }
    return t.values().clone();
  }

  /**
   * Random weights with PyTorch's default scales: Linear ~ U(-1/sqrt(in), 1/sqrt(in)), LayerNorm
   * weight near 1 and bias near 0, so that outputs have realistic magnitudes.
   */
  public static LayerWeights random(int d, long seed, boolean withBiases) {
    return random(d, d, seed, withBiases);
  }

  /** As {@link #random(int, long, boolean)}, with hidden width {@code h}. */
  public static LayerWeights random(int d, int h, long seed, boolean withBiases) {
    InvalidInputException.require(d >= 1, "D", d, "the pair channel count must be >= 1");
    InvalidInputException.require(h >= 1, "H", h, "the hidden channel count must be >= 1");
    SplittableRandom rng = new SplittableRandom(seed);
    Map<String, WeightTensor> t = new LinkedHashMap<>();
    List<String> names = new ArrayList<>(REQUIRED);
    if (withBiases) {
      names.addAll(OPTIONAL);
    }
    for (String name : names) {
      long[] shape = expectedShape(name, d, h);
      int count = (int) (shape.length == 1 ? shape[0] : shape[0] * shape[1]);
      float[] v = new float[count];
      boolean norm = name.startsWith("norm_");
      double bound = 1.0 / Math.sqrt(shape.length == 2 ? shape[1] : d);
      for (int q = 0; q < count; q++) {
        double u = rng.nextDouble() * 2 - 1;
        if (norm) {
          v[q] = (float) (name.endsWith(".weight") ? 1.0 + 0.2 * u : 0.2 * u);
        } else {
          v[q] = (float) (bound * u);
        }
      }
      t.put(name, new WeightTensor(name, shape, v));
    }
    return fromTensors(t, "", d);
  }

  public int dim() { return dim; }

  /** The hidden width H: channels of a, b and the triangle product. */
  public int hidden() { return hidden; }

  /** The values of {@code name}; live storage shared with the digest: never modify. */
  public float[] get(String name) {
    float[] v = values.get(name);
    if (v == null) {
      throw new IllegalArgumentException("no weight '" + name + "' (present: " + values.keySet() + ")");
    }
    return v;
  }

  /** The bias {@code name}, or null where the layer has none. */
  public float[] bias(String name) { return values.get(name); }

  public boolean has(String name) { return values.containsKey(name); }

  /** Names present, required first. */
  public List<String> names() { return new ArrayList<>(values.keySet()); }

  /** Tensors under their names (for writing a layer back to a file). */
  public Map<String, WeightTensor> tensors() {
    Map<String, WeightTensor> out = new LinkedHashMap<>();
    values.forEach((k, v) -> out.put(k, new WeightTensor(k, expectedShape(k, dim, hidden), v.clone())));
    return out;
  }

  /** SHA-256 over D (and H where it differs), names and the float bits: equal digests mean bit-identical layers. */
  public String digest() { return digest; }

  private static String computeDigest(int dim, int hidden, Map<String, float[]> values) {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      // H joins only where it differs from D, so the digests of H = D layers stay what they were
      md.update((Integer.toString(dim) + (hidden == dim ? "" : "/" + hidden)).getBytes(StandardCharsets.UTF_8));
      byte[] buf = new byte[4];
      for (Map.Entry<String, float[]> e : values.entrySet()) {
        md.update(e.getKey().getBytes(StandardCharsets.UTF_8));
        for (float f : e.getValue()) {
          int b = Float.floatToRawIntBits(f);
          buf[0] = (byte) b;
          buf[1] = (byte) (b >>> 8);
          buf[2] = (byte) (b >>> 16);
          buf[3] = (byte) (b >>> 24);
          md.update(buf);
        }
      }
      StringBuilder sb = new StringBuilder();
      for (byte b : md.digest()) {
        sb.append(String.format("%02x", b));
      }
      return sb.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 unavailable", e);
    }
  }

  @Override
  public String toString() {
    return "LayerWeights(D=" + dim + (hidden == dim ? "" : ", H=" + hidden) + ", biases=" + values.keySet().stream().filter(OPTIONAL::contains).count()
        + ", digest=" + digest.substring(0, 12) + ")";
  }
}
