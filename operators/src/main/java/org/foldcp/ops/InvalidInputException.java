package org.foldcp.ops;

/**
 * A bad input, reported early and precisely: the message always names the offending value and
 * the rule it breaks (docs/design.md section 7), for example
 * {@code "D = 30: D must be divisible by cp = 4 (each rank owns D/cp channels)"}.
 */
public class InvalidInputException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public InvalidInputException(String message) {
    super(message);
  }

  public InvalidInputException(String message, Throwable cause) {
    super(message, cause);
  }

  /** Builds the canonical message "{@code what = value: rule}". */
  public static InvalidInputException of(String what, Object value, String rule) {
    return new InvalidInputException(what + " = " + value + ": " + rule);
  }

  /** Throws {@link #of} unless {@code ok}. */
  public static void require(boolean ok, String what, Object value, String rule) {
    if (!ok) {
      throw of(what, value, rule);
    }
  }
}
