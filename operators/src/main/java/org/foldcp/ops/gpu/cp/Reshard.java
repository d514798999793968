package org.foldcp.ops.gpu.cp;

import java.util.Locale;
import org.foldcp.ops.InvalidInputException;

/**
 * How the CP TriMul's two reshards run; chosen once when a {@link CpGpuStack} is made,
 * identically on every rank, and shown in logs and explain(). The arithmetic is the same either
 * way (the outputs are equal value for value); only the data movement differs.
 */
public enum Reshard {
  /** Inside the GEMM epilogues: every value is stored straight into the rank that owns it. */
  FUSED(0),
  /**
   * The kernels store locally (channel slices and z tiles staged per rank), then a separate
   * all-to-all moves them: the all-to-all primitive's strided block copy over peer pointers
   * (the reference the fused route is measured against). With store route PUT the puts already
   * run after the local stores, so FUSED and UNFUSED are the same there.
   */
  UNFUSED(1);

  final int code;

  Reshard(int code) {
    this.code = code;
  }

  static Reshard ofCode(int code) {
    for (Reshard r : values()) {
      if (r.code == code) {
        return r;
      }
    }
    throw new IllegalStateException("unknown native reshard mode " + code);
  }

  /** Parses "fused" or "unfused" (any case). */
  public static Reshard parse(String s) {
    String v = s == null ? "" : s.trim().toUpperCase(Locale.ROOT);
    for (Reshard r : values()) {
      if (r.name().equals(v)) {
        return r;
      }
    }
    throw InvalidInputException.of("reshard", "'" + s + "'", "must be fused or unfused");
  }

  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
