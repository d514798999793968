package org.foldcp.spark.shuffle;

import java.io.Serializable;
import java.util.Objects;
import org.foldcp.spark.tiles.TileRecord;

/**
 * One value that goes through a shuffle of {@link ShuffleRoute}, keyed by the (complex, rank) that
 * receives it: either a reshard payload from rank {@code src} (a and b of src's tile for the
 * receiving channel owner, or z of owner src for the receiving tile), or the receiver's own
 * layout tile, which travels with the payloads because the output step needs it again
 * (LN_in for the gate, the residual, the mask).
 *
 * <p>Deliberately plain: final fields, a float array and a tile, so Java serialization writes the
 * payload in bulk and Kryo's default field serializer needs no registration or constructor.
 */
public final class RankMessage implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The sending rank of a payload; for a tile, the tile's own rank. */
  public final int src;
  /** Floats laid out as {@link org.foldcp.ops.cp.RankStages} produces them; null for a tile. */
  public final float[] payload;
  /** The receiver's layout tile; null for a payload. */
  public final TileRecord tile;

  private RankMessage(int src, float[] payload, TileRecord tile) {
    this.src = src;
    this.payload = payload;
    this.tile = tile;
  }

  public static RankMessage payload(int src, float[] values) {
    return new RankMessage(src, Objects.requireNonNull(values, "payload"), null);
  }

  public static RankMessage tile(int rank, TileRecord tile) {
    return new RankMessage(rank, null, Objects.requireNonNull(tile, "tile"));
  }

  public boolean isTile() {
    return tile != null;
  }

  @Override
  public String toString() {
    return isTile() ? "tile of rank " + src + ": " + tile : "payload from rank " + src + " (" + payload.length + " floats)";
  }
}
