package org.foldcp.ops.layer;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.foldcp.ops.InvalidInputException;

/**
 * OpenFold's names for the weights of a triangle multiplicative update, mapped onto ours (the
 * Boltz / AlphaFold3 names of {@link LayerWeights}), so that a checkpoint of either family loads
 * as it is. OpenFold's TriangleMultiplicativeUpdate(c_z, c_hidden) names
 * <ul>
 *   <li>layer_norm_in (c_z) and layer_norm_out (c_hidden): our norm_in and norm_out;
 *   <li>linear_a_p, linear_b_p (c_z -> c_hidden each): the a and b halves of our p_in, a first;
 *       linear_a_g, linear_b_g the same for g_in; the fused variant's linear_ab_p and linear_ab_g
 *       (c_z -> 2 c_hidden, a the first c_hidden rows, as its chunk(2) splits them) are p_in and g_in;
 *   <li>linear_z (c_hidden -> c_z): our p_out; linear_g (c_z -> c_z, the gate on the normalised
 *       input): our g_out.
 * </ul>
 * Biases follow their weights. A layer's tensors use one family of names, never both.
 */
public final class OpenFoldNames {
  private OpenFoldNames() {}

  /** OpenFold name -> our name, for the tensors that map one to one. */
  private static final Map<String, String> ONE_TO_ONE = Map.ofEntries(
      Map.entry("layer_norm_in.weight", LayerWeights.NORM_IN_W),
      Map.entry("layer_norm_in.bias", LayerWeights.NORM_IN_B),
      Map.entry("layer_norm_out.weight", LayerWeights.NORM_OUT_W),
      Map.entry("layer_norm_out.bias", LayerWeights.NORM_OUT_B),
      Map.entry("linear_ab_p.weight", LayerWeights.P_IN_W),
      Map.entry("linear_ab_p.bias", LayerWeights.P_IN_B),
      Map.entry("linear_ab_g.weight", LayerWeights.G_IN_W),
      Map.entry("linear_ab_g.bias", LayerWeights.G_IN_B),
      Map.entry("linear_z.weight", LayerWeights.P_OUT_W),
      Map.entry("linear_z.bias", LayerWeights.P_OUT_B),
      Map.entry("linear_g.weight", LayerWeights.G_OUT_W),
      Map.entry("linear_g.bias", LayerWeights.G_OUT_B));

  /** Our name -> OpenFold's a and b halves that are stacked into it (a rows first). */
  private static final Map<String, List<String>> STACKED = Map.of(
      LayerWeights.P_IN_W, List.of("linear_a_p.weight", "linear_b_p.weight"),
      LayerWeights.P_IN_B, List.of("linear_a_p.bias", "linear_b_p.bias"),
      LayerWeights.G_IN_W, List.of("linear_a_g.weight", "linear_b_g.weight"),
      LayerWeights.G_IN_B, List.of("linear_a_g.bias", "linear_b_g.bias"));

  /** The anchor of an OpenFold layer in a file (as norm_in.weight is of ours). */
  public static final String NORM_IN_W = "layer_norm_in.weight";

  /** Whether {@code name} (without its layer prefix) is one of OpenFold's triangle-update weights. */
  public static boolean isOpenFoldName(String name) {
    if (ONE_TO_ONE.containsKey(name)) {
      return true;
    }
    for (List<String> halves : STACKED.values()) {
      if (halves.contains(name)) {
        return true;
      }
    }
    return false;
  }

