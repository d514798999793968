package org.foldcp.ops.io;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Parses the Python literal that forms an .npy header, e.g.
 * {@code {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 3, 4), }}.
 *
 * <p>Only the literal forms numpy writes are understood: dicts, tuples, lists, quoted strings,
 * integers (with the Python 2 {@code L} suffix old files carry), True, False and None. Dicts
 * become {@link LinkedHashMap}, tuples and lists {@link List}, integers {@link Long}, and None
 * the {@link #NONE} marker (a map cannot hold null values usefully).
 */
final class PyLiteral extends HeaderParser {
  /** Stands for Python's None. */
  static final Object NONE = new Object() {
    @Override
    public String toString() {
      return "None";
    }
  };

  private PyLiteral(String text) {
    super(text);
  }

  /** Parses {@code text} as exactly one dict literal (surrounding whitespace allowed). */
  static Map<String, Object> parseDict(String text) throws SyntaxError {
    PyLiteral p = new PyLiteral(text);
    p.skipSpace();
    if (p.peek() != '{') {
      throw p.error("expected '{' opening the header dict");
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> dict = (Map<String, Object>) p.value();
    p.skipSpace();
    if (p.pos != text.length()) {
      throw p.error("unexpected text after the header dict");
    }
    return dict;
  }

  private Object value() throws SyntaxError {
    skipSpace();
    char c = peek();
    if (c == '{' || c == '(' || c == '[') {
      return nested(c == '{' ? this::dict : c == '(' ? () -> sequence('(', ')') : () -> sequence('[', ']'));
    }
    switch (c) {
      case '\'':
      case '"':
        return string();
      default:
        if (c == '-' || c == '+' || Character.isDigit(c)) {
          return integer();
        }
        if (Character.isLetter(c)) {
          return keyword();
        }
        throw error(c == 0 ? "unexpected end of header" : "unexpected character '" + c + "'");
    }
  }

  private Map<String, Object> dict() throws SyntaxError {
    Map<String, Object> out = new LinkedHashMap<>();
    pos++; // '{'
    while (true) {
      skipSpace();
      if (peek() == '}') {
        pos++;
        return out;
      }
      skipSpace();
      char q = peek();
      if (q != '\'' && q != '"') {
        throw error("expected a quoted key or '}'");
      }
      String key = string();
      skipSpace();
      expect(':');
      Object v = value();
      if (out.put(key, v) != null) {
        throw error("duplicate key '" + key + "'");
      }
      skipSpace();
      if (peek() == ',') {
        pos++; // a trailing comma before '}' is legal Python and numpy writes one
      } else if (peek() != '}') {
        throw error("expected ',' or '}' in dict");
      }
    }
  }

  private List<Object> sequence(char open, char close) throws SyntaxError {
    List<Object> out = new ArrayList<>();
    pos++; // open
    while (true) {
      skipSpace();
      if (peek() == close) {
        pos++;
        return out;
      }
      out.add(value());
      skipSpace();
      if (peek() == ',') {
        pos++;
      } else if (peek() != close) {
        throw error("expected ',' or '" + close + "' after element of '" + open + "...'");
      }
    }
  }

  private String string() throws SyntaxError {
    char quote = text.charAt(pos++);
    StringBuilder sb = new StringBuilder();
    while (pos < text.length()) {
      char c = text.charAt(pos++);
      if (c == quote) {
        return sb.toString();
      }
      if (c == '\\') {
        if (pos >= text.length()) {
          break;
        }
        char e = text.charAt(pos++);
        switch (e) {
          case 'n': sb.append('\n'); break;
          case 't': sb.append('\t'); break;
          case 'r': sb.append('\r'); break;
          case '0': sb.append('\0'); break;
          default: sb.append(e); // \\, \', \" and anything else stand for themselves
        }
      } else {
        sb.append(c);
      }
    }
    throw error("unterminated string");
  }

  private Long integer() throws SyntaxError {
    int start = pos;
    if (peek() == '-' || peek() == '+') {
      pos++;
    }
    int digits = pos;
    while (pos < text.length() && Character.isDigit(text.charAt(pos))) {
      pos++;
    }
    if (pos == digits) {
      throw error("expected digits");
    }
    String number = text.substring(start, pos);
    if (peek() == 'L' || peek() == 'l') {
      pos++; // Python 2 long suffix, e.g. (2L, 3L)
    }
    if (peek() == '.' || peek() == 'e' || peek() == 'E') {
      throw error("only integers are expected in an npy header");
    }
    try {
      return Long.parseLong(number.startsWith("+") ? number.substring(1) : number);
    } catch (NumberFormatException e) {
      throw error("integer " + number + " does not fit in 64 bits");
    }
  }

  private Object keyword() throws SyntaxError {
    int start = pos;
    while (pos < text.length() && Character.isLetterOrDigit(text.charAt(pos))) {
      pos++;
    }
    String word = text.substring(start, pos);
    switch (word) {
      case "True": return Boolean.TRUE;
      case "False": return Boolean.FALSE;
      case "None": return NONE;
      default:
        pos = start;
        throw error("unknown name '" + word + "' (only True, False and None are allowed)");
    }
  }

  private void skipSpace() {
    while (pos < text.length() && Character.isWhitespace(text.charAt(pos))) {
      pos++;
    }
  }

  @Override
  SyntaxError error(String what) {
    return new SyntaxError(what + " at character " + pos);
  }
}
