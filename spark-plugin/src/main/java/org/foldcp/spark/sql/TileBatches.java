package org.foldcp.spark.sql;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.tiles.TileRecord;

/**
 * Pair tiles between Spark's internal formats and TileRecords: rows of {@link PairTiles#SCHEMA}
 * in, columnar batches of the same schema out. The byte layout of a tile is PairTiles' alone;
 * this class only moves fields between containers.
 */
final class TileBatches {
  /** Field positions in {@link PairTiles#SCHEMA}. */
  static final int COMPLEX_ID = 0;
  static final int PAIR = 7;
  static final int MASK = 8;
  static final int FIELDS = 9;

  /**
   * Upper bound on the tiles of one batch. A batch is materialized whole, so this bounds the
   * memory the operator holds per task beyond the route's own.
   */
  static final int MAX_TILES_PER_BATCH = 4;
  /**
   * Upper bound on the pair and mask bytes of one batch (a single larger tile still gets a batch
   * of its own). A column vector keeps its binary values in one array, which cannot pass 2 GiB.
   */
  static final long MAX_BYTES_PER_BATCH = 64L << 20;

  private TileBatches() {}

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

  /** One batch holding {@code tiles} in order, one row each. */
  static ColumnarBatch toBatch(List<TileRecord> tiles) {
    OnHeapColumnVector[] columns = OnHeapColumnVector.allocateColumns(Math.max(1, tiles.size()), PairTiles.SCHEMA);
    for (int r = 0; r < tiles.size(); r++) {
      Row row = tiles.get(r).toRow();
      columns[COMPLEX_ID].putByteArray(r, row.getString(COMPLEX_ID).getBytes(StandardCharsets.UTF_8));
      for (int f = 1; f < PAIR; f++) {
        columns[f].putInt(r, row.getInt(f));
      }
      columns[PAIR].putByteArray(r, (byte[]) row.get(PAIR));
      putNullableBinary(columns[MASK], r, row.isNullAt(MASK) ? null : (byte[]) row.get(MASK));
    }
    ColumnarBatch batch = new ColumnarBatch(columns);
    batch.setNumRows(tiles.size());
    return batch;
  }

  private static void putNullableBinary(WritableColumnVector column, int r, byte[] value) {
    if (value == null) {
      column.putNull(r);
    } else {
      column.putByteArray(r, value);
    }
  }

  /** Groups tiles into batches of at most {@link #MAX_TILES_PER_BATCH} tiles and {@link #MAX_BYTES_PER_BATCH}. */
  static Iterator<ColumnarBatch> batches(Iterator<TileRecord> tiles) {
    return batches(tiles, MAX_TILES_PER_BATCH, MAX_BYTES_PER_BATCH);
  }

  static Iterator<ColumnarBatch> batches(Iterator<TileRecord> tiles, int maxTiles, long maxBytes) {
    return new Iterator<>() {
      private TileRecord pending; // read ahead, did not fit into the previous batch

      @Override
      public boolean hasNext() {
        return pending != null || tiles.hasNext();
      }

      @Override
      public ColumnarBatch next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        List<TileRecord> group = new ArrayList<>();
        long bytes = 0;
        while (group.size() < maxTiles && (pending != null || tiles.hasNext())) {
          TileRecord t = pending != null ? pending : tiles.next();
          pending = null;
          long size = encodedBytes(t);
          if (!group.isEmpty() && bytes + size > maxBytes) {
            pending = t;
            break;
          }
          group.add(t);
          bytes += size;
        }
        return toBatch(group);
      }
    };
  }

  /** The binary bytes a tile adds to a batch: its bf16 values and its mask. */
  static long encodedBytes(TileRecord t) {
    return t.pairBytes() + (t.tile.hasMask() ? (long) t.tile.rows() * t.tile.cols() : 0);
  }

  /** The rows of a batch as TileRecords (tests and row-wise consumers). */
  static List<TileRecord> records(ColumnarBatch batch) {
    List<TileRecord> out = new ArrayList<>();
    int[] identity = identityOrdinals();
    Iterator<InternalRow> it = batch.rowIterator();
    while (it.hasNext()) {
      out.add(decode(it.next(), identity));
    }
    return out;
  }

  static int[] identityOrdinals() {
    int[] o = new int[FIELDS];
    for (int f = 0; f < FIELDS; f++) {
      o[f] = f;
    }
    return o;
  }
}
