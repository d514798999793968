package org.foldcp.spark.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.foldcp.ops.InvalidInputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The key machinery on its own, over a registry of test keys: declaration, docs, validation, errors. */
class ConfRegistryTest {
  enum Mode { FAST, SAFE }

  private final ConfRegistry registry = new ConfRegistry("spark.t.", "test");
  private final ConfKey<Integer> threads = registry.conf("spark.t.threads").doc("Threads per task.")
      .intConf().atLeast("1").or("auto", 0).createWithDefault("4");
  private final ConfKey<Long> pool = registry.conf("spark.t.poolBytes").doc("Pool size.")
      .bytesConf().atLeast("1m").example("2g").createWithDefault("1g");
  private final ConfKey<Mode> mode = registry.conf("spark.t.mode").doc("How it runs.")
      .enumConf(Mode.class).createWithDefault("fast");
  private final ConfKey<String> home = registry.conf("spark.t.home").doc("Where | it lives.")
      .absolutePathConf().orEmpty("").createWithDefault("");
  private final ConfKey<Boolean> secret = registry.conf("spark.t.secretSwitch").doc("For tests only.").internal()
      .booleanConf().createWithDefault("false");

  @Test
  void aKeyDeclaredOnceIsInTheTableInOrderWithItsRule() {
    assertEquals(List.of(threads, pool, mode, home, secret), registry.keys());
    assertEquals("| key | default | meaning |\n"
        + "|---|---|---|\n"
        + "| `spark.t.threads` | `4` | Threads per task. Values: auto or an integer >= 1. |\n"
        + "| `spark.t.poolBytes` | `1g` | Pool size. Values: a byte count >= 1m with an optional suffix k, m, g, t"
        + " (powers of 1024), e.g. 2g. |\n"
        + "| `spark.t.mode` | `fast` | How it runs. Values: one of fast, safe. |\n"
        + "| `spark.t.home` | (empty) | Where \\| it lives. Values: empty or an absolute path. |\n",
        registry.markdownTable(), "an internal key is left out");
  }

  @Test
  void aKeyDeclaredOnceIsValidatedAndParsed() {
    ConfRegistry.Parsed p = registry.read(registry.known(Map.of(
        "spark.t.threads", " AUTO ", "spark.t.mode", "Safe", "spark.t.secretSwitch", "true", "other.key", "x")));
    assertEquals(0, p.values().get(threads));
    assertEquals(1L << 30, p.values().get(pool), "the default where none is given");
    assertEquals(Mode.SAFE, p.values().get(mode));
    assertEquals("", p.values().get(home));
    assertEquals(true, p.values().get(secret), "an internal key is accepted");
    assertEquals(List.of("spark.t.threads", "spark.t.poolBytes", "spark.t.mode", "spark.t.home", "spark.t.secretSwitch"),
        List.copyOf(p.settings().keySet()));
    assertEquals("AUTO", p.settings().get("spark.t.threads"), "trimmed, as given");
    assertEquals("1g", p.settings().get("spark.t.poolBytes"));
  }

  @Test
  void anUnknownKeyIsNamedWithTheKeyItWasMeantToBe() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> registry.known(Map.of("spark.t.thread", "2", "spark.t.zzz", "3")));
    assertEquals("spark.t.thread = '2': not a test setting (did you mean spark.t.threads?); the known keys are"
        + " spark.t.threads, spark.t.poolBytes, spark.t.mode, spark.t.home; also unknown: spark.t.zzz", e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> registry.known(Map.of("spark.t.secretSwitc", "true")));
    assertFalse(e.getMessage().contains("did you mean"), "internal keys are not suggested: " + e.getMessage());
  }

  @ParameterizedTest(name = "{0} = ''{1}''")
  @CsvSource(delimiter = ';', value = {
      "spark.t.threads; 0; must be auto or an integer >= 1",
      "spark.t.threads; two; must be auto or an integer >= 1",
      "spark.t.poolBytes; 1023k; must be a byte count >= 1m with an optional suffix k, m, g, t (powers of 1024), e.g. 2g",
      "spark.t.poolBytes; -1g; must be a byte count >= 1m with an optional suffix k, m, g, t (powers of 1024), e.g. 2g",
      "spark.t.mode; slow; must be one of fast, safe",
      "spark.t.home; relative/dir; must be empty or an absolute path",
      "spark.t.secretSwitch; yes; must be true or false"})
  void aTypedParseFailureNamesKeyValueAndRule(String key, String value, String rule) {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> registry.read(registry.known(Map.of(key, value))));
    assertEquals(key + " = '" + value + "': " + rule, e.getMessage());
  }

  @Test
  void aParserInvalidInputExplainsTheRuleInParentheses() {
    ConfKey<Integer> even = registry.conf("spark.t.even").doc("An even count.").parsedBy("an even integer", s -> {
      int v = Integer.parseInt(s);
      if (v % 2 != 0) {
        throw new InvalidInputException(v + " is odd");
      }
      return v;
    }).createWithDefault("2");
    assertEquals("spark.t.even = '3': must be an even integer (3 is odd)",
        assertThrows(InvalidInputException.class, () -> even.parse("3")).getMessage());
    assertEquals("spark.t.even = 'x': must be an even integer",
        assertThrows(InvalidInputException.class, () -> even.parse("x")).getMessage(), "no detail from Java's parser");
  }

  @Test
  void boundsHoldAtTheirEdges() {
    ConfKey<Integer> slots = registry.conf("spark.t.slots").doc("Slots.").intConf().in("1", "3").createWithDefault("1");
    ConfKey<Double> wait = registry.conf("spark.t.wait").doc("Wait.").secondsConf().above("0").createWithDefault("1");
    assertEquals(3, slots.parse("3"));
    assertThrows(InvalidInputException.class, () -> slots.parse("4"));
    assertEquals("an integer in [1, 3]", slots.values());
    assertEquals(0.5, wait.parse("0.5"));
    for (String bad : new String[] {"0", "NaN", "Infinity", "1e400"}) {
      assertThrows(InvalidInputException.class, () -> wait.parse(bad), bad);
    }
  }

  @Test
  void aBadDeclarationFailsWhenItIsMade() {
    assertThrows(IllegalStateException.class,
        () -> registry.conf("spark.t.threads").doc("Again.").booleanConf().createWithDefault("true"));
    assertThrows(IllegalStateException.class,
        () -> registry.conf("spark.other.x").doc("Outside.").booleanConf().createWithDefault("true"));
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> registry.conf("spark.t.y").doc("Bad default.").intConf().atLeast("1").createWithDefault("0"));
    assertEquals("spark.t.y = '0': must be an integer >= 1", e.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> registry.conf("spark.t.z").doc("Bad example.").bytesConf().atLeast("1m").example("1k"));
    assertTrue(registry.keys().stream().noneMatch(k -> k.name().equals("spark.t.y")), "a failed key is not registered");
  }
}
