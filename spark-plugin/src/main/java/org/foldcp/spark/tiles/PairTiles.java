package org.foldcp.spark.tiles;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.PairTensor;

/**
 * Pair tiles as DataFrame rows (docs/design.md section 5): complex_id, n_tokens, row0, col0, rows,
 * cols, dim, pair (bf16 little-endian, row-major [rows][cols][dim]), mask (uint8 per (row, col),
 * null = all valid). A whole complex is the tile (0, 0, N, N).
 */
public final class PairTiles {
  private PairTiles() {}

  public static final StructType SCHEMA = new StructType(new StructField[] {
      DataTypes.createStructField("complex_id", DataTypes.StringType, false),
      DataTypes.createStructField("n_tokens", DataTypes.IntegerType, false),
      DataTypes.createStructField("row0", DataTypes.IntegerType, false),
      DataTypes.createStructField("col0", DataTypes.IntegerType, false),
      DataTypes.createStructField("rows", DataTypes.IntegerType, false),
      DataTypes.createStructField("cols", DataTypes.IntegerType, false),
      DataTypes.createStructField("dim", DataTypes.IntegerType, false),
      DataTypes.createStructField("pair", DataTypes.BinaryType, false),
      DataTypes.createStructField("mask", DataTypes.BinaryType, true)});

  /** A tile row for batch element {@code b} of {@code t}, placed at (row0, col0) of an N-token complex. */
  public static Row toRow(String complexId, int nTokens, int row0, int col0, PairTensor t, int b) {
    int rows = t.rows();
    int cols = t.cols();
    int d = t.dim();
    long bytes = 2L * rows * cols * d;
    InvalidInputException.require(bytes <= Integer.MAX_VALUE - 8, "tile size", bytes + " bytes",
        "one tile row must stay below 2 GiB; cut the complex into row bands (RowBands) or tiles (cp > 1)");
    ByteBuffer buf = ByteBuffer.allocate((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < rows; i++) {
      buf.asShortBuffer().position(i * cols * d).put(t.row(b, i));
    }
    byte[] mask = null;
    if (t.hasMask()) {
      mask = new byte[rows * cols];
      for (int i = 0; i < rows; i++) {
        System.arraycopy(t.maskRow(b, i), 0, mask, i * cols, cols);
      }
    }
    return RowFactory.create(complexId, nTokens, row0, col0, rows, cols, d, buf.array(), mask);
  }

  /**
   * The tile of a row as a (1, rows, cols, dim) block; checks every field against SCHEMA (present,
   * of its type, null only for the mask) and the sizes against the header, before allocating.
   */
  public static PairTensor fromRow(Row row) {
    String id = complexId(row);
    int rows = intField(row, 4);
    int cols = intField(row, 5);
    int d = intField(row, 6);
    byte[] pair = (byte[]) field(row, 7, byte[].class);
    byte[] mask = (byte[]) field(row, 8, byte[].class);
    long want = 2L * rows * cols * d;
    InvalidInputException.require(pair.length == want, "pair bytes of complex '" + id + "'", pair.length,
        "must be 2 * rows * cols * dim = 2 * " + rows + " * " + cols + " * " + d + " = " + want + " (bf16)");
    PairTensor t = PairTensor.zeros(1, rows, cols, d);
    ByteBuffer buf = ByteBuffer.wrap(pair).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < rows; i++) {
      buf.asShortBuffer().position(i * cols * d).get(t.row(0, i));
    }
    if (mask != null) {
      InvalidInputException.require(mask.length == rows * cols, "mask bytes of complex '" + id + "'", mask.length,
          "must be rows * cols = " + rows + " * " + cols + " = " + (rows * cols) + " (one uint8 per position)");
      byte[][] m = new byte[rows][cols];
      for (int i = 0; i < rows; i++) {
        System.arraycopy(mask, i * cols, m[i], 0, cols);
      }
      t.setMask(m);
    }
    return t;
  }

  /** The complex_id of a tile row, checked (see {@link #field}). */
  public static String complexId(Row row) {
    return (String) field(row, 0, String.class);
  }

  /** INT field {@code f} of a tile row, checked (see {@link #field}). */
  static int intField(Row row, int f) {
    return (Integer) field(row, f, Integer.class);
  }

  /**
   * Field {@code f} of a tile row: the row must have the columns of SCHEMA in its order, and the
   * field the Java type Spark gives SCHEMA's type, and no null unless SCHEMA allows it (only
   * mask). Rows built by hand or collected from a DataFrame of another schema fail here with the
   * column's name instead of a NullPointerException or ClassCastException later.
   */
  private static Object field(Row row, int f, Class<?> type) {
    InvalidInputException.require(row.size() >= SCHEMA.size(), "column count of a tile row", row.size(),
        "a tile row has the " + SCHEMA.size() + " columns of PairTiles.SCHEMA " + SCHEMA.simpleString());
    StructField column = SCHEMA.fields()[f];
    Object v = row.get(f);
    if (v == null) {
      InvalidInputException.require(column.nullable(), "column '" + column.name() + "' of a tile row", "null",
          "only the mask of a tile may be null");
      return null;
    }
    if (!type.isInstance(v)) {
      String shown = String.valueOf(v);
      throw InvalidInputException.of("column '" + column.name() + "' of a tile row",
          v.getClass().getSimpleName() + " " + (shown.length() > 40 ? shown.substring(0, 40) + "..." : shown),
          "must be of type " + column.dataType().simpleString() + " (PairTiles.SCHEMA)");
    }
    return v;
  }

  /** Checks that a record holds a whole complex (the tile (0, 0, N, N)), as the cp = 1 route needs. */
  public static void requireWholeComplex(TileRecord r) {
    String id = r.complexId;
    int n = r.nTokens;
    String tile = "(" + r.row0 + ", " + r.col0 + ", " + r.tile.rows() + ", " + r.tile.cols() + ")";
    InvalidInputException.require(r.isWholeComplex(),
        "tile (row0, col0, rows, cols) of complex '" + id + "'", tile,
        "the cp = 1 route needs each complex whole in one row, i.e. (0, 0, " + n + ", " + n + "); for tiled input set spark.foldcp.route=shuffle, which assembles tiles");
  }
}