  /**
   * {@code tensors} under our names: as given where none has an OpenFold name, else every OpenFold
   * tensor renamed (or its a and b halves stacked) and the rest kept, for
   * {@link LayerWeights#fromTensors} to check (an unknown name stays unknown and is named there).
   *
   * @param prefix the layer's key prefix in its file, for messages
   */
  public static Map<String, WeightTensor> toOurs(Map<String, WeightTensor> tensors, String prefix) {
    if (tensors.keySet().stream().noneMatch(OpenFoldNames::isOpenFoldName)) {
      return tensors;
    }
    TreeSet<String> ours = new TreeSet<>(tensors.keySet());
    ours.retainAll(LayerWeights.REQUIRED);
    for (String name : LayerWeights.OPTIONAL) {
      if (tensors.containsKey(name)) {
        ours.add(name);
      }
    }
    if (!ours.isEmpty()) {
      throw InvalidInputException.of("weight key '" + prefix + ours.first() + "'", "mixed with OpenFold names",
          "a layer's tensors use one family of names: ours (" + LayerWeights.REQUIRED + ") or OpenFold's ("
              + "layer_norm_in, linear_a_p / linear_ab_p, ..., linear_z, linear_g, layer_norm_out)");
    }
    Map<String, WeightTensor> out = new LinkedHashMap<>();
    for (Map.Entry<String, WeightTensor> e : tensors.entrySet()) {
      String mapped = ONE_TO_ONE.get(e.getKey());
      if (mapped != null) {
        put(out, mapped, rename(e.getValue(), e.getKey()), prefix, e.getKey());
      } else if (!isOpenFoldName(e.getKey())) {
        out.put(e.getKey(), e.getValue());
      }
    }
    for (Map.Entry<String, List<String>> s : STACKED.entrySet()) {
      WeightTensor a = tensors.get(s.getValue().get(0));
      WeightTensor b = tensors.get(s.getValue().get(1));
      if (a == null && b == null) {
        continue;
      }
      String missing = a == null ? s.getValue().get(0) : b == null ? s.getValue().get(1) : null;
      if (missing != null) {
        throw InvalidInputException.of("weight key '" + prefix + missing + "'", "missing",
            "OpenFold's a and b projections come in pairs: " + s.getValue() + " together make " + s.getKey());
      }
      put(out, s.getKey(), stack(s.getValue().get(0) + " + " + s.getValue().get(1), a, b, prefix), prefix,
          s.getValue().get(0));
    }
    return out;
  }

  private static void put(Map<String, WeightTensor> out, String name, WeightTensor t, String prefix, String from) {
    if (out.putIfAbsent(name, t) != null) {
      throw InvalidInputException.of("weight key '" + prefix + from + "'", "a second " + name,
          "OpenFold's fused (linear_ab_*) and split (linear_a_* and linear_b_*) projections are alternatives;"
              + " a layer has one of them");
    }
  }

  /** The tensor under its OpenFold name (the map key becomes ours): messages name what the file holds. */
  private static WeightTensor rename(WeightTensor t, String name) {
    return new WeightTensor(name, t.shape(), t.values());
  }

  /** OpenFold's name(s) for our {@code name}, for messages about a tensor that is missing. */
  public static String theirs(String name) {
    List<String> stacked = STACKED.get(name);
    String fused = null;
    for (Map.Entry<String, String> e : ONE_TO_ONE.entrySet()) {
      if (e.getValue().equals(name)) {
        fused = e.getKey();
      }
    }
    return stacked == null ? fused : stacked.get(0) + " + " + stacked.get(1) + " (or " + fused + ")";
  }

  /** [a; b] along the first axis: a's rows, then b's (same trailing shape); {@code name} says whose. */
  private static WeightTensor stack(String name, WeightTensor a, WeightTensor b, String prefix) {
    long[] sa = a.shape();
    long[] sb = b.shape();
    boolean same = sa.length == sb.length && sa.length >= 1;
    for (int k = 1; same && k < sa.length; k++) {
      same = sa[k] == sb[k];
    }
    String[] halves = name.split(" \\+ ");
    InvalidInputException.require(same && sa[0] == sb[0], "shapes of '" + prefix + halves[0] + "' and '" + prefix
        + halves[1] + "'", a.shapeString() + " and " + b.shapeString(),
        "must be equal: the a and b projections have c_hidden rows each");
    long[] shape = sa.clone();
    shape[0] = sa[0] + sb[0];
    float[] v = new float[a.values().length + b.values().length];
    System.arraycopy(a.values(), 0, v, 0, a.values().length);
    System.arraycopy(b.values(), 0, v, a.values().length, b.values().length);
    return new WeightTensor(name, shape, v);
  }
}
