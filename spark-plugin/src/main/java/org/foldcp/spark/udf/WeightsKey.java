package org.foldcp.spark.udf;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.SeekableByteChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.spark.plugin.ExecutorConf;

/**
 * Which decoded layer stack a call of {@code foldcp_trimul} needs: the weights file as this
 * executor sees it ({@link WeightsFile}: where, and which version by length and modification
 * time) and the layers read from it. Found with a stat, never by reading the file, so that the
 * executor's {@link WeightsCache} reads a file once however many rows ask; the cache then shares
 * one stack among keys whose layers have the same weight digests.
 */
public final class WeightsKey {
  private final WeightsFile file;
  private final List<LayerRef> layers;

  WeightsKey(WeightsFile file, List<LayerRef> layers) {
    this.file = Objects.requireNonNull(file, "file");
    this.layers = List.copyOf(layers);
  }

  /**
   * The key for the {@code weights} and {@code layers} arguments: parses the layer list, finds
   * the file on this executor (a local path, or any Hadoop file system URI through the executor's
   * Hadoop configuration) and reads its length and modification time. Every bad argument is an
   * InvalidInputException naming it.
   */
  public static WeightsKey of(String weights, String layers) {
    List<LayerRef> refs = LayerRef.parseList(layers);
    return new WeightsKey(WeightsFile.resolve(weights, ExecutorConf::hadoop), refs);
  }

  /**
   * Reads the layers from the file, in order, through one channel. Layers must share D, as one
   * pair tensor runs through all of them; the error names both prefixes.
   */
  LayerStack load() {
    List<TriMulLayer> out = new ArrayList<>(layers.size());
    try (SeekableByteChannel ch = file.open()) {
      for (LayerRef ref : layers) {
        LayerWeights w = SafeTensors.readLayer(ch, file.location(), ref.prefix(), -1);
        if (!out.isEmpty()) {
          int d0 = out.get(0).dim();
          InvalidInputException.require(w.dim() == d0, "D of layer '" + ref.prefix() + "' in " + file.location(),
              w.dim(), "must equal D = " + d0 + " of the first layer '" + layers.get(0).prefix()
                  + "': every layer of one call runs on the same pair tensor");
        }
        out.add(new TriMulLayer(ref.spec(), w));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("closing the weights file " + file.location(), e);
    }
    return new LayerStack(out);
  }

  /** The weights file as one URI, e.g. "file:/models/m.safetensors" or "hdfs://nn:8020/models/m.safetensors". */
  public String location() { return file.location(); }

  public List<LayerRef> layers() { return layers; }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof WeightsKey)) {
      return false;
    }
    WeightsKey k = (WeightsKey) o;
    return k.file.equals(file) && k.layers.equals(layers);
  }

  @Override
  public int hashCode() {
    return Objects.hash(file, layers);
  }

  @Override
  public String toString() {
    return file + " " + layers;
  }
}
