package org.foldcp.spark.tiles;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.ops.testing.Fuzz;
import org.foldcp.spark.sql.FoldCp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import scala.Tuple2;

/**
 * Fuzzes the pair-tile decoder: rows of {@link PairTiles#SCHEMA} (docs/design.md section 5) decoded by
 * {@link TileRecord#fromRow} and put together by {@link FoldCp#assemble} and, as the shuffle
 * route does on a 2x2 grid, by {@link Retiling#pieces} and {@link Retiling#assemble}. Inputs are
 * valid tilings of one complex with mutated fields: header ints set to 0, -1, 2^31 - 1, N that
 * would ask for N x N x D values, and so on; pair and mask bytes truncated, extended or flipped;
 * mask values that are not 0 or 1; null and mistyped fields; rows short of columns; rows
 * dropped or repeated. The contract is {@link Fuzz}'s.
 */
@Timeout(300)
class TileDecodeFuzzTest {
  static final int RANDOM_INPUTS = Fuzz.iterations(10_000);
  static final int N = 10;
  static final int D = 4;
  static final String ID = "c";
  static final CpGrid GRID = CpGrid.of(2, 2);

  /** Tilings of one (1, N, N, D) complex: whole, and ragged in three tiles; masked or not. */
  static List<List<Row>> seeds() {
    List<List<Row>> out = new ArrayList<>();
    for (boolean masked : new boolean[] {false, true}) {
      PairTensor x = PairTensor.random(1, N, D, masked ? 2L : 1L, masked ? 0.3 : 0);
      out.add(List.of(PairTiles.toRow(ID, N, 0, 0, x, 0)));
      out.add(List.of(
          PairTiles.toRow(ID, N, 0, 0, x.window(0, 0, 4, N), 0),
          PairTiles.toRow(ID, N, 4, 0, x.window(4, 0, 6, 7), 0),
          PairTiles.toRow(ID, N, 4, 7, x.window(4, 7, 6, 3), 0)));
    }
    return out;
  }

  @Test
  void seedsDecodeAndAssemble() {
    for (List<Row> rows : seeds()) {
      PairTensor whole = FoldCp.assemble(rows, ID);
      assertEquals(N, whole.rows());
      assertEquals(D, whole.dim());
      assertTrue(whole.sameAs(shuffleAssemble(rows)), "the 2x2 route assembles the same tensor");
    }
  }

  @Test
  void fuzz() {
    List<List<Row>> seeds = seeds();
    try (Fuzz fuzz = new Fuzz("pair tiles", 10_000, 16L << 20, 64)) {
      for (int q = 0; q < RANDOM_INPUTS; q++) {
        SplittableRandom rng = Fuzz.rng("tiles", q);
        int s = rng.nextInt(seeds.size());
        StringBuilder how = new StringBuilder("seed " + s + ":");
        List<Row> rows = mutate(seeds.get(s), rng, how);
        fuzz.check(q, how.toString(), bytesOf(rows),
            () -> {
              for (Row r : rows) {
                TileRecord.fromRow(r);
              }
            },
            () -> FoldCp.assemble(rows, ID),
            () -> shuffleAssemble(rows));
      }
      fuzz.assertClean();
      assertTrue(fuzz.inputs() >= 10_000 || RANDOM_INPUTS < 10_000, fuzz.summary());
      assertTrue(fuzz.accepted() > 0, fuzz.summary());
    }
  }

  /** What the shuffle route does with the rows on a 2x2 grid, minus Spark: cut, group, assemble, crop. */
  static PairTensor shuffleAssemble(List<Row> rows) {
    Map<TileKey, List<TileRecord>> groups = new LinkedHashMap<>();
    for (Row r : rows) {
      for (Tuple2<TileKey, TileRecord> p : Retiling.pieces(TileRecord.fromRow(r), GRID)) {
        groups.computeIfAbsent(p._1(), k -> new ArrayList<>()).add(p._2());
      }
    }
    PairTensor whole = null;
    for (Map.Entry<TileKey, List<TileRecord>> g : groups.entrySet()) {
      TileRecord t = Retiling.crop(Retiling.assemble(g.getKey(), g.getValue(), GRID));
      if (t == null) {
        continue;
      }
      if (whole == null) {
        whole = PairTensor.zeros(1, t.nTokens, t.nTokens, t.dim());
      }
      whole.paste(t.tile, t.row0, t.col0);
    }
    return whole;
  }

  private static byte[] bytesOf(List<Row> rows) {
    int n = 0;
    for (Row r : rows) {
      for (int f = 0; f < r.size(); f++) {
        n += r.get(f) instanceof byte[] ? ((byte[]) r.get(f)).length : 8;
      }
    }
    byte[] out = new byte[n]; // only its length bounds the allocation; the rows are the input
    return out;
  }

