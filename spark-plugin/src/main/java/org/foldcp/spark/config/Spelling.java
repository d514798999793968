package org.foldcp.spark.config;

import java.util.Collection;
import java.util.Optional;

/** Finds the known key a mistyped one was probably meant to be, for "did you mean" hints. */
final class Spelling {
  private Spelling() {}

  /**
   * The candidate nearest to {@code word}, compared after the common {@code prefix}, if it is
   * close enough to be a typo: within a third of the word's length (at least 1, at most 3 edits),
   * so that short keys do not attract suggestions from unrelated ones.
   */
  static Optional<String> closest(String word, Collection<String> candidates, String prefix) {
    String w = strip(word, prefix);
    int allowed = Math.min(3, Math.max(1, w.length() / 3));
    String best = null;
    int bestDistance = allowed + 1;
    for (String c : candidates) {
      int d = editDistance(w, strip(c, prefix));
      if (d < bestDistance) {
        best = c;
        bestDistance = d;
      }
    }
    return Optional.ofNullable(best);
  }

  private static String strip(String s, String prefix) {
    return s.startsWith(prefix) ? s.substring(prefix.length()) : s;
  }

  /**
   * Edit distance counting insertions, deletions, substitutions and swaps of adjacent characters
   * (the commonest typo) as one edit each: optimal string alignment.
   */
  static int editDistance(String a, String b) {
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
