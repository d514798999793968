package org.foldcp.spark.config;

import java.util.Objects;
import org.foldcp.ops.InvalidInputException;

/**
 * One {@code spark.foldcp.*} setting: its name, the values it accepts, its default, what it means,
 * whether README.md lists it, and how it parses. A key is declared once, through {@link
 * ConfBuilder} (for example {@code conf("spark.foldcp.cpu.threads").doc("...").intConf()
 * .atLeast("0").createWithDefault("0")}), which also registers it in its {@link ConfRegistry}:
 * the README table, the validation of a configuration and the unknown-key check all read that
 * list.
 *
 * <p>Parsing goes through the key, so that every error names the key, the bad value and the rule
 * ({@link #values()}), in the project's {@code "what = value: rule"} form.
 *
 * @param <T> the type the setting parses to
 */
public final class ConfKey<T> {
  /**
   * Turns a trimmed setting into a value. A setting that breaks the key's rule makes it throw an
   * IllegalArgumentException (a NumberFormatException, say); the key then reports the setting and
   * its rule. Where the exception is an {@link InvalidInputException}, whose message is written for
   * the user, that message is added to the error in parentheses.
   */
  @FunctionalInterface
  interface Parser<T> {
    T parse(String setting);
  }

  private final String name;
  private final String values;
  private final String defaultValue;
  private final String doc;
  private final boolean isPublic;
  private final Parser<T> parser;

  ConfKey(String name, String values, String defaultValue, String doc, boolean isPublic, Parser<T> parser) {
    this.name = Objects.requireNonNull(name, "name");
    this.values = Objects.requireNonNull(values, "values");
    this.defaultValue = Objects.requireNonNull(defaultValue, "defaultValue");
    this.doc = Objects.requireNonNull(doc, "doc");
    this.isPublic = isPublic;
    this.parser = Objects.requireNonNull(parser, "parser");
  }

  /** The full key, e.g. {@code spark.foldcp.cp}. */
  public String name() { return name; }

  /** The values the key accepts, as a phrase ("an integer >= 1"); also the rule in errors. */
  public String values() { return values; }

  /** The default as a raw setting (possibly empty). */
  public String defaultValue() { return defaultValue; }

  /** What the setting does. */
  public String doc() { return doc; }

  /** Whether README.md's table and the unknown-key hints show the key; an internal key is accepted all the same. */
  public boolean isPublic() { return isPublic; }

  /** Parses {@code raw} (surrounding whitespace ignored); errors name this key, {@code raw} and the rule. */
  public T parse(String raw) {
    String setting = raw == null ? "" : raw.trim();
    try {
      return parser.parse(setting);
    } catch (IllegalArgumentException e) {
      String detail = e instanceof InvalidInputException ? " (" + e.getMessage() + ")" : "";
      throw reject(setting, "must be " + values + detail);
    }
  }

  /** The parsed default. */
  public T parseDefault() {
    return parse(defaultValue);
  }

  /** The error for {@code setting} of this key breaking {@code rule}. */
  InvalidInputException reject(String setting, String rule) {
    return rejection(name, setting, rule);
  }

  /** The error for {@code setting} of {@code key} breaking {@code rule}; quoted, an empty setting shows. */
  static InvalidInputException rejection(String key, String setting, String rule) {
    return InvalidInputException.of(key, "'" + setting + "'", rule);
  }

  @Override
  public String toString() {
    return name;
  }
}
