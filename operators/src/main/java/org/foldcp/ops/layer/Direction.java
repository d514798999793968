package org.foldcp.ops.layer;

import java.util.Locale;
import org.foldcp.ops.InvalidInputException;

/** Which triangle edges a TriMul layer multiplies (docs/design.md section 1). */
public enum Direction {
  /** z[i,j,c] = sum_k a[i,k,c] b[j,k,c] ("tri_mul_out" in Boltz / AlphaFold3). */
  OUTGOING,
  /** z[i,j,c] = sum_k a[k,i,c] b[k,j,c] ("tri_mul_in"). */
  INCOMING;

  /** Parses "outgoing"/"out"/"tri_mul_out" and "incoming"/"in"/"tri_mul_in", case-insensitive. */
  public static Direction parse(String s) {
    String v = s == null ? "" : s.trim().toLowerCase(Locale.ROOT);
    switch (v) {
      case "outgoing":
      case "out":
      case "tri_mul_out":
        return OUTGOING;
      case "incoming":
      case "in":
      case "tri_mul_in":
        return INCOMING;
      default:
        throw InvalidInputException.of("direction", "'" + s + "'",
            "must be one of outgoing (out, tri_mul_out) or incoming (in, tri_mul_in)");
    }
  }

  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