  private static final int[] INTERESTING_INTS = {
      0, 1, -1, 2, 3, 7, 8, 9, 10, 11, 16, 255, 256, 46341, 65536, Integer.MAX_VALUE - 8, Integer.MAX_VALUE,
      Integer.MIN_VALUE, -N};
  private static final String[] COLUMNS = {"complex_id", "n_tokens", "row0", "col0", "rows", "cols", "dim", "pair",
      "mask"};

  static List<Row> mutate(List<Row> seed, SplittableRandom rng, StringBuilder how) {
    List<Object[]> rows = new ArrayList<>();
    for (Row r : seed) {
      Object[] v = new Object[r.size()];
      for (int f = 0; f < v.length; f++) {
        v[f] = r.get(f) instanceof byte[] ? ((byte[]) r.get(f)).clone() : r.get(f);
      }
      rows.add(v);
    }
    int edits = 1 + rng.nextInt(3);
    for (int k = 0; k < edits; k++) {
      int at = rng.nextInt(rows.size());
      Object[] v = rows.get(at);
      how.append(" row ").append(at);
      int op = rng.nextInt(14);
      if (v.length < 9 && op != 11 && op != 12) {
        op = 13; // a short row: only the row-level edits apply
      }
      switch (op) {
        case 0:
        case 1:
        case 2:
        case 3: {
          int f = 1 + rng.nextInt(6);
          int old = v[f] instanceof Integer ? (Integer) v[f] : 0;
          int nv = rng.nextInt(3) == 0 ? old + rng.nextInt(5) - 2 : INTERESTING_INTS[rng.nextInt(INTERESTING_INTS.length)];
          v[f] = nv;
          how.append(' ').append(COLUMNS[f]).append(" = ").append(nv).append(';');
          break;
        }
        case 4: { // n_tokens of every row: a consistent claim of a huge N
          int nv = Fuzz.pick(rng, 46341, 100_000, 1 << 20, Integer.MAX_VALUE - 8, Integer.MAX_VALUE, 11, 17);
          for (Object[] r : rows) {
            if (r.length > 1) {
              r[1] = nv;
            }
          }
          how.append(" n_tokens of every row = ").append(nv).append(';');
          break;
        }
        case 5:
        case 6: {
          v[7] = Fuzz.mutateBytes(v[7] instanceof byte[] ? (byte[]) v[7] : new byte[0], 0, rng, how.append(" pair"));
          break;
        }
        case 7: {
          byte[] m = v[8] instanceof byte[] ? (byte[]) v[8]
              : new byte[v[7] instanceof byte[] ? ((byte[]) v[7]).length / (2 * D) : 0];
          if (rng.nextBoolean() && m.length > 0) {
            m = m.clone();
            m[rng.nextInt(m.length)] = Fuzz.pick(rng, (byte) 2, (byte) 0xff, (byte) 0x80, (byte) 0x7f);
            how.append(" mask value;");
          } else {
            m = Fuzz.mutateBytes(m, 0, rng, how.append(" mask"));
          }
          v[8] = m;
          break;
        }
        case 8: {
          int f = rng.nextInt(9);
          v[f] = null;
          how.append(' ').append(COLUMNS[f]).append(" = null;");
          break;
        }
        case 9: {
          int f = rng.nextInt(9);
          Object nv = Fuzz.pick(rng, 5L, (short) 5, "5", new byte[] {5}, 5.0, (Object) new int[] {5}, 5);
          v[f] = nv;
          how.append(' ').append(COLUMNS[f]).append(" = ").append(nv.getClass().getSimpleName()).append(';');
          break;
        }
        case 10: {
          String id = Fuzz.pick(rng, "", "d", "c\u0000", "\u00e9");
          v[0] = id;
          how.append(" complex_id = '").append(id).append("';");
          break;
        }
        case 11: {
          rows.remove(at);
          how.append(" dropped;");
          if (rows.isEmpty()) {
            return new ArrayList<>();
          }
          break;
        }
        case 12: {
          rows.add(rng.nextInt(rows.size() + 1), v.clone());
          how.append(" repeated;");
          break;
        }
        default: {
          int len = rng.nextInt(v.length + 2);
          Object[] nv = new Object[len];
          System.arraycopy(v, 0, nv, 0, Math.min(len, v.length));
          rows.set(at, nv);
          how.append(" with ").append(len).append(" fields;");
        }
      }
    }
    List<Row> out = new ArrayList<>();
    for (Object[] v : rows) {
      out.add(RowFactory.create(v));
    }
    return out;
  }
}
