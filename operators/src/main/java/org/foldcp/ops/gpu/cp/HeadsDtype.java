package org.foldcp.ops.gpu.cp;

import java.util.Locale;
import org.foldcp.ops.InvalidInputException;

/** Element types the heads all-to-all moves (bit for bit: it never computes on them). */
public enum HeadsDtype {
  BF16(0, 2),
  F16(1, 2),
  F32(2, 4);

  final int code;
  private final int bytes;

  HeadsDtype(int code, int bytes) {
    this.code = code;
    this.bytes = bytes;
  }

  /** Bytes per element. */
  public int bytes() {
    return bytes;
  }

  /** Parses "bf16", "f16"/"fp16" or "f32"/"fp32" (any case). */
  public static HeadsDtype parse(String s) {
    String v = s == null ? "" : s.trim().toUpperCase(Locale.ROOT).replace("FP", "F");
    for (HeadsDtype d : values()) {
      if (d.name().equals(v)) {
        return d;
      }
    }
    throw InvalidInputException.of("dtype", "'" + s + "'", "must be bf16, fp16 or fp32");
  }

  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
