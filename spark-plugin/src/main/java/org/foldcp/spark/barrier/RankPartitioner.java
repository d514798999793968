package org.foldcp.spark.barrier;

import org.apache.spark.Partitioner;
import org.foldcp.spark.tiles.TileKey;

/** Sends every piece of rank r's layout tiles to partition r, so that barrier task r is CP rank r. */
public final class RankPartitioner extends Partitioner {
  private static final long serialVersionUID = 1L;

  private final int cp;

  public RankPartitioner(int cp) {
    if (cp < 1) {
      throw new IllegalArgumentException("cp = " + cp + ": must be >= 1");
    }
    this.cp = cp;
  }

  @Override
  public int numPartitions() {
    return cp;
  }

  @Override
  public int getPartition(Object key) {
    int rank = ((TileKey) key).rank;
    if (rank < 0 || rank >= cp) {
      throw new IllegalStateException("rank of " + key + " = " + rank + ": must lie in [0, " + cp + ")");
    }
    return rank;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RankPartitioner && ((RankPartitioner) o).cp == cp;
  }

  @Override
  public int hashCode() {
    return cp;
  }
}
