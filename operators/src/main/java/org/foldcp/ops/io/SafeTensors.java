package org.foldcp.ops.io;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.foldcp.ops.EditDistance;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.OpenFoldNames;
import org.foldcp.ops.layer.WeightTensor;

/**
 * Weights in the .safetensors format, as PyTorch checkpoints of co-folding models ship them.
 *
 * <p>Only the header is parsed up front; tensor data is then read tensor by tensor with
 * positional reads, so picking one layer out of a multi-GB checkpoint reads a few MB.
 * BF16, F16, F32 and F64 tensors are converted to float.
 */
public final class SafeTensors {
  /** Elements per read or write; bounds the buffer whatever the tensor size. */
  private static final int CHUNK = 1 << 18;
  /** How many existing prefixes an unknown-prefix error lists. */
  private static final int SUGGESTIONS = 8;
  /** Metadata PyTorch tooling expects in files it will load. */
  private static final Map<String, String> PT_METADATA = Map.of("format", "pt");

  private SafeTensors() {}

  /**
   * Reads one TriMul layer: the tensors whose names start with {@code keyPrefix} (for example
   * {@code "pairformer.layers.3.tri_mul_out."}), under their names without the prefix, checked
   * by {@link LayerWeights#fromTensors}. A prefix without its trailing dot gets one, so that
   * "layers.1" cannot silently pick up "layers.10.".
   *
   * @param expectedDim the pair dimension D the layer must have, or -1 for any
   */
  public static LayerWeights readLayer(Path file, String keyPrefix, int expectedDim) {
    try (FileChannel ch = FileReads.openRead(file)) {
      return readLayer(ch, file, keyPrefix, expectedDim);
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file, e);
    }
  }

  /**
   * As {@link #readLayer(Path, String, int)}, from an open channel (the caller closes it), for
   * files on other file systems (HDFS, S3): {@code source} names the file in messages.
   */
  public static LayerWeights readLayer(SeekableByteChannel ch, Object source, String keyPrefix, int expectedDim) {
    String prefix = normalizePrefix(keyPrefix);
    SafeTensorsHeader h = SafeTensorsHeader.read(ch, source);
    Map<String, WeightTensor> picked = new LinkedHashMap<>();
    boolean anyKnown = false;
    for (SafeTensorsHeader.Entry e : h.entries.values()) {
      if (!e.name.startsWith(prefix)) {
        continue;
      }
      String name = e.name.substring(prefix.length());
      if (isLayerWeight(name)) {
        picked.put(name, new WeightTensor(name, e.shape, readFloats(ch, h, e)));
        anyKnown = true;
      } else {
        // Not read: fromTensors rejects it by name, and its data may be large or of any dtype.
        picked.put(name, new WeightTensor(name, new long[] {0}, new float[0]));
      }
    }
    if (picked.isEmpty()) {
      throw noSuchPrefix(prefix, h);
    }
    if (!anyKnown) {
      // e.g. "pairformer.layers.3." holds both tri_mul_out and tri_mul_in: name the choices.
      List<String> inside = layerPrefixes(h);
      inside.removeIf(c -> !c.startsWith(prefix));
      if (!inside.isEmpty()) {
        throw InvalidInputException.of("key prefix", "'" + prefix + "'",
            "must name one TriMul layer, but it contains the layers " + quoted(inside, inside.size()));
      }
    }
    return LayerWeights.fromTensors(picked, prefix, expectedDim);
  }

  /** Every tensor of the file, in header order, converted to float. */
  public static Map<String, WeightTensor> readAll(Path file) {
    try (FileChannel ch = FileReads.openRead(file)) {
      SafeTensorsHeader h = SafeTensorsHeader.read(ch, file);
      Map<String, WeightTensor> out = new LinkedHashMap<>();
      for (SafeTensorsHeader.Entry e : h.entries.values()) {
        out.put(e.name, new WeightTensor(e.name, e.shape, readFloats(ch, h, e)));
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file, e);
    }
  }

  /** The tensor names in header order; reads only the header. */
  public static List<String> keys(Path file) {
    return new ArrayList<>(header(file).entries.keySet());
  }

  /** The "__metadata__" string map (empty when absent); reads only the header. */
  public static Map<String, String> metadata(Path file) {
    return new LinkedHashMap<>(header(file).metadata);
  }

  private static SafeTensorsHeader header(Path file) {
    try (FileChannel ch = FileReads.openRead(file)) {
      return SafeTensorsHeader.read(ch, file);
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file, e);
    }
  }

  /**
   * Writes {@code tensors} under their map keys, converting every value to {@code dtype}
   * ("F32", "BF16", "F16" or "F64", rounding to nearest even).
   *
   * @param metadata the "__metadata__" strings, or null for none
   */
  public static void write(Path file, Map<String, WeightTensor> tensors, String dtype, Map<String, String> metadata) {
    TensorDtype dt = writeDtype(dtype);
    StringBuilder json = new StringBuilder("{");
    if (metadata != null && !metadata.isEmpty()) {
      json.append(Json.quote(SafeTensorsHeader.METADATA)).append(":{");
      String sep = "";
      for (Map.Entry<String, String> m : metadata.entrySet()) {
        json.append(sep).append(Json.quote(m.getKey())).append(':').append(Json.quote(m.getValue()));
        sep = ",";
      }
      json.append('}');
    }
    long offset = 0;
    for (Map.Entry<String, WeightTensor> e : tensors.entrySet()) {
      String key = e.getKey();
      InvalidInputException.require(key != null && !key.isEmpty() && !key.equals(SafeTensorsHeader.METADATA),
          "tensor name", key == null ? "null" : "'" + key + "'",
          "must be non-empty and not the reserved \"" + SafeTensorsHeader.METADATA + "\"");
      long bytes = (long) e.getValue().values().length * dt.itemSize;
      json.append(json.length() == 1 ? "" : ",").append(Json.quote(key))
          .append(":{\"dtype\":\"").append(dt.name()).append("\",\"shape\":[");
      long[] shape = e.getValue().shape();
      for (int q = 0; q < shape.length; q++) {
        json.append(q == 0 ? "" : ",").append(shape[q]);
      }
      json.append("],\"data_offsets\":[").append(offset).append(',').append(offset + bytes).append("]}");
      offset += bytes;
    }
    json.append('}');
    byte[] text = json.toString().getBytes(StandardCharsets.UTF_8);
    // Pad with spaces so the data buffer starts 8-byte aligned, as the reference writer does.
    byte[] header = Arrays.copyOf(text, (text.length + 7) / 8 * 8);
    Arrays.fill(header, text.length, header.length, (byte) ' ');

    try (AtomicWrite w = AtomicWrite.open(file)) {
      FileChannel ch = w.channel();
      ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(header.length);
      FileReads.writeFully(ch, len.flip(), file);
      FileReads.writeFully(ch, ByteBuffer.wrap(header), file);
      ByteBuffer buf = ByteBuffer.allocate(CHUNK * dt.itemSize).order(ByteOrder.LITTLE_ENDIAN);
      for (Map.Entry<String, WeightTensor> e : tensors.entrySet()) {
        float[] v = e.getValue().values();
        for (int q0 = 0; q0 < v.length; q0 += CHUNK) {
          int n = Math.min(CHUNK, v.length - q0);
          buf.clear();
          for (int k = 0; k < n; k++) {
            float x = v[q0 + k];
            if (Float.isFinite(x) && !Float.isFinite(dt.round(x))) {
              throw InvalidInputException.of("value " + e.getKey() + "[" + (q0 + k) + "]", x,
                  "rounds to infinity in " + dt.name() + "; write F32 instead");
            }
            dt.put(buf, x);
          }
          FileReads.writeFully(ch, buf.flip(), file);
        }
      }
      w.commit();
    }
  }

  /** Writes one layer with every name prefixed by {@code keyPrefix}. */
  public static void writeLayer(Path file, String keyPrefix, LayerWeights w, String dtype) {
    Map<String, LayerWeights> one = new LinkedHashMap<>();
    one.put(keyPrefix, w);
    writeLayers(file, one, dtype);
  }

  /** Writes several layers into one file, each under its prefix (iteration order kept). */
  public static void writeLayers(Path file, Map<String, LayerWeights> layersByPrefix, String dtype) {
    Map<String, WeightTensor> all = new LinkedHashMap<>();
    for (Map.Entry<String, LayerWeights> layer : layersByPrefix.entrySet()) {
      String prefix = normalizePrefix(layer.getKey());
      for (Map.Entry<String, WeightTensor> t : layer.getValue().tensors().entrySet()) {
        String key = prefix + t.getKey();
        InvalidInputException.require(all.put(key, t.getValue()) == null, "tensor name", "'" + key + "'",
            "two layers map to the same key; give every layer its own prefix");
      }
    }
    write(file, all, dtype, PT_METADATA);
  }

  /** Reads one tensor's values after checking its dtype and that its offsets match its shape. */
  private static float[] readFloats(SeekableByteChannel ch, SafeTensorsHeader h, SafeTensorsHeader.Entry e) {
    TensorDtype dt = TensorDtype.of(e.dtype, e.name, h.file);
    String offsets = "[" + e.begin + ", " + e.end + "]";
    String what = "data_offsets of '" + e.name + "' in " + h.file;
    // numel and its byte count, or -1 where they pass 2^63 - 1 (a shape no file can back)
    long numel = 1;
    for (long s : e.shape) {
      numel = numel < 0 ? (s == 0 ? 0 : -1) : s == 0 ? 0 : numel > Long.MAX_VALUE / s ? -1 : numel * s;
    }
    long need = numel < 0 || numel > Long.MAX_VALUE / dt.itemSize ? -1 : numel * dt.itemSize;
    InvalidInputException.require(e.end >= e.begin && e.end - e.begin == need, what, offsets,
        "end - begin (" + (e.end - e.begin) + " bytes) must equal numel * itemsize"
            + (need < 0 ? ", more than 2^63 - 1" : " = " + numel + " * " + dt.itemSize + " = " + need)
            + " bytes for shape " + FileReads.shown(e.shapeString()) + " of dtype " + dt.name());
    InvalidInputException.require(e.end <= h.dataLength(), what, offsets,
        "must lie inside the data buffer of " + h.dataLength() + " bytes (the file has " + h.fileSize
            + " bytes and the data starts at byte " + h.dataStart + "): truncated file?");
    InvalidInputException.require(numel <= Integer.MAX_VALUE - 8, "element count of '" + e.name + "'", numel,
        "a weight tensor must have fewer than 2^31 elements");

    float[] out = new float[(int) numel];
    ByteBuffer buf = ByteBuffer.allocate((int) Math.min(numel, CHUNK) * dt.itemSize).order(ByteOrder.LITTLE_ENDIAN);
    long pos = h.dataStart + e.begin;
    for (int q0 = 0; q0 < out.length; q0 += CHUNK) {
      int n = Math.min(CHUNK, out.length - q0);
      buf.clear().limit(n * dt.itemSize);
      FileReads.readFully(ch, buf, pos, h.file);
      pos += (long) n * dt.itemSize;
      for (int k = 0; k < n; k++) {
        out[q0 + k] = dt.get(buf, k);
      }
    }
    return out;
  }

  private static TensorDtype writeDtype(String dtype) {
    for (TensorDtype t : TensorDtype.values()) {
      if (t.name().equals(dtype)) {
        return t;
      }
    }
    throw InvalidInputException.of("dtype", dtype, "writable dtypes are " + TensorDtype.SUPPORTED);
  }

  private static String normalizePrefix(String keyPrefix) {
    if (keyPrefix == null || keyPrefix.isEmpty()) {
      return "";
    }
    return keyPrefix.endsWith(".") ? keyPrefix : keyPrefix + ".";
  }

  private static boolean isLayerWeight(String name) {
    return LayerWeights.REQUIRED.contains(name) || LayerWeights.OPTIONAL.contains(name)
        || OpenFoldNames.isOpenFoldName(name);
  }

  /**
   * The prefixes of the layers in the file: whatever precedes each "norm_in.weight" key (or
   * OpenFold's "layer_norm_in.weight").
   */
  private static List<String> layerPrefixes(SafeTensorsHeader h) {
    TreeSet<String> out = new TreeSet<>();
    for (String anchor : List.of(LayerWeights.NORM_IN_W, OpenFoldNames.NORM_IN_W)) {
      for (String key : h.entries.keySet()) {
        // "layer_norm_in.weight" ends with "norm_in.weight" too: only a whole name after a dot counts
        if (key.equals(anchor) || key.endsWith("." + anchor)) {
          out.add(key.substring(0, key.length() - anchor.length()));
        }
      }
    }
    return new ArrayList<>(out);
  }

  /**
   * An unknown prefix is almost always a typo or a wrong layer index, so the error lists the
   * layer prefixes that do exist, most similar (by edit distance) first. Files without any
   * layer fall back to the parent paths of all keys.
   */
  private static InvalidInputException noSuchPrefix(String prefix, SafeTensorsHeader h) {
    List<String> candidates = layerPrefixes(h);
    if (candidates.isEmpty()) {
      TreeSet<String> parents = new TreeSet<>();
      for (String key : h.entries.keySet()) {
        parents.add(key.substring(0, key.lastIndexOf('.') + 1));
      }
      candidates = new ArrayList<>(parents);
    }
    Map<String, Integer> distance = new LinkedHashMap<>();
    for (String c : candidates) {
      distance.put(c, EditDistance.between(c, prefix));
    }
    candidates.sort(Comparator.comparing(distance::get));
    return InvalidInputException.of("key prefix", "'" + prefix + "'",
        "no tensor in " + h.file + " (" + h.entries.size() + " tensors) has a name starting with it; "
            + (candidates.isEmpty() ? "the file holds no tensors"
                : "prefixes present: " + quoted(candidates, SUGGESTIONS)));
  }

  private static String quoted(List<String> items, int limit) {
    StringBuilder sb = new StringBuilder("[");
    for (int q = 0; q < Math.min(limit, items.size()); q++) {
      sb.append(q == 0 ? "'" : ", '").append(items.get(q)).append('\'');
    }
    sb.append(']');
    if (items.size() > limit) {
      sb.append(" and ").append(items.size() - limit).append(" more");
    }
    return sb.toString();
  }
}
