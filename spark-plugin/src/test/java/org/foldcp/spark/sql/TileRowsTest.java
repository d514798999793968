package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.types.UTF8String;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;

class TileRowsTest {
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
  void tilesSurviveAnUnsafeRowFieldForField() {
    Function<TileRecord, InternalRow> encoder = TileRows.encoder();
    for (TileRecord t : List.of(tile("a", 9, 0, 3, 5, 6, true, 1), tile("bé", 7, 2, 0, 5, 7, false, 2))) {
      InternalRow row = encoder.apply(t);
      assertTrue(row instanceof UnsafeRow, "Spark's row operators expect unsafe rows");
      assertEquals(TileRows.FIELDS, row.numFields());
      assertEquals(!t.tile.hasMask(), row.isNullAt(TileRows.MASK), "an unmasked tile has a null mask");
      assertSameTile(t, TileRows.decode(row, TileRows.identityOrdinals()));
    }
  }

  @Test
  void rowsAreReadThroughTheGivenOrdinals() {
    TileRecord t = tile("c", 5, 1, 2, 3, 3, true, 3);
    InternalRow decoded = TileRows.toRow(t);
    // The same fields in reverse order, behind one unrelated column.
    Object[] v = new Object[10];
    int[] ordinals = new int[9];
    for (int f = 0; f < 9; f++) {
      ordinals[f] = 9 - f;
      v[9 - f] = f == 0 ? UTF8String.fromString("c") : f < 7 ? (Object) decoded.getInt(f) : decoded.getBinary(f);
    }
    v[0] = 42L;
    assertSameTile(t, TileRows.decode(new GenericInternalRow(v), ordinals));
  }

  @Test
  void aNullHeaderFieldIsRefusedByName() {
    Object[] v = new Object[9];
    v[0] = UTF8String.fromString("d");
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> TileRows.decode(new GenericInternalRow(v), TileRows.identityOrdinals()));
    assertTrue(e.getMessage().startsWith("column 'n_tokens' of a tile row = null"), e.getMessage());
  }
}
