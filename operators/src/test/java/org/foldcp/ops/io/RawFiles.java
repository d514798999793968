package org.foldcp.ops.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Builds .npy and .safetensors files byte by byte, independently of the writers under test, so
 * that readers are checked against the formats rather than against our own encoder.
 */
final class RawFiles {
  private RawFiles() {}

  /** An .npy file of the given version with {@code dict} as header text, padded to 64 bytes. */
  static Path npy(Path file, int major, String dict, byte[] data) throws IOException {
    int prefix = major == 1 ? 10 : 12;
    int len = prefix + dict.length() + 1;
    int padded = (len + 63) / 64 * 64;
    StringBuilder header = new StringBuilder(dict);
    while (prefix + header.length() + 1 < padded) {
      header.append(' ');
    }
    header.append('\n');
    byte[] text = header.toString().getBytes(major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
    ByteBuffer b = ByteBuffer.allocate(prefix + text.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
    b.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) major).put((byte) 0);
    if (major == 1) {
      b.putShort((short) text.length);
    } else {
      b.putInt(text.length);
    }
    b.put(text).put(data);
    return Files.write(file, b.array());
  }

  /** A version 1.0 .npy file with the usual dict for {@code descr} and {@code shape} (Python spelling). */
  static Path npy(Path file, String descr, String shape, byte[] data) throws IOException {
    return npy(file, 1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }", data);
  }

  static byte[] f32(float... v) {
    ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
    for (float x : v) {
      b.putFloat(x);
    }
    return b.array();
  }

  static byte[] u16(int... v) {
    ByteBuffer b = ByteBuffer.allocate(2 * v.length).order(ByteOrder.LITTLE_ENDIAN);
    for (int x : v) {
      b.putShort((short) x);
    }
    return b.array();
  }

  static byte[] u8(int... v) {
    byte[] out = new byte[v.length];
    for (int q = 0; q < v.length; q++) {
      out[q] = (byte) v[q];
    }
    return out;
  }

  /** A .safetensors file: the u64 length of {@code json}, {@code json} itself, then {@code data}. */
  static Path safetensors(Path file, String json, byte[] data) throws IOException {
    byte[] text = json.getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(8 + text.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(text.length).put(text).put(data);
    return Files.write(file, b.array());
  }
}
