package org.foldcp.ops.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The two hand-written literal parsers: JSON for safetensors headers, Python for npy headers. */
class ParsersTest {
  @Test
  void jsonObjectsArraysStringsAndIntegers() throws Exception {
    Object v = Json.parse(" {\"a\\\"b\\\\c\\/\\u00e9\\n\\t\": [1, -2, 9007199254740993], \"o\": {}, \"e\": [] } ");
    Map<?, ?> m = (Map<?, ?>) v;
    assertEquals(List.of(1L, -2L, 9007199254740993L), m.get("a\"b\\c/\u00e9\n\t"));
    assertEquals(Map.of(), m.get("o"));
    assertEquals(List.of(), m.get("e"));
    assertEquals("\ud83d\ude00", Json.parse("\"\\ud83d\\ude00\""), "surrogate pairs rebuild the code point");
  }

  @Test
  void jsonQuoteRoundTrips() throws Exception {
    String s = "q\"b\\s\n\t\u0001\u00e9";
    assertEquals(s, Json.parse(Json.quote(s)));
  }

  @Test
  void jsonRejectsWhatSafetensorsNeverWrites() {
    String frac = assertThrows(Json.SyntaxError.class, () -> Json.parse("[1.5]")).getMessage();
    assertTrue(frac.contains("only integers") && frac.contains("character 2"), frac);
    String dup = assertThrows(Json.SyntaxError.class, () -> Json.parse("{\"a\":1,\"a\":2}")).getMessage();
    assertTrue(dup.contains("duplicate key \"a\""), dup);
    String trail = assertThrows(Json.SyntaxError.class, () -> Json.parse("{} x")).getMessage();
    assertTrue(trail.contains("unexpected text after"), trail);
    String lit = assertThrows(Json.SyntaxError.class, () -> Json.parse("[true]")).getMessage();
    assertTrue(lit.contains("unsupported JSON value starting with 't'"), lit);
    String open = assertThrows(Json.SyntaxError.class, () -> Json.parse("{\"a\": \"b")).getMessage();
    assertTrue(open.contains("unterminated string"), open);
  }

  @Test
  void pythonDictAsNumpyWritesIt() throws Exception {
    Map<String, Object> d = PyLiteral.parseDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 3, 4), }   \n");
    assertEquals("<f4", d.get("descr"));
    assertEquals(Boolean.FALSE, d.get("fortran_order"));
    assertEquals(List.of(2L, 3L, 3L, 4L), d.get("shape"));
    assertEquals(List.of(3L), PyLiteral.parseDict("{'shape': (3,)}").get("shape"));
    assertEquals(List.of(), PyLiteral.parseDict("{'shape': ()}").get("shape"));
    assertEquals(List.of(2L, 5L), PyLiteral.parseDict("{\"shape\": (2L, 5L)}").get("shape"));
    assertEquals(PyLiteral.NONE, PyLiteral.parseDict("{'x': None}").get("x"));
  }

  @Test
  void pythonDictErrorsSayWhere() {
    String e = assertThrows(PyLiteral.SyntaxError.class, () -> PyLiteral.parseDict("{'shape': (1, 2}")).getMessage();
    assertTrue(e.contains("expected ',' or ')'") && e.contains("character 15"), e);
    String name = assertThrows(PyLiteral.SyntaxError.class, () -> PyLiteral.parseDict("{'a': true}")).getMessage();
    assertTrue(name.contains("unknown name 'true'"), name);
  }
}
