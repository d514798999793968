package org.foldcp.spark.shuffle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.TileRecord;

/** Test complexes as tile records in different tilings, and the way back to whole tensors. */
final class Complexes {
  private Complexes() {}

  /** The whole complex as one tile (0, 0, N, N). */
  static List<TileRecord> whole(String id, PairTensor x) {
    return List.of(new TileRecord(id, x.n(), 0, 0, x));
  }

  /**
   * A ragged tiling unlike any CP layout: row bands of random height, and within each band its
   * own random column cuts; deterministic in {@code seed}.
   */
  static List<TileRecord> irregular(String id, PairTensor x, long seed) {
    SplittableRandom rng = new SplittableRandom(seed);
    int n = x.n();
    List<TileRecord> out = new ArrayList<>();
    for (int r0 = 0; r0 < n; ) {
      int rows = Math.min(n - r0, 1 + rng.nextInt(6));
      for (int c0 = 0; c0 < n; ) {
        int cols = Math.min(n - c0, 1 + rng.nextInt(7));
        out.add(new TileRecord(id, n, r0, c0, x.window(r0, c0, rows, cols)));
        c0 += cols;
      }
      r0 += rows;
    }
    return out;
  }

  /**
   * Pastes the tiles of each complex into a whole (1, N, N, D) tensor, asserting that every
   * position of every complex is covered exactly once; {@code nTokens} gives the complexes
   * expected and their N.
   */
  static Map<String, PairTensor> reassemble(List<TileRecord> tiles, Map<String, Integer> nTokens, int d) {
    Map<String, PairTensor> whole = new LinkedHashMap<>();
    Map<String, int[][]> cover = new LinkedHashMap<>();
    for (Map.Entry<String, Integer> e : nTokens.entrySet()) {
      whole.put(e.getKey(), PairTensor.zeros(1, e.getValue(), e.getValue(), d));
      cover.put(e.getKey(), new int[e.getValue()][e.getValue()]);
    }
    for (TileRecord t : tiles) {
      assertTrue(whole.containsKey(t.complexId), "output tile of an unknown complex: " + t);
      assertEquals(nTokens.get(t.complexId), t.nTokens, "n_tokens of " + t);
      whole.get(t.complexId).paste(t.tile, t.row0, t.col0);
      int[][] c = cover.get(t.complexId);
      for (int i = 0; i < t.tile.rows(); i++) {
        for (int j = 0; j < t.tile.cols(); j++) {
          c[t.row0 + i][t.col0 + j]++;
        }
      }
    }
    for (Map.Entry<String, int[][]> e : cover.entrySet()) {
      int[][] c = e.getValue();
      for (int i = 0; i < c.length; i++) {
        for (int j = 0; j < c.length; j++) {
          assertEquals(1, c[i][j], "times position (" + i + ", " + j + ") of '" + e.getKey() + "' was output");
        }
      }
    }
    return whole;
  }
}
