package org.foldcp.ops.gpu.cp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Test;

/** The CP team test's difference locator names the rank tiles, boxes and blocks that differ. */
class TileDiffTest {
  @Test
  void equalTensorsGiveNothingAndChangedTokensAreBoxedPerRank() {
    ShardLayout layout = ShardLayout.forGpu(CpGrid.parse("2x2"), 300, 32, 32);  // tiles of 152 x 152 (N padded to 304)
    PairTensor want = PairTensor.random(1, 300, 32, 7, 0.0);
    assertEquals("", TileDiff.where(want.copy(), want, layout));

    PairTensor got = want.copy();
    got.setBits(0, 170, 200, 3, (short) (got.getBits(0, 170, 200, 3) ^ 1));  // rank 3: tile (18, 48)
    got.setBits(0, 175, 299, 0, (short) (got.getBits(0, 175, 299, 0) ^ 1));  // rank 3: tile (23, 147)
    got.setBits(0, 5, 6, 31, (short) (got.getBits(0, 5, 6, 31) ^ 1));        // rank 0: tile (5, 6)
    String w = TileDiff.where(got, want, layout);
    assertTrue(w.contains("rank 0 (tile 152x152 at 0,0): 1 tokens differ, tile rows 5..5 (1 rows), columns 6..6"
        + " (1 blocks of 128)"), w);
    assertTrue(w.contains("rank 3 (tile 152x152 at 152,152): 2 tokens differ, tile rows 18..23 (2 rows), columns"
        + " 48..147 (2 blocks of 128)"), w);
    assertTrue(!w.contains("rank 1") && !w.contains("rank 2"), w);
  }
}
