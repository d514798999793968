package org.foldcp.ops.gpu.cp;

import java.util.Locale;
import org.foldcp.ops.InvalidInputException;

/**
 * How the fused reshards reach the other ranks; chosen once when a {@link CpGpuStack} is made,
 * identically on every rank, and shown in logs and explain(). Same kernels either way: only the
 * store targets of their epilogues differ.
 */
public enum StoreRoute {
  /** PEER when every rank reaches every peer through a pointer, else PUT. */
  AUTO(0),
  /** Epilogues store through NVSHMEM peer pointers (NVLink within a node, or one shared GPU). */
  PEER(1),
  /** Epilogues store into local staging; device-initiated puts carry it (peers on other nodes). */
  PUT(2);

  final int code;

  StoreRoute(int code) {
    this.code = code;
  }

  static StoreRoute ofCode(int code) {
    for (StoreRoute r : values()) {
      if (r.code == code) {
        return r;
      }
    }
    throw new IllegalStateException("unknown native store route " + code);
  }

  /** Parses "auto", "peer" or "put" (any case). */
  public static StoreRoute parse(String s) {
    String v = s == null ? "" : s.trim().toUpperCase(Locale.ROOT);
    for (StoreRoute r : values()) {
      if (r.name().equals(v)) {
        return r;
      }
    }
    throw InvalidInputException.of("store route", "'" + s + "'", "must be auto, peer or put");
  }

  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
