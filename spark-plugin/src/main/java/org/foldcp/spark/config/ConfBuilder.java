package org.foldcp.spark.config;

import java.util.Objects;

/**
 * The first steps of declaring a key, as in spark-rapids' RapidsConf: {@code
 * registry.conf(name).doc("...")}, optionally {@link #internal()}, then a type ({@link #intConf()},
 * {@link #bytesConf()}, ...) whose {@link TypedConf} states the key's rule and ends with {@link
 * TypedConf#createWithDefault}, which registers the key.
 */
final class ConfBuilder {
  private final ConfRegistry registry;
  private final String name;
  private String doc = "";
  private boolean isPublic = true;

  ConfBuilder(ConfRegistry registry, String name) {
    this.registry = registry;
    this.name = Objects.requireNonNull(name, "name");
  }

  /** What the setting does, as README.md shows it. */
  ConfBuilder doc(String doc) {
    this.doc = Objects.requireNonNull(doc, "doc");
    return this;
  }

  /** Accepted and validated like any key, but left out of README.md and of the unknown-key hints. */
  ConfBuilder internal() {
    this.isPublic = false;
    return this;
  }

  /** An integer; its bound follows ({@code intConf().atLeast("1")}). */
  NumberConf<Integer> intConf() {
    return new NumberConf<>(this, "an integer", "", Integer::parseInt);
  }

  /** A byte count written as Spark writes sizes (2g, 512m, 1048576); its bound follows. */
  NumberConf<Long> bytesConf() {
    return new NumberConf<>(this, "a byte count", " with an optional suffix k, m, g, t (powers of 1024)",
        ValueParsers::byteCount);
  }

  /** A finite number of seconds; its bound follows. */
  NumberConf<Double> secondsConf() {
    return new NumberConf<>(this, "a number of seconds", "", ValueParsers::finiteNumber);
  }

  TypedConf<Boolean> booleanConf() {
    return parsedBy("true or false", ValueParsers::bool);
  }

  /** One of the constants of {@code type}, written in any case; the docs list them in lower case. */
  <E extends Enum<E>> TypedConf<E> enumConf(Class<E> type) {
    return parsedBy("one of " + ValueParsers.labels(type), ValueParsers.anyCaseEnum(type));
  }

  TypedConf<String> absolutePathConf() {
    return parsedBy("an absolute path", ValueParsers::absolutePath);
  }

  /** A type none of the above describes: {@code values} says what {@code parser} accepts. */
  <T> TypedConf<T> parsedBy(String values, ConfKey.Parser<T> parser) {
    return new TypedConf<>(this, values, parser);
  }

  /** Makes the key, checks that its default keeps its own rule, and registers it. */
  <T> ConfKey<T> create(String values, String defaultValue, ConfKey.Parser<T> parser) {
    ConfKey<T> key = new ConfKey<>(name, values, defaultValue, doc, isPublic, parser);
    key.parseDefault();
    return registry.register(key);
  }
}
