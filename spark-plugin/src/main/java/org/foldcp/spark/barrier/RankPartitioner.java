package org.foldcp.spark.barrier;

import org.apache.spark.Partitioner;
import org.foldcp.spark.tiles.TileKey;

/**
 * Sends every piece of rank r's layout tiles of a complex of team t to partition t * cp + r, so
 * that barrier task t * cp + r is CP rank r of team t (with one team, task r is rank r).
 */
public final class RankPartitioner extends Partitioner {
  private static final long serialVersionUID = 1L;

  private final int cp;
  private final TeamAssignment teams;

  /** One team of {@code cp} ranks. */
  public RankPartitioner(int cp) {
    this(cp, null);
  }

  /** {@code teams.teams()} teams of {@code cp} ranks each (null: one team). */
  public RankPartitioner(int cp, TeamAssignment teams) {
    if (cp < 1) {
      throw new IllegalArgumentException("cp = " + cp + ": must be >= 1");
    }
    this.cp = cp;
    this.teams = teams;
  }

  /** The CP rank (within its team) of barrier task {@code partition}: the inverse of {@link #getPartition}. */
  static int rankOf(int partition, int cp) {
    return partition % cp;
  }

  /** The team of barrier task {@code partition}. */
  static int teamOf(int partition, int cp) {
    return partition / cp;
  }

  @Override
  public int numPartitions() {
    return cp * (teams == null ? 1 : teams.teams());
  }

  @Override
  public int getPartition(Object key) {
    TileKey k = (TileKey) key;
    int rank = k.rank;
    if (rank < 0 || rank >= cp) {
      throw new IllegalStateException("rank of " + key + " = " + rank + ": must lie in [0, " + cp + ")");
    }
    return (teams == null ? 0 : teams.teamOf(k.complexId) * cp) + rank;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RankPartitioner && ((RankPartitioner) o).cp == cp && ((RankPartitioner) o).teams == teams;
  }

  @Override
  public int hashCode() {
    return cp * 31 + System.identityHashCode(teams);
  }
}
