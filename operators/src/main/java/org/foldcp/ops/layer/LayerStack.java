package org.foldcp.ops.layer;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.foldcp.ops.InvalidInputException;

/**
 * Several TriMul layers applied in order to the same pair tensor; all share D and the hidden
 * width H (as every triangle layer of a model does), so that one CP channel split serves the stack.
 */
public final class LayerStack implements Serializable {
  private static final long serialVersionUID = 1L;

  private final List<TriMulLayer> layers;

  public LayerStack(List<TriMulLayer> layers) {
    InvalidInputException.require(layers != null && !layers.isEmpty(), "layer count",
        layers == null ? "null" : layers.size(), "a layer stack needs at least one layer");
    int d = layers.get(0).dim();
    int h = layers.get(0).hidden();
    for (int l = 1; l < layers.size(); l++) {
      InvalidInputException.require(layers.get(l).dim() == d, "D of layer " + l, layers.get(l).dim(),
          "every layer of a stack must have the D of layer 0 (" + d + ")");
      InvalidInputException.require(layers.get(l).hidden() == h, "H of layer " + l, layers.get(l).hidden(),
          "every layer of a stack must have the hidden width H of layer 0 (" + h + ")");
    }
    this.layers = Collections.unmodifiableList(new ArrayList<>(layers));
  }

  public static LayerStack of(TriMulLayer... layers) {
    return new LayerStack(List.of(layers));
  }

  /**
   * A stack of {@code count} random layers alternating outgoing and incoming, residual on,
   * as in a Pairformer block; deterministic in {@code seed}.
   */
  public static LayerStack randomAlternating(int count, int d, long seed, boolean withBiases) {
    return randomAlternating(count, d, d, seed, withBiases);
  }

  /** As {@link #randomAlternating(int, int, long, boolean)}, with hidden width {@code h}. */
  public static LayerStack randomAlternating(int count, int d, int h, long seed, boolean withBiases) {
    List<TriMulLayer> ls = new ArrayList<>();
    for (int l = 0; l < count; l++) {
      Direction dir = l % 2 == 0 ? Direction.OUTGOING : Direction.INCOMING;
      ls.add(new TriMulLayer(TriMulSpec.of(dir, true), LayerWeights.random(d, h, seed + 7919L * l, withBiases)));
    }
    return new LayerStack(ls);
  }

  public List<TriMulLayer> layers() { return layers; }

  public int size() { return layers.size(); }

  public int dim() { return layers.get(0).dim(); }

  /** The hidden width H of every layer. */
  public int hidden() { return layers.get(0).hidden(); }

  public TriMulLayer get(int i) { return layers.get(i); }

  /**
   * SHA-256 over every layer's identity ({@link TriMulLayer#identity}: weights digest and spec), in
   * order: equal on every rank of a team exactly when they hold the same stack.
   */
  public byte[] digest() {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      for (TriMulLayer l : layers) {
        md.update((l.identity() + ";").getBytes(StandardCharsets.UTF_8));
      }
      return md.digest();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  @Override
  public String toString() {
    return "LayerStack" + layers;
  }
}
