package org.foldcp.ops.io;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The subset of JSON a safetensors header uses: objects, arrays, strings (with all JSON escapes)
 * and integers. Objects become {@link LinkedHashMap} (file order kept), arrays {@link List},
 * integers {@link Long}. Anything else (fractions, true/false/null) is a syntax error, because
 * a well-formed safetensors header never contains it.
 */
final class Json extends HeaderParser {
  private Json(String text) {
    super(text);
  }

  /** Parses one JSON value filling all of {@code text} (surrounding whitespace allowed). */
  static Object parse(String text) throws SyntaxError {
    Json p = new Json(text);
    Object v = p.value();
    p.skipSpace();
    if (p.pos != text.length()) {
      throw p.error("unexpected text after the JSON value");
    }
    return v;
  }

  private Object value() throws SyntaxError {
    skipSpace();
    char c = peek();
    if (c == '{' || c == '[') {
      return nested(c == '{' ? this::object : this::array);
    }
    if (c == '"') {
      return string();
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      return integer();
    }
    throw error(pos >= text.length() ? "unexpected end of JSON" : "unsupported JSON value starting with '" + c + "'");
  }

  private Map<String, Object> object() throws SyntaxError {
    Map<String, Object> out = new LinkedHashMap<>();
    pos++; // '{'
    skipSpace();
    if (peek() == '}') {
      pos++;
      return out;
    }
    while (true) {
      skipSpace();
      if (peek() != '"') {
        throw error("expected a string key");
      }
      int keyAt = pos;
      String key = string();
      skipSpace();
      expect(':');
      Object v = value();
      if (out.put(key, v) != null) {
        pos = keyAt;
        throw error("duplicate key \"" + key + "\"");
      }
      skipSpace();
      char c = peek();
      pos++;
      if (c == '}') {
        return out;
      }
      if (c != ',') {
        pos--;
        throw error("expected ',' or '}' in object");
      }
    }
  }

  private List<Object> array() throws SyntaxError {
    List<Object> out = new ArrayList<>();
    pos++; // '['
    skipSpace();
    if (peek() == ']') {
      pos++;
      return out;
    }
    while (true) {
      out.add(value());
      skipSpace();
      char c = peek();
      pos++;
      if (c == ']') {
        return out;
      }
      if (c != ',') {
        pos--;
        throw error("expected ',' or ']' in array");
      }
    }
  }

  private String string() throws SyntaxError {
    pos++; // opening quote
    StringBuilder sb = new StringBuilder();
    while (pos < text.length()) {
      char c = text.charAt(pos++);
      if (c == '"') {
        return sb.toString();
      }
      if (c < 0x20) {
        pos--;
        throw error("unescaped control character in string");
      }
      if (c != '\\') {
        sb.append(c);
        continue;
      }
      if (pos >= text.length()) {
        break;
      }
      char e = text.charAt(pos++);
      switch (e) {
        case '"': sb.append('"'); break;
        case '\\': sb.append('\\'); break;
        case '/': sb.append('/'); break;
        case 'b': sb.append('\b'); break;
        case 'f': sb.append('\f'); break;
        case 'n': sb.append('\n'); break;
        case 'r': sb.append('\r'); break;
        case 't': sb.append('\t'); break;
        case 'u':
          // Surrogate pairs arrive as two \\u escapes; appending both chars rebuilds the code point.
          if (pos + 4 > text.length()) {
            throw error("truncated \\u escape");
          }
          try {
            sb.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
          } catch (NumberFormatException ex) {
            throw error("bad \\u escape \"\\u" + text.substring(pos, pos + 4) + "\"");
          }
          pos += 4;
          break;
        default:
          pos -= 2;
          throw error("bad escape \"\\" + e + "\"");
      }
    }
    throw error("unterminated string");
  }

  private Long integer() throws SyntaxError {
    int start = pos;
    if (peek() == '-') {
      pos++;
    }
    int digits = pos;
    while (pos < text.length() && text.charAt(pos) >= '0' && text.charAt(pos) <= '9') {
      pos++;
    }
    if (pos == digits) {
      throw error("expected digits");
    }
    if (pos - digits > 1 && text.charAt(digits) == '0') {
      throw error("leading zeros are not JSON");
    }
    if (peek() == '.' || peek() == 'e' || peek() == 'E') {
      throw error("only integers are expected in a safetensors header");
    }
    try {
      return Long.parseLong(text.substring(start, pos));
    } catch (NumberFormatException e) {
      pos = start;
      throw error("integer does not fit in 64 bits");
    }
  }

  private void skipSpace() {
    while (pos < text.length()) {
      char c = text.charAt(pos);
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
        return;
      }
      pos++;
    }
  }

  @Override
  SyntaxError error(String what) {
    int from = Math.max(0, pos - 20);
    int to = Math.min(text.length(), pos + 20);
    return new SyntaxError(what + " at character " + pos + " (near \"" + FileReads.excerpt(text.substring(from, to), 40) + "\")");
  }

  /** A JSON string literal for {@code s}, escaping what JSON requires. */
  static String quote(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
    for (int q = 0; q < s.length(); q++) {
      char c = s.charAt(q);
      switch (c) {
        case '"': sb.append("\\\""); break;
        case '\\': sb.append("\\\\"); break;
        case '\n': sb.append("\\n"); break;
        case '\r': sb.append("\\r"); break;
        case '\t': sb.append("\\t"); break;
        default:
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
      }
    }
    return sb.append('"').toString();
  }
}
