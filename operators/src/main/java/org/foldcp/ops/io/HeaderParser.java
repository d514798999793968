package org.foldcp.ops.io;

/**
 * What the two header parsers ({@link Json} for safetensors, {@link PyLiteral} for .npy) share:
 * a position in the header text, the depth limit on nested containers and the syntax error they
 * report. Each parser keeps its own grammar, white space and error text.
 */
abstract class HeaderParser {
  /** Malformed text; the caller turns it into a message naming the file. */
  static final class SyntaxError extends Exception {
    private static final long serialVersionUID = 1L;

    SyntaxError(String message) {
      super(message);
    }
  }

  /**
   * Deepest nesting accepted. A header nests two or three levels (an npy header's dict and shape
   * tuple; a safetensors header, its entries and their shapes); the limit keeps a hostile
   * "[[[[..." within the parser's recursion instead of overflowing the stack.
   */
  static final int MAX_DEPTH = 64;

  /** A container's parser, called with the position on its opening bracket. */
  interface Container {
    Object parse() throws SyntaxError;
  }

  final String text;
  int pos;
  private int depth;

  HeaderParser(String text) {
    this.text = text;
  }

  /** {@code container}'s value, one level deeper; an error past {@link #MAX_DEPTH} levels. */
  final Object nested(Container container) throws SyntaxError {
    if (++depth > MAX_DEPTH) {
      throw error("nesting deeper than " + MAX_DEPTH + " levels");
    }
    Object v = container.parse();
    depth--;
    return v;
  }

  final void expect(char c) throws SyntaxError {
    if (peek() != c) {
      throw error("expected '" + c + "'");
    }
    pos++;
  }

  /** The character at the position, 0 at the end of the text. */
  final char peek() {
    return pos < text.length() ? text.charAt(pos) : 0;
  }

  /** A syntax error saying {@code what} went wrong at the position. */
  abstract SyntaxError error(String what);
}
