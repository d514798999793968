package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;

class TileBatchesTest {
  private static TileRecord tile(String id, int n, int row0, int col0, int rows, int cols, boolean masked, long seed) {
    PairTensor whole = PairTensor.random(1, n, 4, seed, masked ? 0.3 : 0);
    return new TileRecord(id, n, row0, col0, whole.window(row0, col0, rows, cols));
  }

  private static void assertSameTile(TileRecord want, TileRecord got) {
    assertEquals(want.complexId, got.complexId);
    assertEquals(want.nTokens, got.nTokens);
    assertEquals(want.row0, got.row0);
    assertEquals(want.col0, got.col0);
    assertTrue(want.tile.sameAs(got.tile), "values and mask of " + want);
    assertEquals(want.tile.hasMask(), got.tile.hasMask(), "mask presence of " + want);
  }

  @Test
  void tilesSurviveABatchFieldForField() {
    List<TileRecord> tiles = List.of(tile("a", 9, 0, 3, 5, 6, true, 1), tile("bé", 7, 2, 0, 5, 7, false, 2));
    ColumnarBatch batch = TileBatches.toBatch(tiles);
    assertEquals(2, batch.numRows());
    assertEquals(9, batch.numCols());
    assertTrue(batch.column(TileBatches.MASK).isNullAt(1), "an unmasked tile has a null mask");
    List<TileRecord> back = TileBatches.records(batch);
    assertEquals(2, back.size());
    for (int i = 0; i < tiles.size(); i++) {
      assertSameTile(tiles.get(i), back.get(i));
    }
  }

  @Test
  void rowsAreReadThroughTheGivenOrdinals() {
    TileRecord t = tile("c", 5, 1, 2, 3, 3, true, 3);
    InternalRow decoded = TileBatches.toBatch(List.of(t)).getRow(0);
    // The same fields in reverse order, behind one unrelated column.
    Object[] v = new Object[10];
    int[] ordinals = new int[9];
    for (int f = 0; f < 9; f++) {
      ordinals[f] = 9 - f;
      v[9 - f] = f == 0 ? UTF8String.fromString("c") : f < 7 ? (Object) decoded.getInt(f) : decoded.getBinary(f);
    }
    v[0] = 42L;
    assertSameTile(t, TileBatches.decode(new GenericInternalRow(v), ordinals));
  }

  @Test
  void aNullHeaderFieldIsRefusedByName() {
    Object[] v = new Object[9];
    v[0] = UTF8String.fromString("d");
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> TileBatches.decode(new GenericInternalRow(v), TileBatches.identityOrdinals()));
    assertTrue(e.getMessage().startsWith("column 'n_tokens' of a tile row = null"), e.getMessage());
  }

  @Test
  void batchesHoldAFewTilesAndBoundedBytes() {
    List<TileRecord> tiles = new ArrayList<>();
    for (int i = 0; i < 7; i++) {
      tiles.add(tile("t" + i, 6, 0, 0, 6, 6, i % 2 == 0, i));
    }
    List<Integer> sizes = new ArrayList<>();
    List<TileRecord> back = new ArrayList<>();
    for (Iterator<ColumnarBatch> it = TileBatches.batches(tiles.iterator(), 3, Long.MAX_VALUE); it.hasNext(); ) {
      ColumnarBatch b = it.next();
      sizes.add(b.numRows());
      back.addAll(TileBatches.records(b));
    }
    assertEquals(List.of(3, 3, 1), sizes);
    for (int i = 0; i < tiles.size(); i++) {
      assertSameTile(tiles.get(i), back.get(i));
    }

    // A byte budget of two unmasked tiles gives two per batch; a tile above the budget still gets a batch of its own.
    List<TileRecord> unmasked = List.of(tiles.get(1), tiles.get(3), tiles.get(5), tile("u", 6, 0, 0, 6, 6, false, 9),
        tile("v", 6, 0, 0, 6, 6, false, 10));
    assertEquals(List.of(2, 2, 1), batchSizes(unmasked, 10, 2 * TileBatches.encodedBytes(unmasked.get(0))));
    assertEquals(List.of(1, 1, 1, 1, 1), batchSizes(unmasked, 10, 1));
    assertEquals(6 * 6 * 4 * 2 + 6 * 6, TileBatches.encodedBytes(tiles.get(0)), "bf16 values plus one mask byte each");
    assertFalse(TileBatches.batches(List.<TileRecord>of().iterator()).hasNext());
  }

  private static List<Integer> batchSizes(List<TileRecord> tiles, int maxTiles, long maxBytes) {
    List<Integer> sizes = new ArrayList<>();
    for (Iterator<ColumnarBatch> it = TileBatches.batches(tiles.iterator(), maxTiles, maxBytes); it.hasNext(); ) {
      sizes.add(it.next().numRows());
    }
    return sizes;
  }
}
