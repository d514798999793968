package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;

/** The checks every rank makes on the team's announcements before any reshard. */
class TeamWorkloadTest {
  private static final LayerStack STACK = LayerStack.randomAlternating(2, 8, 5, true);

  /** Rank r announcing a tile of each (id, N) given, all with D = 8. */
  private static RankAnnouncement rank(int r, LayerStack stack, Object... idAndN) {
    List<TileRecord> tiles = new ArrayList<>();
    for (int q = 0; q < idAndN.length; q += 2) {
      tiles.add(new TileRecord((String) idAndN[q], (Integer) idAndN[q + 1], 0, 0, PairTensor.zeros(1, 1, 1, 8)));
    }
    return RankAnnouncement.of(r, "127.0.0.1:" + (4000 + r), "127.0.0.1", "driver", tiles, stack);
  }

  @Test
  void agreeingRanksRunTheUnionOfComplexesSortedById() {
    List<ComplexShape> c = TeamWorkload.agree(List.of(rank(0, STACK, "b", 16, "a", 13), rank(1, STACK, "a", 13, "b", 16)),
        CpGrid.oneD(2));
    assertEquals(List.of(new ComplexShape("a", 13, 8), new ComplexShape("b", 16, 8)), c);
  }

  @Test
  void aRankWhoseTileIsAllPaddingMayHoldNothing() {
    // N = 2 on a 4x1 grid: padded to 32 tokens (tiles of 8 rows, ShardLayout.GPU_TILE_MULTIPLE), ranks 1 to 3 hold
    // only padding rows
    List<ComplexShape> c = TeamWorkload.agree(List.of(rank(0, STACK, "tiny", 2), rank(1, STACK),
        rank(2, STACK), rank(3, STACK)), CpGrid.oneD(4));
    assertEquals(List.of(new ComplexShape("tiny", 2, 8)), c);
  }

  @Test
  void aMissingComplexNamesTheRankAndTheComplex() {
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> TeamWorkload.agree(
        List.of(rank(0, STACK, "a", 13, "b", 16), rank(1, STACK, "a", 13)), CpGrid.oneD(2)));
    assertTrue(e.getMessage().startsWith("complex set of rank 1 = no tile of complex 'b' (N = 16, D = 8): every rank"
        + " must hold the complexes of the others (rank 0 holds this one)"), e.getMessage());
  }

  @Test
  void ranksThatDisagreeOnNFail() {
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> TeamWorkload.agree(
        List.of(rank(0, STACK, "a", 13), rank(1, STACK, "a", 14)), CpGrid.oneD(2)));
    assertTrue(e.getMessage().startsWith("(N, D) of complex 'a' on rank 1 = (14, 8): every rank must see the same N and D"
        + " for a complex; rank 0 has (13, 8)"), e.getMessage());
  }

  @Test
  void weightsThatDifferOnOneRankNameItAndBothDigests() {
    LayerStack other = LayerStack.randomAlternating(2, 8, 6, true);
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> TeamWorkload.agree(
        List.of(rank(0, STACK, "a", 13), rank(1, STACK, "a", 13), rank(2, other, "a", 13)), CpGrid.oneD(3)));
    String m = e.getMessage();
    assertTrue(m.startsWith("weight digest of layer 0 on rank 2 = " + other.get(0).weights().digest())
        && m.endsWith("every rank must hold bit-identical weights; rank 0 has " + STACK.get(0).weights().digest()), m);
  }

  @Test
  void aDifferentLayerCountIsRefused() {
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> TeamWorkload.agree(
        List.of(rank(0, STACK, "a", 13), rank(1, LayerStack.randomAlternating(1, 8, 5, true), "a", 13)), CpGrid.oneD(2)));
    assertTrue(e.getMessage().startsWith("layer count on rank 1 = 1: every rank must apply the stack of rank 0 (2 layers)"),
        e.getMessage());
  }

  @Test
  void announcementsSurviveTheTripThroughAllGather() {
    RankAnnouncement a = rank(3, STACK, "id with spaces, commas; and ünïcode", 13);
    assertEquals(a, RankAnnouncement.decode(a.encode(), 3));
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> RankAnnouncement.decode("not base64!", 1));
    assertTrue(e.getMessage().startsWith("the team-formation message of rank 1 is not a fold-cp rank announcement"),
        e.getMessage());
  }
}
