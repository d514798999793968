package org.foldcp.spark.config;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;
import org.foldcp.ops.InvalidInputException;

/**
 * The parsers behind {@link ConfBuilder}'s types. Each turns a trimmed setting into a value or
 * throws an IllegalArgumentException; {@link ConfKey#parse} turns that into the error naming the
 * key, the value and the rule.
 */
final class ValueParsers {
  private ValueParsers() {}

  /**
   * A byte count with an optional binary suffix k, m, g or t (an optional trailing b is allowed, so
   * 2g, 2gb and 2147483648 are the same), as NVSHMEM and Spark size settings are written.
   */
  static long byteCount(String setting) {
    String v = setting.toLowerCase(Locale.ROOT);
    if (v.endsWith("b")) {
      v = v.substring(0, v.length() - 1);
    }
    int shift = 0;
    if (!v.isEmpty()) {
      int unit = "kmgt".indexOf(v.charAt(v.length() - 1));
      if (unit >= 0) {
        shift = 10 * (unit + 1);
        v = v.substring(0, v.length() - 1);
      }
    }
    long count = Long.parseLong(v);
    if (count < 0 || count > (Long.MAX_VALUE >> shift)) {
      throw new IllegalArgumentException("not a byte count: " + setting);
    }
    return count << shift;
  }

  /** A finite number ({@code Double.parseDouble} also reads NaN and Infinity, which no setting means). */
  static double finiteNumber(String setting) {
    double v = Double.parseDouble(setting);
    if (!Double.isFinite(v)) {
      throw new IllegalArgumentException("not finite: " + setting);
    }
    return v;
  }

  static boolean bool(String setting) {
    switch (setting.toLowerCase(Locale.ROOT)) {
      case "true":
        return true;
      case "false":
        return false;
      default:
        throw new IllegalArgumentException("not a boolean: " + setting);
    }
  }

  /** The constants of {@code type} as settings name them: lower case, in declaration order. */
  static String labels(Class<? extends Enum<?>> type) {
    return Arrays.stream(type.getEnumConstants()).map(e -> e.name().toLowerCase(Locale.ROOT))
        .collect(Collectors.joining(", "));
  }

  /** The constant of {@code type} named by the setting in any case. */
  static <E extends Enum<E>> ConfKey.Parser<E> anyCaseEnum(Class<E> type) {
    return setting -> {
      for (E e : type.getEnumConstants()) {
        if (e.name().equalsIgnoreCase(setting)) {
          return e;
        }
      }
      throw new IllegalArgumentException("not a " + type.getSimpleName() + ": " + setting);
    };
  }

  /** An absolute path (executors would resolve a relative one against a working directory nobody chose). */
  static String absolutePath(String setting) {
    boolean absolute;
    try {
      absolute = Path.of(setting).isAbsolute();
    } catch (InvalidPathException e) {
      absolute = false;
    }
    if (!absolute) {
      throw new IllegalArgumentException("not absolute: " + setting);
    }
    return setting;
  }

  /** A comma-separated ascending list of integers >= 1 whose first is 1. */
  static int[] ascendingIntsFromOne(String setting) {
    String[] parts = setting.split(",");
    int[] out = new int[parts.length];
    for (int i = 0; i < parts.length; i++) {
      out[i] = Integer.parseInt(parts[i].trim());
      if (out[i] < 1 || (i > 0 && out[i] <= out[i - 1])) {
        throw new IllegalArgumentException("not ascending from 1: " + setting);
      }
    }
    if (out[0] != 1) {
      throw new InvalidInputException("cp = 1 first: a complex that fits runs whole");
    }
    return out;
  }
}
