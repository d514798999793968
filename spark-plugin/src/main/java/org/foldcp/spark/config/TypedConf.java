package org.foldcp.spark.config;

/**
 * A key being declared whose type is known: the phrase that says which values it accepts (also the
 * rule its errors quote) and the parser that holds to it. The methods here widen or illustrate the
 * accepted values; {@link #createWithDefault} registers the key.
 *
 * @param <T> the type the setting parses to
 */
class TypedConf<T> {
  final ConfBuilder key;
  final String values;
  final ConfKey.Parser<T> parser;

  TypedConf(ConfBuilder key, String values, ConfKey.Parser<T> parser) {
    this.key = key;
    this.values = values;
    this.parser = parser;
  }

  /** Also accepts {@code word} in any case, meaning {@code value} ("auto or an integer >= 1"). */
  TypedConf<T> or(String word, T value) {
    return new TypedConf<>(key, word + " or " + values,
        setting -> setting.equalsIgnoreCase(word) ? value : parser.parse(setting));
  }

  /** Also accepts the empty setting, meaning {@code value} ("empty or an absolute path"). */
  TypedConf<T> orEmpty(T value) {
    return new TypedConf<>(key, "empty or " + values, setting -> setting.isEmpty() ? value : parser.parse(setting));
  }

  /** Adds an example setting to the phrase (", e.g. 2g"); it must parse, so that no doc shows a bad one. */
  TypedConf<T> example(String setting) {
    parser.parse(setting);
    return new TypedConf<>(key, values + ", e.g. " + setting, parser);
  }

  /**
   * Registers the key with its default, written as a configuration would set it (so that README.md
   * and {@link FoldCpConf#asMap()} show it as such); a default that breaks the key's own rule fails
   * here, when the declaring class loads.
   */
  ConfKey<T> createWithDefault(String setting) {
    return key.create(values, setting, parser);
  }
}
