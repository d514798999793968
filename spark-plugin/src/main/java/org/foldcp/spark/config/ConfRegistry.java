package org.foldcp.spark.config;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The keys of one namespace, each registered once as it is declared ({@link #conf}), in
 * declaration order. Everything that needs the list of keys reads it here: the validation of a
 * configuration ({@link #known}, {@link #read}), the unknown-key check with its "did you mean"
 * hint, and README.md's table ({@link #markdownTable()}).
 */
final class ConfRegistry {
  /** Every key's effective setting (the given one, trimmed, or its default) and parsed value, in key order. */
  record Parsed(Map<String, String> settings, Map<ConfKey<?>, Object> values) {}

  private final String prefix;
  private final String owner;
  private final List<ConfKey<?>> keys = new ArrayList<>();
  private final List<ConfKey<?>> keysView = Collections.unmodifiableList(keys);
  private final Map<String, ConfKey<?>> byName = new HashMap<>();

  /** Keys all start with {@code prefix}; {@code owner} names them in errors ("not a fold-cp setting"). */
  ConfRegistry(String prefix, String owner) {
    this.prefix = prefix;
    this.owner = owner;
  }

  /** Starts declaring the key {@code name}, which must start with this registry's prefix. */
  ConfBuilder conf(String name) {
    return new ConfBuilder(this, name);
  }

  <T> ConfKey<T> register(ConfKey<T> key) {
    if (!key.name().startsWith(prefix)) {
      throw new IllegalStateException(key.name() + " is outside " + prefix);
    }
    if (byName.putIfAbsent(key.name(), key) != null) {
      throw new IllegalStateException("declared twice: " + key.name());
    }
    keys.add(key);
    return key;
  }

  /** Every key, in declaration order (a live, unmodifiable view). */
  List<ConfKey<?>> keys() {
    return keysView;
  }

  /**
   * The settings of {@code conf} under the prefix, sorted by key; other keys are ignored.
   *
   * @throws org.foldcp.ops.InvalidInputException naming the first unknown key under the prefix
   */
  Map<String, String> known(Map<String, String> conf) {
    Map<String, String> ours = new TreeMap<>(); // sorted, so the first unknown key reported is stable
    for (Map.Entry<String, String> e : conf.entrySet()) {
      if (e.getKey().startsWith(prefix)) {
        ours.put(e.getKey(), e.getValue());
      }
    }
    List<String> unknown = ours.keySet().stream().filter(k -> !byName.containsKey(k)).toList();
    if (!unknown.isEmpty()) {
      String key = unknown.get(0);
      throw ConfKey.rejection(key, ours.get(key), unknownKeyRule(key, unknown));
    }
    return ours;
  }

  private String unknownKeyRule(String key, List<String> unknown) {
    List<String> shown = keys.stream().filter(ConfKey::isPublic).map(ConfKey::name).toList();
    StringBuilder rule = new StringBuilder("not a " + owner + " setting");
    Spelling.closest(key, shown, prefix).ifPresent(k -> rule.append(" (did you mean ").append(k).append("?)"));
    rule.append("; the known keys are ").append(String.join(", ", shown));
    if (unknown.size() > 1) {
      rule.append("; also unknown: ").append(String.join(", ", unknown.subList(1, unknown.size())));
    }
    return rule.toString();
  }

  /** Parses every key's setting in {@code given} (keys this registry knows), or its default where none is given. */
  Parsed read(Map<String, String> given) {
    Map<String, String> settings = new LinkedHashMap<>();
    Map<ConfKey<?>, Object> values = new IdentityHashMap<>(); // one object per key
    for (ConfKey<?> k : keys) {
      String raw = given.get(k.name());
      String setting = raw == null ? k.defaultValue() : raw.trim();
      settings.put(k.name(), setting);
      values.put(k, k.parse(setting));
    }
    return new Parsed(Collections.unmodifiableMap(settings), Collections.unmodifiableMap(values));
  }

  /** The public keys as a Markdown table (key | default | meaning), as README.md shows it. */
  String markdownTable() {
    StringBuilder sb = new StringBuilder();
    sb.append("| key | default | meaning |\n");
    sb.append("|---|---|---|\n");
    for (ConfKey<?> k : keys) {
      if (!k.isPublic()) {
        continue;
      }
      String def = k.defaultValue().isEmpty() ? "(empty)" : "`" + k.defaultValue() + "`";
      sb.append("| `").append(k.name()).append("` | ").append(def).append(" | ")
          .append(cell(k.doc() + " Values: " + k.values() + ".")).append(" |\n");
    }
    return sb.toString();
  }

  private static String cell(String text) {
    return text.replace("|", "\\|");
  }
}
