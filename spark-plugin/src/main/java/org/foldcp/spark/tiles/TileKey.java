package org.foldcp.spark.tiles;

import java.io.Serializable;
import java.util.Objects;

/** (complex, logical CP rank): which rank's tile of which complex a record belongs to. */
public final class TileKey implements Serializable, Comparable<TileKey> {
  private static final long serialVersionUID = 1L;

  public final String complexId;
  public final int rank;

  public TileKey(String complexId, int rank) {
    this.complexId = Objects.requireNonNull(complexId, "complexId");
    this.rank = rank;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TileKey && ((TileKey) o).rank == rank && ((TileKey) o).complexId.equals(complexId);
  }

  @Override
  public int hashCode() {
    return complexId.hashCode() * 31 + rank;
  }

  @Override
  public int compareTo(TileKey o) {
    int c = complexId.compareTo(o.complexId);
    return c != 0 ? c : Integer.compare(rank, o.rank);
  }

  @Override
  public String toString() {
    return complexId + "#" + rank;
  }
}
