package org.foldcp.ops.io;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.foldcp.ops.InvalidInputException;

/**
 * The preamble of an .npy file: magic, version, header length and the header dict
 * (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
 *
 * <p>Versions 1.0 (2-byte header length), 2.0 (4-byte length) and 3.0 (4-byte length, UTF-8
 * header) are read; writing picks 1.0 unless the header does not fit its 2-byte length.
 */
final class NpyHeader {
  private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
  /** numpy pads the preamble to a multiple of 64 bytes so the data can be memory-mapped aligned. */
  private static final int ALIGN = 64;
  private static final Set<String> KEYS = Set.of("descr", "fortran_order", "shape");

  final int major;
  final int minor;
  final String descr;
  final boolean fortranOrder;
  final long[] shape;
  /** Byte offset of the first data byte. */
  final long dataOffset;

  private NpyHeader(int major, int minor, String descr, boolean fortranOrder, long[] shape, long dataOffset) {
    this.major = major;
    this.minor = minor;
    this.descr = descr;
    this.fortranOrder = fortranOrder;
    this.shape = shape;
    this.dataOffset = dataOffset;
  }

  static NpyHeader read(SeekableByteChannel ch, Object file) {
    long size = FileReads.size(ch, file);
    ByteBuffer pre = ByteBuffer.allocate((int) Math.min(size, 12)).order(ByteOrder.LITTLE_ENDIAN);
    FileReads.readFully(ch, pre, 0, file);
    byte[] start = new byte[Math.min(pre.limit(), MAGIC.length)];
    pre.get(0, start);
    boolean magicOk = start.length == MAGIC.length;
    for (int q = 0; q < start.length && magicOk; q++) {
      magicOk = start[q] == MAGIC[q];
    }
    if (!magicOk) {
      throw InvalidInputException.of("magic of " + file, printable(start),
          "an .npy file must start with the 6 bytes \\x93NUMPY (is this really an .npy file?)");
    }
    if (size < 10) {
      throw InvalidInputException.of("size of " + file, size + " bytes",
          "an .npy file needs at least 10 bytes (magic, version, header length): truncated file");
    }
    int major = pre.get(6) & 0xff;
    int minor = pre.get(7) & 0xff;
    if (minor != 0 || major < 1 || major > 3) {
      throw InvalidInputException.of("npy format version of " + file, major + "." + minor,
          "supported versions are 1.0, 2.0 and 3.0");
    }
    long headerLen;
    int prefixLen;
    if (major == 1) {
      headerLen = pre.getShort(8) & 0xffff;
      prefixLen = 10;
    } else {
      if (size < 12) {
        throw InvalidInputException.of("size of " + file, size + " bytes",
            "a version " + major + ".0 .npy file needs at least 12 bytes before its header: truncated file");
      }
      headerLen = pre.getInt(8) & 0xffffffffL;
      prefixLen = 12;
    }
    long dataOffset = prefixLen + headerLen;
    if (dataOffset > size || headerLen > Integer.MAX_VALUE - 8) {
      throw InvalidInputException.of("size of " + file, size + " bytes",
          "the header declares " + headerLen + " bytes, ending at byte " + dataOffset
              + ", beyond the end of the file: truncated file");
    }
    ByteBuffer hb = ByteBuffer.allocate((int) headerLen);
    FileReads.readFully(ch, hb, prefixLen, file);
    // Version 3.0 exists only to allow UTF-8 field names; 1.0 and 2.0 headers are latin-1.
    String text = new String(hb.array(), major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
    return fromText(text, major, minor, dataOffset, file);
  }

  private static NpyHeader fromText(String text, int major, int minor, long dataOffset, Object file) {
    String what = "npy header of " + file;
    String shown = "\"" + FileReads.excerpt(text.strip(), 200) + "\"";
    String form = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 3, 4), }";
    Map<String, Object> dict;
    try {
      dict = PyLiteral.parseDict(text);
    } catch (PyLiteral.SyntaxError e) {
      throw InvalidInputException.of(what, shown,
          "not parseable as a Python dict literal like " + form + ": " + e.getMessage());
    }
    Set<String> missing = new TreeSet<>(KEYS);
    missing.removeAll(dict.keySet());
    Set<String> extra = new TreeSet<>(dict.keySet());
    extra.removeAll(KEYS);
    if (!missing.isEmpty() || !extra.isEmpty()) {
      throw InvalidInputException.of(what, shown, "the header dict must have exactly the keys "
          + new TreeSet<>(KEYS) + (missing.isEmpty() ? "" : "; missing " + missing)
          + (extra.isEmpty() ? "" : "; unexpected " + extra));
    }
    Object d = dict.get("descr");
    // A structured dtype has a list descr; keep its text so the dtype check can name it.
    String descr = d instanceof String ? (String) d : String.valueOf(d);
    Object fo = dict.get("fortran_order");
    if (!(fo instanceof Boolean)) {
      throw InvalidInputException.of("'fortran_order' in " + what, FileReads.shown(fo), "must be True or False");
    }
    Object s = dict.get("shape");
    if (!(s instanceof List)) {
      throw InvalidInputException.of("'shape' in " + what, FileReads.shown(s),
          "must be a tuple of integers like (2, 3, 3, 4)");
    }
    List<?> dims = (List<?>) s;
    long[] shape = new long[dims.size()];
    for (int q = 0; q < shape.length; q++) {
      Object v = dims.get(q);
      if (!(v instanceof Long) || (Long) v < 0) {
        throw InvalidInputException.of("'shape' in " + what, FileReads.shown(s),
            "every dimension must be a non-negative integer");
      }
      shape[q] = (Long) v;
    }
    return new NpyHeader(major, minor, descr, (Boolean) fo, shape, dataOffset);
  }

  /**
   * Checks the dtype against {@code supported} (e.g. "<f4", "|u1") and returns it normalised:
   * single-byte types are order-free, so "<u1" and "|u1" are the same dtype.
   */
  String requireDtype(Object file, List<String> supported) {
    String what = "dtype of " + file;
    String d = descr;
    if (d.length() == 3 && "<>|=".indexOf(d.charAt(0)) >= 0 && d.endsWith("1")) {
      d = "|" + d.substring(1);
    }
    if (supported.contains(d)) {
      return d;
    }
    if (d.startsWith(">") && supported.contains("<" + d.substring(1))) {
      throw InvalidInputException.of(what, "'" + FileReads.shown(descr) + "'",
          "big-endian data is not supported; save it little-endian, e.g. arr.astype('<" + d.substring(1) + "')");
    }
    throw InvalidInputException.of(what, "'" + FileReads.shown(descr) + "'",
        "supported dtypes are " + quoted(supported));
  }

  /** Refuses Fortran (column-major) layout, which would need a transposing reader. */
  void requireCOrder(Object file) {
    if (fortranOrder) {
      throw InvalidInputException.of("fortran_order of " + file, "True",
          "only C-order (row-major) arrays are supported; save np.ascontiguousarray(arr) instead");
    }
  }

  /** Checks the data region holds exactly count * itemSize bytes. */
  void requireDataSize(long fileSize, int itemSize, Object file) {
    long count = elementCount(file);
    long expected;
    try {
      expected = Math.multiplyExact(count, (long) itemSize);
    } catch (ArithmeticException e) {
      throw InvalidInputException.of("shape of " + file, FileReads.shown(shapeString(shape)),
          "the byte count overflows 64 bits");
    }
    long actual = fileSize - dataOffset;
    if (actual != expected) {
      throw InvalidInputException.of("data size of " + file, actual + " bytes",
          "shape " + FileReads.shown(shapeString(shape)) + " of dtype '" + FileReads.shown(descr)
              + "' needs exactly " + expected
              + " bytes after the " + dataOffset + "-byte header"
              + (actual < expected ? " (truncated file)" : " (trailing bytes: not a single .npy array)"));
    }
  }

  long elementCount(Object file) {
    long n = 1;
    for (long s : shape) {
      try {
        n = Math.multiplyExact(n, s);
      } catch (ArithmeticException e) {
        throw InvalidInputException.of("shape of " + file, FileReads.shown(shapeString(shape)),
            "the element count overflows 64 bits");
      }
    }
    return n;
  }

  /** Preamble plus header for a C-order array, padded to 64 bytes, version 1.0 when it fits. */
  static byte[] encode(String descr, long[] shape) {
    String dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shapeString(shape) + ", }";
    return encodeDict(dict);
  }

  /** Package-private so tests can force a version 2.0 header with an oversized dict. */
  static byte[] encodeDict(String dict) {
    int major = 1;
    int prefixLen = 10;
    int unpadded = prefixLen + dict.length() + 1; // + '\n'
    int total = roundUp(unpadded);
    if (total - prefixLen > 0xffff) {
      major = 2;
      prefixLen = 12;
      total = roundUp(prefixLen + dict.length() + 1);
    }
    int headerLen = total - prefixLen;
    ByteBuffer out = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
    out.put(MAGIC).put((byte) major).put((byte) 0);
    if (major == 1) {
      out.putShort((short) headerLen);
    } else {
      out.putInt(headerLen);
    }
    out.put(dict.getBytes(StandardCharsets.ISO_8859_1));
    while (out.position() < total - 1) {
      out.put((byte) ' ');
    }
    out.put((byte) '\n');
    return out.array();
  }

  private static int roundUp(int n) {
    return (n + ALIGN - 1) / ALIGN * ALIGN;
  }

  /** Python's tuple spelling: (3,) for one dimension, () for a scalar. */
  static String shapeString(long[] shape) {
    StringBuilder sb = new StringBuilder("(");
    for (int q = 0; q < shape.length; q++) {
      sb.append(q == 0 ? "" : ", ").append(shape[q]);
    }
    return sb.append(shape.length == 1 ? ",)" : ")").toString();
  }

  private static String quoted(List<String> dtypes) {
    StringBuilder sb = new StringBuilder();
    for (String d : dtypes) {
      sb.append(sb.length() == 0 ? "" : ", ").append('\'').append(d).append('\'');
    }
    return sb.toString();
  }

  private static String printable(byte[] bytes) {
    StringBuilder sb = new StringBuilder("b'");
    for (byte b : bytes) {
      int v = b & 0xff;
      if (v >= 0x20 && v < 0x7f && v != '\\' && v != '\'') {
        sb.append((char) v);
      } else {
        sb.append(String.format("\\x%02x", v));
      }
    }
    return sb.append('\'').toString();
  }
}
