package org.foldcp.spark.config;

import java.util.Objects;

/**
 * One {@code spark.foldcp.*} setting: its name, the values it accepts, its default and what it
 * means. Parsing goes through the key so that every error names the key, the bad value and the
 * rule, in the project's {@code "what = value: rule"} form. {@link FoldCpConf} declares each key
 * once, as a constant that its {@code register} helper also lists in {@link FoldCpConf#KEYS}.
 *
 * @param <T> the type the setting parses to
 */
public final class ConfKey<T> {
  /**
   * Turns a raw setting into a value, or throws an InvalidInputException naming the key, the
   * value and {@code values} (the key's accepted values, which are also the rule it breaks).
   */
  @FunctionalInterface
  interface Parser<T> {
    T parse(String key, String raw, String values);
  }

  private final String name;
  private final String values;
  private final String defaultValue;
  private final String doc;
  private final Parser<T> parser;

  ConfKey(String name, String values, String defaultValue, String doc, Parser<T> parser) {
    this.name = Objects.requireNonNull(name, "name");
    this.values = Objects.requireNonNull(values, "values");
    this.defaultValue = Objects.requireNonNull(defaultValue, "defaultValue");
    this.doc = Objects.requireNonNull(doc, "doc");
    this.parser = Objects.requireNonNull(parser, "parser");
  }

  /** The full key, e.g. {@code spark.foldcp.cp}. */
  public String name() { return name; }

  /** The values the key accepts, as a phrase ("an integer >= 1"); also the rule in errors. */
  public String values() { return values; }

  /** The default as a raw setting (possibly empty). */
  public String defaultValue() { return defaultValue; }

  /** One line on what the setting does. */
  public String doc() { return doc; }

  /** Parses {@code raw} (surrounding whitespace ignored); errors name this key and {@code raw}. */
  public T parse(String raw) {
    return parser.parse(name, raw == null ? "" : raw.trim(), values);
  }

  /** The parsed default. */
  public T parseDefault() {
    return parse(defaultValue);
  }

  @Override
  public String toString() {
    return name;
  }
}
