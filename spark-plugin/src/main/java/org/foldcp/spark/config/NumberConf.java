package org.foldcp.spark.config;

import java.util.function.Predicate;

/**
 * A numeric key being declared, before its bound: {@link #atLeast}, {@link #above} or {@link #in}
 * add the bound to both the phrase and the parser, so the rule is written once. Bounds are written
 * as settings are ("32m" for a byte count), so that the phrase reads as a user would write them.
 *
 * @param <T> the number type
 */
final class NumberConf<T extends Comparable<? super T>> extends TypedConf<T> {
  private final String noun;
  private final String note;

  /** {@code noun} names the type ("an integer"), {@code note} follows the bound (" with an optional suffix ..."). */
  NumberConf(ConfBuilder key, String noun, String note, ConfKey.Parser<T> parser) {
    super(key, noun + note, parser);
    this.noun = noun;
    this.note = note;
  }

  /** Values {@code >= min}. */
  TypedConf<T> atLeast(String min) {
    T bound = parser.parse(min);
    return bounded(" >= " + min, v -> v.compareTo(bound) >= 0);
  }

  /** Values {@code > min}. */
  TypedConf<T> above(String min) {
    T bound = parser.parse(min);
    return bounded(" > " + min, v -> v.compareTo(bound) > 0);
  }

  /** Values from {@code min} to {@code max}, both included. */
  TypedConf<T> in(String min, String max) {
    T lo = parser.parse(min);
    T hi = parser.parse(max);
    return bounded(" in [" + min + ", " + max + "]", v -> v.compareTo(lo) >= 0 && v.compareTo(hi) <= 0);
  }

  private TypedConf<T> bounded(String rule, Predicate<T> ok) {
    return new TypedConf<>(key, noun + rule + note, setting -> {
      T v = parser.parse(setting);
      if (!ok.test(v)) {
        throw new IllegalArgumentException("out of bounds: " + setting);
      }
      return v;
    });
  }
}
