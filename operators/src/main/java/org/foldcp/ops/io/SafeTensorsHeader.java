package org.foldcp.ops.io;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.foldcp.ops.InvalidInputException;

/**
 * The parsed header of a .safetensors file (https://github.com/huggingface/safetensors): an
 * 8-byte little-endian length, then a JSON object mapping tensor names to dtype, shape and
 * byte offsets into the data buffer that follows, plus an optional string map "__metadata__".
 */
final class SafeTensorsHeader {
  static final String METADATA = "__metadata__";
  /** The reference implementation refuses headers above 100 MB; so do we, before allocating. */
  static final long MAX_HEADER = 100_000_000L;

  /** One tensor's header entry; offsets are relative to the start of the data buffer. */
  static final class Entry {
    final String name;
    final String dtype;
    final long[] shape;
    final long begin;
    final long end;

    Entry(String name, String dtype, long[] shape, long begin, long end) {
      this.name = name;
      this.dtype = dtype;
      this.shape = shape;
      this.begin = begin;
      this.end = end;
    }

    String shapeString() {
      return Arrays.toString(shape);
    }
  }

  final Object file;
  final long fileSize;
  /** Absolute file offset of the data buffer: 8 + header length. */
  final long dataStart;
  final Map<String, Entry> entries;
  final Map<String, String> metadata;

  private SafeTensorsHeader(Object file, long fileSize, long dataStart, Map<String, Entry> entries,
      Map<String, String> metadata) {
    this.file = file;
    this.fileSize = fileSize;
    this.dataStart = dataStart;
    this.entries = Collections.unmodifiableMap(entries);
    this.metadata = Collections.unmodifiableMap(metadata);
  }

  long dataLength() {
    return fileSize - dataStart;
  }

  /** Reads and checks only the header; no tensor data is touched. */
  static SafeTensorsHeader read(SeekableByteChannel ch, Object file) {
    long size = FileReads.size(ch, file);
    if (size < 8) {
      throw InvalidInputException.of("size of " + file, size + " bytes",
          "a .safetensors file starts with an 8-byte little-endian header length: truncated file");
    }
    ByteBuffer lb = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
    FileReads.readFully(ch, lb, 0, file);
    long n = lb.getLong(0);
    if (n < 0 || n > size - 8) {
      throw InvalidInputException.of("header length of " + file, Long.toUnsignedString(n),
          "must fit in the file: it has " + size + " bytes, so the header can hold at most " + (size - 8)
              + " (truncated file, or not a .safetensors file)");
    }
    if (n > MAX_HEADER) {
      throw InvalidInputException.of("header length of " + file, n,
          "safetensors headers are limited to " + MAX_HEADER + " bytes");
    }
    ByteBuffer hb = ByteBuffer.allocate((int) n);
    FileReads.readFully(ch, hb, 8, file);
    hb.flip();
    String text;
    try {
      CharBuffer cb = StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(hb);
      text = cb.toString();
    } catch (CharacterCodingException e) {
      throw InvalidInputException.of("header of " + file, "(" + n + " bytes)", "the JSON header must be UTF-8");
    }
    Object root;
    try {
      root = Json.parse(text);
    } catch (Json.SyntaxError e) {
      throw InvalidInputException.of("header of " + file, "'" + FileReads.excerpt(text, 200) + "'",
          "not parseable as JSON: " + e.getMessage());
    }
    if (!(root instanceof Map)) {
      throw InvalidInputException.of("header of " + file, "'" + FileReads.excerpt(text, 200) + "'",
          "must be a JSON object {name: {\"dtype\", \"shape\", \"data_offsets\"}}");
    }
    Map<String, Entry> entries = new LinkedHashMap<>();
    Map<String, String> metadata = new LinkedHashMap<>();
    for (Map.Entry<?, ?> e : ((Map<?, ?>) root).entrySet()) {
      String key = (String) e.getKey();
      if (key.equals(METADATA)) {
        readMetadata(e.getValue(), file, metadata);
      } else {
        entries.put(key, entry(key, e.getValue(), file));
      }
    }
    refuseOverlaps(entries.values(), file);
    return new SafeTensorsHeader(file, size, 8 + n, entries, metadata);
  }

  /**
   * Two tensors may not share bytes: a crafted file could otherwise alias one weight onto
   * another (the reference implementation also refuses it). Empty and reversed ranges own no
   * bytes here; a reversed one is refused by its own rule when it is read.
   */
  private static void refuseOverlaps(Collection<Entry> entries, Object file) {
    List<Entry> owning = new ArrayList<>();
    for (Entry e : entries) {
      if (e.end > e.begin) {
        owning.add(e);
      }
    }
    owning.sort(Comparator.comparingLong((Entry e) -> e.begin).thenComparingLong(e -> e.end));
    Entry reach = null; // of the ranges so far, the one that ends last
    for (Entry e : owning) {
      if (reach != null && e.begin < reach.end) {
        throw InvalidInputException.of("data_offsets of '" + e.name + "' and '" + reach.name + "' in " + file,
            "[" + e.begin + ", " + e.end + "] and [" + reach.begin + ", " + reach.end + "]",
            "the byte ranges of two tensors must not overlap");
      }
      if (reach == null || e.end > reach.end) {
        reach = e;
      }
    }
  }

  private static void readMetadata(Object value, Object file, Map<String, String> out) {
    String rule = "\"" + METADATA + "\" must be a JSON object of string values";
    if (!(value instanceof Map)) {
      throw InvalidInputException.of("\"" + METADATA + "\" in " + file, FileReads.shown(value), rule);
    }
    for (Map.Entry<?, ?> m : ((Map<?, ?>) value).entrySet()) {
      if (!(m.getValue() instanceof String)) {
        throw InvalidInputException.of("\"" + METADATA + "\" entry '" + m.getKey() + "' in " + file,
            FileReads.shown(m.getValue()), rule);
      }
      out.put((String) m.getKey(), (String) m.getValue());
    }
  }

  private static Entry entry(String key, Object value, Object file) {
    String what = "header entry '" + key + "' in " + file;
    String form = "must be {\"dtype\": str, \"shape\": [ints], \"data_offsets\": [begin, end]}";
    if (!(value instanceof Map)) {
      throw InvalidInputException.of(what, FileReads.shown(value), form);
    }
    Map<?, ?> m = (Map<?, ?>) value;
    Object dtype = m.get("dtype");
    if (!(dtype instanceof String)) {
      throw InvalidInputException.of("\"dtype\" of " + what, FileReads.shown(dtype), form);
    }
    long[] shape = naturals(m.get("shape"), -1, "\"shape\" of " + what, form);
    long[] offsets = naturals(m.get("data_offsets"), 2, "\"data_offsets\" of " + what, form);
    return new Entry(key, (String) dtype, shape, offsets[0], offsets[1]);
  }

  /** A JSON array of non-negative integers, of {@code length} elements unless it is -1. */
  private static long[] naturals(Object value, int length, String what, String rule) {
    if (!(value instanceof List) || (length >= 0 && ((List<?>) value).size() != length)) {
      throw InvalidInputException.of(what, FileReads.shown(value), rule);
    }
    List<?> list = (List<?>) value;
    long[] out = new long[list.size()];
    for (int q = 0; q < out.length; q++) {
      Object v = list.get(q);
      if (!(v instanceof Long) || (Long) v < 0) {
        throw InvalidInputException.of(what, FileReads.shown(value), rule + " with non-negative integers");
      }
      out[q] = (Long) v;
    }
    return out;
  }
}
