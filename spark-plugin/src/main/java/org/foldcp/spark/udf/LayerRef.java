package org.foldcp.spark.udf;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.TriMulSpec;

/**
 * One entry of the {@code layers} argument of {@code foldcp_trimul}: which layer to read from
 * the weights file (its key prefix) and how to apply it.
 *
 * <p>Syntax of one entry: {@code prefix[:option]...}, options {@code in}/{@code incoming},
 * {@code out}/{@code outgoing}, {@code residual}, {@code noresidual}. Without a direction option
 * the prefix decides, as model files name their layers: a prefix containing "tri_mul_in" is
 * incoming, any other outgoing (the rule of the example job's --prefix option). Residual is on
 * unless {@code noresidual} is given, as in every Pairformer block.
 */
public final class LayerRef implements Serializable {
  private static final long serialVersionUID = 1L;

  private static final String OPTIONS = "in, incoming, out, outgoing, residual, noresidual";

  private final String prefix;
  private final Direction direction;
  private final boolean residual;

  public LayerRef(String prefix, Direction direction, boolean residual) {
    InvalidInputException.require(prefix != null && !prefix.isBlank(), "layer key prefix",
        prefix == null ? "null" : "'" + prefix + "'", "must be non-empty");
    this.prefix = prefix;
    this.direction = Objects.requireNonNull(direction, "direction");
    this.residual = residual;
  }

  /**
   * Parses a comma-separated list of entries, e.g.
   * {@code "pairformer.layers.0.tri_mul_out., pairformer.layers.0.tri_mul_in."} or
   * {@code "blk.a:in:noresidual,blk.b:out"}. Whitespace around entries and options is ignored.
   */
  public static List<LayerRef> parseList(String layers) {
    InvalidInputException.require(layers != null && !layers.isBlank(), "layers",
        layers == null ? "null" : "'" + layers + "'",
        "must list at least one weight key prefix, comma-separated, e.g. 'm.tri_mul_out.,m.tri_mul_in.'");
    String[] entries = layers.split(",", -1);
    List<LayerRef> out = new ArrayList<>(entries.length);
    for (int q = 0; q < entries.length; q++) {
      out.add(parse(entries[q].trim(), q, layers));
    }
    return Collections.unmodifiableList(out);
  }

  private static LayerRef parse(String entry, int index, String list) {
    String where = "entry " + index + " of layers '" + list + "'";
    InvalidInputException.require(!entry.isEmpty(), where, "''",
        "every comma-separated entry must name a weight key prefix (a stray comma?)");
    String[] parts = entry.split(":", -1);
    String prefix = parts[0].trim();
    InvalidInputException.require(!prefix.isEmpty(), where, "'" + entry + "'",
        "must start with a weight key prefix before any ':option'");
    Direction direction = null;
    Boolean residual = null;
    for (int p = 1; p < parts.length; p++) {
      String opt = parts[p].trim().toLowerCase(Locale.ROOT);
      switch (opt) {
        case "in":
        case "incoming":
        case "out":
        case "outgoing":
          Direction d = Direction.parse(opt);
          InvalidInputException.require(direction == null || direction == d, where, "'" + entry + "'",
              "gives both directions; use one of :in or :out");
          direction = d;
          break;
        case "residual":
        case "noresidual":
          boolean r = opt.equals("residual");
          InvalidInputException.require(residual == null || residual == r, where, "'" + entry + "'",
              "gives both :residual and :noresidual; use one");
          residual = r;
          break;
        default:
          throw InvalidInputException.of("option ':" + parts[p].trim() + "' of " + where, "'" + entry + "'",
              "options after the prefix must be among " + OPTIONS);
      }
    }
    return new LayerRef(prefix, direction != null ? direction : directionOf(prefix), residual == null || residual);
  }

  /** The direction a prefix implies when no option says otherwise. */
  static Direction directionOf(String prefix) {
    return prefix.toLowerCase(Locale.ROOT).contains("tri_mul_in") ? Direction.INCOMING : Direction.OUTGOING;
  }

  public String prefix() { return prefix; }

  public Direction direction() { return direction; }

  public boolean residual() { return residual; }

  public TriMulSpec spec() {
    return TriMulSpec.of(direction, residual);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof LayerRef)) {
      return false;
    }
    LayerRef r = (LayerRef) o;
    return r.prefix.equals(prefix) && r.direction == direction && r.residual == residual;
  }

  @Override
  public int hashCode() {
    return Objects.hash(prefix, direction, residual);
  }

  /** The entry in the syntax {@link #parseList} reads, with every option spelled out. */
  @Override
  public String toString() {
    return prefix + ":" + (direction == Direction.INCOMING ? "in" : "out") + (residual ? "" : ":noresidual");
  }
}
