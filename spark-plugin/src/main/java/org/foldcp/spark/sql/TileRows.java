package org.foldcp.spark.sql;

import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.unsafe.types.UTF8String;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.tiles.TileRecord;

/**
 * Pair tiles between Spark's internal rows and TileRecords, in the layout of {@link
 * PairTiles#SCHEMA}. The byte layout of a tile is PairTiles' alone; this class only moves fields
 * between containers.
 */
final class TileRows {
  /** Field positions in {@link PairTiles#SCHEMA}. */
  static final int COMPLEX_ID = 0;
  static final int PAIR = 7;
  static final int MASK = 8;
  static final int FIELDS = 9;

  private TileRows() {}

  /**
   * Decodes one row; {@code ordinals[f]} is where field f of PairTiles.SCHEMA sits in the row.
   * Sizes are checked against the header by PairTiles; of the fields only the mask may be null.
   */
  static TileRecord decode(InternalRow row, int[] ordinals) {
    for (int f = 0; f < MASK; f++) {
      if (row.isNullAt(ordinals[f])) {
        throw InvalidInputException.of("column '" + PairTiles.SCHEMA.fields()[f].name() + "' of a tile row", "null",
            "only the mask of a tile may be null");
      }
    }
    Object[] v = new Object[FIELDS];
    v[COMPLEX_ID] = row.getUTF8String(ordinals[COMPLEX_ID]).toString();
    for (int f = 1; f < PAIR; f++) {
      v[f] = row.getInt(ordinals[f]);
    }
    v[PAIR] = row.getBinary(ordinals[PAIR]);
    v[MASK] = row.isNullAt(ordinals[MASK]) ? null : row.getBinary(ordinals[MASK]);
    return TileRecord.fromRow(RowFactory.create(v));
  }

  /** A tile as an internal row of PairTiles.SCHEMA (generic: {@link #encoder()} makes the operator's output). */
  static InternalRow toRow(TileRecord t) {
    org.apache.spark.sql.Row row = t.toRow();
    Object[] v = new Object[FIELDS];
    v[COMPLEX_ID] = UTF8String.fromString(row.getString(COMPLEX_ID));
    for (int f = 1; f < PAIR; f++) {
      v[f] = row.getInt(f);
    }
    v[PAIR] = row.get(PAIR);
    v[MASK] = row.isNullAt(MASK) ? null : row.get(MASK);
    return new GenericInternalRow(v);
  }

  /**
   * Tiles to unsafe rows, the format Spark's row operators (exchanges, collect) expect; one per
   * task, as the returned row is reused for the next tile.
   */
  static java.util.function.Function<TileRecord, InternalRow> encoder() {
    UnsafeProjection project = UnsafeProjection.create(PairTiles.SCHEMA);
    return t -> project.apply(toRow(t));
  }

  static int[] identityOrdinals() {
    int[] o = new int[FIELDS];
    for (int f = 0; f < FIELDS; f++) {
      o[f] = f;
    }
    return o;
  }
}
