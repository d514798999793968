package org.foldcp.spark.config;

import java.util.Locale;
import org.foldcp.ops.InvalidInputException;

/** The parsers behind {@link FoldCpConf}'s keys; each failure names the key, the raw value and the rule. */
final class ValueParsers {
  private ValueParsers() {}

  /** Raw settings are quoted in messages so that empty or odd values stay visible. */
  static InvalidInputException bad(String key, String raw, String rule) {
    return InvalidInputException.of(key, "'" + raw + "'", rule);
  }

  static ConfKey.Parser<Integer> intAtLeast(int min) {
    return intIn(min, Integer.MAX_VALUE);
  }

  static ConfKey.Parser<Integer> intIn(int min, int max) {
    return (key, raw, values) -> {
      int v;
      try {
        v = Integer.parseInt(raw);
      } catch (NumberFormatException e) {
        throw bad(key, raw, "must be " + values);
      }
      if (v < min || v > max) {
        throw bad(key, raw, "must be " + values);
      }
      return v;
    };
  }

  /** A comma-separated ascending list of integers >= 1 whose first is 1 (cp = 1 always a choice). */
  static ConfKey.Parser<int[]> ascendingIntsFromOne() {
    return (key, raw, values) -> {
      String[] parts = raw.split(",");
      int[] out = new int[parts.length];
      for (int i = 0; i < parts.length; i++) {
        try {
          out[i] = Integer.parseInt(parts[i].trim());
        } catch (NumberFormatException e) {
          throw bad(key, raw, "must be " + values);
        }
        if (out[i] < 1 || (i > 0 && out[i] <= out[i - 1])) {
          throw bad(key, raw, "must be " + values);
        }
      }
      if (out[0] != 1) {
        throw bad(key, raw, "must be " + values + " (cp = 1 first: a complex that fits runs whole)");
      }
      return out;
    };
  }

  /** "none" (any case) as positive infinity, else a finite number of seconds > 0. */
  static ConfKey.Parser<Double> noneOrPositiveSeconds() {
    return (key, raw, values) -> {
      if (raw.trim().equalsIgnoreCase("none")) {
        return Double.POSITIVE_INFINITY;
      }
      double v;
      try {
        v = Double.parseDouble(raw.trim());
      } catch (NumberFormatException e) {
        throw bad(key, raw, "must be " + values);
      }
      if (!(v > 0) || !Double.isFinite(v)) {
        throw bad(key, raw, "must be " + values);
      }
      return v;
    };
  }

  /** "auto" (any case) as 0, else an integer >= {@code min}. */
  static ConfKey.Parser<Integer> autoOrIntAtLeast(int min) {
    ConfKey.Parser<Integer> number = intAtLeast(min);
    return (key, raw, values) -> raw.trim().equalsIgnoreCase("auto") ? 0 : number.parse(key, raw, values);
  }

  static ConfKey.Parser<Boolean> bool() {
    return (key, raw, values) -> {
      switch (raw.toLowerCase(Locale.ROOT)) {
        case "true":
          return true;
        case "false":
          return false;
        default:
          throw bad(key, raw, "must be " + values);
      }
    };
  }

  static <E extends Enum<E>> ConfKey.Parser<E> anyCaseEnum(Class<E> type) {
    return (key, raw, values) -> {
      for (E e : type.getEnumConstants()) {
        if (e.name().equalsIgnoreCase(raw)) {
          return e;
        }
      }
      throw bad(key, raw, "must be " + values);
    };
  }

  /**
   * A byte count of at least {@code min} with an optional binary suffix k, m, g or t (an optional
   * trailing b is allowed, so 2g, 2gb and 2147483648 are the same), as NVSHMEM and Spark size
   * settings are written.
   */
  static ConfKey.Parser<Long> byteSizeAtLeast(long min) {
    return (key, raw, values) -> {
      String v = raw.toLowerCase(Locale.ROOT);
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
      long count;
      try {
        count = Long.parseLong(v);
      } catch (NumberFormatException e) {
        throw bad(key, raw, "must be " + values);
      }
      if (count < (min == 0 ? 0 : 1) || count > (Long.MAX_VALUE >> shift) || (count << shift) < min) {
        throw bad(key, raw, "must be " + values);
      }
      return count << shift;
    };
  }

  /** Empty, or an absolute path (executors resolve a relative one against a working directory nobody chose). */
  static ConfKey.Parser<String> emptyOrAbsolutePath() {
    return (key, raw, values) -> {
      if (raw.isEmpty()) {
        return raw;
      }
      boolean absolute;
      try {
        absolute = java.nio.file.Path.of(raw).isAbsolute();
      } catch (java.nio.file.InvalidPathException e) {
        absolute = false;
      }
      if (!absolute) {
        throw bad(key, raw, "must be " + values);
      }
      return raw;
    };
  }
}
