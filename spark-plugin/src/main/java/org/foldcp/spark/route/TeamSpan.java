package org.foldcp.spark.route;

import java.io.Serializable;

/**
 * When one rank of a CP team ran its complexes: from the start of the first forward to the end of
 * the last, in wall-clock milliseconds since the epoch (so that ranks in different executor JVMs
 * of one host can be compared). Teams of one barrier stage that work side by side have
 * overlapping spans; a span that starts after another ended shows teams that took turns.
 *
 * @param team the team's index in its barrier stage
 * @param rank the rank within the team
 * @param complexes complexes the rank ran (every rank of a team runs all of the team's)
 */
public record TeamSpan(int team, int rank, int complexes, long startMillis, long endMillis) implements Serializable {
  public TeamSpan {
    if (endMillis < startMillis) {
      throw new IllegalArgumentException("team span ends (" + endMillis + ") before it starts (" + startMillis + ")");
    }
  }

  /** Whether the two spans share a moment. */
  public boolean overlaps(TeamSpan other) {
    return startMillis <= other.endMillis && other.startMillis <= endMillis;
  }
}
