package org.foldcp.spark.shuffle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.shuffle.RankInbox.Reshard;
import org.foldcp.spark.tiles.TileKey;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;

class RankInboxTest {
  static final CpGrid GRID = CpGrid.oneD(3);
  static final TileKey KEY = new TileKey("c", 1);
  /** Rank 1's tile of an N = 9, D = 6 complex on 3x1: rows 3..5. */
  static final TileRecord TILE = new TileRecord("c", 9, 3, 0, PairTensor.zeros(1, 3, 9, 6));

  @Test
  void ordersPayloadsBySenderWhateverTheArrivalOrder() {
    List<RankMessage> in = new ArrayList<>(List.of(
        RankMessage.payload(2, new float[] {2}), RankMessage.tile(1, TILE),
        RankMessage.payload(0, new float[] {0}), RankMessage.payload(1, new float[] {1})));
    RankInbox inbox = RankInbox.of(KEY, in, GRID, Reshard.TOKEN_TO_CHANNEL);
    assertSame(TILE, inbox.tile());
    for (int src = 0; src < 3; src++) {
      assertArrayEquals(new float[] {src}, inbox.fromRanks()[src]);
    }
    assertEquals(9, inbox.layout().n());
    // the complex's tiles, from N and D; the channel split comes with the stack's hidden width
    assertFalse(inbox.layout().splitsChannels());
    assertEquals(2, inbox.layout().withHidden(6).channelsPerRank());
  }

  @Test
  void aDoubledPayloadFailsNamingTheSender() {
    List<RankMessage> in = List.of(RankMessage.tile(1, TILE), RankMessage.payload(0, new float[1]),
        RankMessage.payload(2, new float[1]), RankMessage.payload(2, new float[1]));
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> RankInbox.of(KEY, in, GRID, Reshard.CHANNEL_TO_TOKEN));
    assertTrue(e.getMessage().contains("two z payloads from channel owner 2")
        && e.getMessage().contains("rank 1 of complex 'c'"), e.getMessage());
  }

  @Test
  void aMissingTilePayloadIsAnInputThatDoesNotCoverTheComplex() {
    List<RankMessage> in = List.of(RankMessage.tile(1, TILE), RankMessage.payload(1, new float[1]));
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> RankInbox.of(KEY, in, GRID, Reshard.TOKEN_TO_CHANNEL));
    assertTrue(e.getMessage().contains("[0, 2]") && e.getMessage().contains("'c'")
        && e.getMessage().contains("cover"), e.getMessage());
  }

  @Test
  void aMissingOwnerPayloadIsAnInternalFailure() {
    List<RankMessage> in = List.of(RankMessage.tile(1, TILE), RankMessage.payload(0, new float[1]),
        RankMessage.payload(1, new float[1]));
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> RankInbox.of(KEY, in, GRID, Reshard.CHANNEL_TO_TOKEN));
    assertTrue(e.getMessage().contains("channel owner(s) [2]"), e.getMessage());
  }

  @Test
  void theTileMustArriveExactlyOnce() {
    List<RankMessage> payloads = List.of(RankMessage.payload(0, new float[1]), RankMessage.payload(1, new float[1]),
        RankMessage.payload(2, new float[1]));
    IllegalStateException none = assertThrows(IllegalStateException.class,
        () -> RankInbox.of(KEY, payloads, GRID, Reshard.CHANNEL_TO_TOKEN));
    assertTrue(none.getMessage().contains("layout tile did not arrive"), none.getMessage());

    List<RankMessage> twice = new ArrayList<>(payloads);
    twice.add(RankMessage.tile(1, TILE));
    twice.add(RankMessage.tile(1, TILE));
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> RankInbox.of(KEY, twice, GRID, Reshard.CHANNEL_TO_TOKEN));
    assertTrue(e.getMessage().contains("layout tile twice"), e.getMessage());

    List<RankMessage> misrouted = new ArrayList<>(payloads);
    misrouted.add(RankMessage.tile(2, TILE));
    IllegalStateException wrongRank = assertThrows(IllegalStateException.class,
        () -> RankInbox.of(KEY, misrouted, GRID, Reshard.TOKEN_TO_CHANNEL));
    assertTrue(wrongRank.getMessage().contains("layout tile of rank 2"), wrongRank.getMessage());
  }

  @Test
  void aSenderOutsideTheGridFails() {
    List<RankMessage> in = List.of(RankMessage.tile(1, TILE), RankMessage.payload(3, new float[1]));
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> RankInbox.of(KEY, in, GRID, Reshard.TOKEN_TO_CHANNEL));
    assertTrue(e.getMessage().contains("sender rank 3") && e.getMessage().contains("grid 3x1"), e.getMessage());
  }
}
