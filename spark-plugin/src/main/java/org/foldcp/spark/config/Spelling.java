package org.foldcp.spark.config;

import java.util.Collection;
import java.util.Optional;
import org.foldcp.ops.EditDistance;

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
      int d = EditDistance.between(w, strip(c, prefix));
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
}
