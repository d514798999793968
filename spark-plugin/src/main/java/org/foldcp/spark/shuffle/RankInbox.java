package org.foldcp.spark.shuffle;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.spark.tiles.Retiling;
import org.foldcp.spark.tiles.TileKey;
import org.foldcp.spark.tiles.TileRecord;

/**
 * What one (complex, rank) received in one shuffle, checked before any compute: its own layout
 * tile exactly once and exactly one payload from each of the cp senders. A shuffle never tells
 * a reducer how many records to expect, so a lost or doubled message would otherwise turn into
 * silently wrong numbers; here it fails the task and names the complex, the rank and the senders.
 */
final class RankInbox {
  /** The two reshards of a layer, named as the errors name them. */
  enum Reshard {
    TOKEN_TO_CHANNEL("a/b", "tile rank"),
    CHANNEL_TO_TOKEN("z", "channel owner");

    final String payload;
    final String sender;

    Reshard(String payload, String sender) {
      this.payload = payload;
      this.sender = sender;
    }
  }

  private final TileRecord tile;
  private final float[][] fromRanks;
  private final ShardLayout layout;

  private RankInbox(TileRecord tile, float[][] fromRanks, ShardLayout layout) {
    this.tile = tile;
    this.fromRanks = fromRanks;
    this.layout = layout;
  }

  static RankInbox of(TileKey key, Iterable<RankMessage> messages, CpGrid grid, Reshard reshard) {
    TileRecord tile = null;
    float[][] from = new float[grid.size()][];
    for (RankMessage m : messages) {
      if (m.isTile()) {
        if (tile != null) {
          throw new IllegalStateException(where(key, reshard) + ": received its layout tile twice");
        }
        if (m.src != key.rank) {
          throw new IllegalStateException(where(key, reshard) + ": received the layout tile of rank " + m.src);
        }
        tile = m.tile;
      } else if (m.src < 0 || m.src >= from.length) {
        throw new IllegalStateException(where(key, reshard) + ": a " + reshard.payload + " payload names sender rank "
            + m.src + ", outside grid " + grid);
      } else if (from[m.src] != null) {
        throw new IllegalStateException(where(key, reshard) + ": received two " + reshard.payload + " payloads from "
            + reshard.sender + " " + m.src + "; each " + reshard.sender + " must send exactly one");
      } else {
        from[m.src] = m.payload;
      }
    }
    List<Integer> missing = new ArrayList<>();
    for (int src = 0; src < from.length; src++) {
      if (from[src] == null) {
        missing.add(src);
      }
    }
    if (!missing.isEmpty()) {
      if (reshard == Reshard.TOKEN_TO_CHANNEL) {
        // A rank sends a/b exactly when it has a layout tile, and it has one exactly when some
        // input tile fell into its window: the input did not cover the complex.
        throw InvalidInputException.of("ranks of complex '" + key.complexId + "' (grid " + grid + ") without any input tile",
            missing, "the tiles of a complex must cover its whole N x N grid, so every rank's window gets values");
      }
      throw new IllegalStateException(where(key, reshard) + ": no " + reshard.payload + " payload arrived from "
          + reshard.sender + "(s) " + missing + "; every " + reshard.sender + " sends one to every rank");
    }
    if (tile == null) {
      throw new IllegalStateException(where(key, reshard) + ": its layout tile did not arrive with the payloads");
    }
    return new RankInbox(tile, from, Retiling.layout(tile, grid));
  }

  private static String where(TileKey key, Reshard reshard) {
    return "rank " + key.rank + " of complex '" + key.complexId + "' in the " + reshard.payload + " shuffle";
  }

  /** The receiver's own layout tile. */
  TileRecord tile() {
    return tile;
  }

  /** Payloads indexed by sender rank, as {@link org.foldcp.ops.cp.RankStages} takes them. */
  float[][] fromRanks() {
    return fromRanks;
  }

  ShardLayout layout() {
    return layout;
  }
}
