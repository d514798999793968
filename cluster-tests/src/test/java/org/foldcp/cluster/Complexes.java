package org.foldcp.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.TileRecord;

/**
 * Small synthetic complexes for the cluster tests, their expected outputs from the operator
 * library's cp = 1 forward, and the reassembly of a route's output tiles into whole tensors.
 */
final class Complexes {
  /** Pair channels: divisible by cp = 2, as the CP routes need. */
  static final int D = 8;

  private Complexes() {}

  /** Two layers, outgoing then incoming, with biases and residual, as in a Pairformer block. */
  static LayerStack stack(long seed) {
    return LayerStack.randomAlternating(2, D, seed, true);
  }

  /** A whole complex, the tile (0, 0, N, N); a random mask when {@code maskedFraction > 0}. */
  static TileRecord whole(String id, int n, long seed, double maskedFraction) {
    return new TileRecord(id, n, 0, 0, PairTensor.random(1, n, D, seed, maskedFraction));
  }

  /** The cp = 1 forward of each complex on one CPU thread, keyed by complex id. */
  static Map<String, PairTensor> cp1Forward(List<TileRecord> wholeComplexes, LayerStack stack) {
    Map<String, PairTensor> out = new TreeMap<>();
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      for (TileRecord r : wholeComplexes) {
        out.put(r.complexId, cpu.forward(r.tile, stack));
      }
    }
    return out;
  }

  /**
   * Pastes tiles into one (1, N, N, D) tensor per complex. Fails, naming the complex and a
   * position, when tiles overlap or leave a hole, since paste alone would hide either.
   */
  static Map<String, PairTensor> reassemble(Collection<TileRecord> tiles) {
    Map<String, PairTensor> whole = new TreeMap<>();
    Map<String, int[][]> cover = new HashMap<>();
    for (TileRecord t : tiles) {
      int n = t.nTokens;
      PairTensor target = whole.computeIfAbsent(t.complexId, id -> PairTensor.zeros(1, n, n, t.dim()));
      assertEquals(n, target.rows(), "n_tokens of every output tile of '" + t.complexId + "'");
      target.paste(t.tile, t.row0, t.col0);
      int[][] c = cover.computeIfAbsent(t.complexId, id -> new int[n][n]);
      for (int i = t.row0; i < t.row0 + t.tile.rows(); i++) {
        for (int j = t.col0; j < t.col0 + t.tile.cols(); j++) {
          if (++c[i][j] > 1) {
            fail("position (" + i + ", " + j + ") of '" + t.complexId + "' is in more than one output tile");
          }
        }
      }
    }
    cover.forEach((id, c) -> {
      for (int i = 0; i < c.length; i++) {
        for (int j = 0; j < c.length; j++) {
          if (c[i][j] == 0) {
            fail("position (" + i + ", " + j + ") of '" + id + "' is in no output tile");
          }
        }
      }
    });
    return whole;
  }

  /** Asserts that a route gave every complex exactly the cp = 1 output: same bf16 bits, same mask. */
  static void assertBitForBit(Map<String, PairTensor> expected, Map<String, PairTensor> actual, String route) {
    assertEquals(expected.keySet(), actual.keySet(), route + ": complexes in the output");
    expected.forEach((id, want) -> {
      PairTensor got = actual.get(id);
      if (!want.sameAs(got)) {
        fail(route + " differs from the cp = 1 forward for '" + id + "' " + want.shapeString() + ": "
            + firstDifference(want, got));
      }
    });
  }

  private static String firstDifference(PairTensor want, PairTensor got) {
    if (!got.shapeString().equals(want.shapeString())) {
      return "shape is " + got.shapeString();
    }
    for (int i = 0; i < want.rows(); i++) {
      for (int j = 0; j < want.cols(); j++) {
        if (want.valid(0, i, j) != got.valid(0, i, j)) {
          return "mask at (" + i + ", " + j + ") is " + got.valid(0, i, j) + ", want " + want.valid(0, i, j);
        }
        for (int c = 0; c < want.dim(); c++) {
          if (want.getBits(0, i, j, c) != got.getBits(0, i, j, c)) {
            return "value at (" + i + ", " + j + ", " + c + ") is " + got.get(0, i, j, c) + ", want " + want.get(0, i, j, c);
          }
        }
      }
    }
    throw new IllegalStateException("sameAs saw a difference that no element shows");
  }
}
