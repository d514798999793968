package org.foldcp.spark.udf;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.spark.SparkEnv;
import org.apache.spark.SparkFiles;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;

/**
 * Which decoded layer stack a call of {@code foldcp_trimul} needs: the weights file as this
 * executor sees it (real path, size, modification time) and the layers read from it. The file's
 * size and time are part of the key so that a file rewritten in place is read again instead of
 * being served stale from the cache; the cost is one stat per call.
 */
public final class WeightsKey {
  /** "scheme://": a Hadoop or object-store URI, which this reader cannot open. */
  private static final Pattern REMOTE_URI = Pattern.compile("^[A-Za-z][A-Za-z0-9+.-]*://.*");

  private final Path file;
  private final long size;
  private final long modifiedNanos;
  private final List<LayerRef> layers;

  WeightsKey(Path file, long size, long modifiedNanos, List<LayerRef> layers) {
    this.file = Objects.requireNonNull(file, "file");
    this.size = size;
    this.modifiedNanos = modifiedNanos;
    this.layers = List.copyOf(layers);
  }

  /**
   * The key for the {@code weights} and {@code layers} arguments: parses the layer list, finds
   * the file on this executor and reads its attributes. Every bad argument is an
   * InvalidInputException naming it.
   */
  public static WeightsKey of(String weights, String layers) {
    List<LayerRef> refs = LayerRef.parseList(layers);
    Path file = resolve(weights);
    try {
      BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
      return new WeightsKey(file, a.size(), a.lastModifiedTime().to(TimeUnit.NANOSECONDS), refs);
    } catch (IOException e) {
      throw new UncheckedIOException("reading the attributes of the weights file " + file, e);
    }
  }

  /**
   * The weights file on this executor: a local path or a file: URI. A bare file name that is not
   * in the working directory is looked up among the files shipped with the application
   * (spark-submit --files, SparkContext.addFile), which is how a driver-side file reaches the
   * executors without a shared file system.
   */
  static Path resolve(String weights) {
    InvalidInputException.require(weights != null && !weights.isBlank(), "weights",
        weights == null ? "null" : "'" + weights + "'", "must be the path of a .safetensors file");
    if (REMOTE_URI.matcher(weights).matches() && !weights.startsWith("file:")) {
      throw InvalidInputException.of("weights", "'" + weights + "'",
          "must be a local path or file: URI that every executor can read; ship the file with"
              + " spark-submit --files (then pass its bare name) or put it on a shared mount");
    }
    Path path;
    try {
      path = weights.startsWith("file:") ? Path.of(URI.create(weights)) : Path.of(weights);
    } catch (IllegalArgumentException e) { // also InvalidPathException, a subclass
      throw InvalidInputException.of("weights", "'" + weights + "'", "is not a valid file path (" + e.getMessage() + ")");
    }
    if (!Files.exists(path) && path.getParent() == null && SparkEnv.get() != null) {
      Path shipped = Path.of(SparkFiles.get(path.toString()));
      if (Files.exists(shipped)) {
        path = shipped;
      }
    }
    InvalidInputException.require(Files.exists(path), "weights file", "'" + weights + "'",
        "does not exist on " + where() + " (looked at " + path.toAbsolutePath()
            + (path.getParent() == null ? " and among the files shipped with the application" : "") + ")");
    InvalidInputException.require(Files.isRegularFile(path), "weights file", "'" + weights + "'",
        "must be a regular .safetensors file, but " + path.toAbsolutePath() + " is not (a directory?)");
    try {
      // The real path, so that two spellings of one file share one cache entry.
      return path.toRealPath();
    } catch (IOException e) {
      throw new UncheckedIOException("resolving the weights file " + path, e);
    }
  }

  private static String where() {
    SparkEnv env = SparkEnv.get();
    return env == null ? "this machine" : "executor " + env.executorId();
  }

  /**
   * Reads the layers from the file, in order. Layers must share D, as one pair tensor runs
   * through all of them; the error names both prefixes.
   */
  LayerStack load() {
    List<TriMulLayer> out = new ArrayList<>(layers.size());
    for (LayerRef ref : layers) {
      LayerWeights w = SafeTensors.readLayer(file, ref.prefix(), -1);
      if (!out.isEmpty()) {
        int d0 = out.get(0).dim();
        InvalidInputException.require(w.dim() == d0, "D of layer '" + ref.prefix() + "' in " + file, w.dim(),
            "must equal D = " + d0 + " of the first layer '" + layers.get(0).prefix()
                + "': every layer of one call runs on the same pair tensor");
      }
      out.add(new TriMulLayer(ref.spec(), w));
    }
    return new LayerStack(out);
  }

  public Path file() { return file; }

  public List<LayerRef> layers() { return layers; }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof WeightsKey)) {
      return false;
    }
    WeightsKey k = (WeightsKey) o;
    return k.file.equals(file) && k.size == size && k.modifiedNanos == modifiedNanos && k.layers.equals(layers);
  }

  @Override
  public int hashCode() {
    return Objects.hash(file, size, modifiedNanos, layers);
  }

  @Override
  public String toString() {
    return file + " (" + size + " bytes) " + layers;
  }
}
