package org.foldcp.ops;

/**
 * How many edits turn one string into another, for "did you mean" hints in error messages (a
 * mistyped configuration key, a weights file's layer prefix): insertions, deletions,
 * substitutions and swaps of adjacent characters (the commonest typo) count one edit each
 * (optimal string alignment).
 */
public final class EditDistance {
  private EditDistance() {}

  /** The edits between {@code a} and {@code b}. */
  public static int between(String a, String b) {
    int[][] d = new int[a.length() + 1][b.length() + 1];
    for (int i = 0; i <= a.length(); i++) {
      d[i][0] = i;
    }
    for (int j = 0; j <= b.length(); j++) {
      d[0][j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        int best = Math.min(d[i - 1][j - 1] + cost, Math.min(d[i - 1][j], d[i][j - 1]) + 1);
        if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
          best = Math.min(best, d[i - 2][j - 2] + 1);
        }
        d[i][j] = best;
      }
    }
    return d[a.length()][b.length()];
  }
}
