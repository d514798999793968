package org.foldcp.spark.tiles;

import java.io.Serializable;
import java.util.Objects;
import org.apache.spark.sql.Row;
import org.foldcp.ops.tensor.PairTensor;

/**
 * One pair tile of one complex, decoded: where it sits in the complex's N x N grid and its
 * (1, rows, cols, D) values and mask. The unit every route moves between tasks.
 */
public final class TileRecord implements Serializable {
  private static final long serialVersionUID = 1L;

  public final String complexId;
  public final int nTokens;
  public final int row0;
  public final int col0;
  public final PairTensor tile;

  public TileRecord(String complexId, int nTokens, int row0, int col0, PairTensor tile) {
    this.complexId = Objects.requireNonNull(complexId, "complexId");
    this.nTokens = nTokens;
    this.row0 = row0;
    this.col0 = col0;
    this.tile = Objects.requireNonNull(tile, "tile");
  }

  /** Decodes a row of {@link PairTiles#SCHEMA}; every field is checked (see {@link PairTiles#fromRow}). */
  public static TileRecord fromRow(Row row) {
    PairTensor tile = PairTiles.fromRow(row);
    return new TileRecord(PairTiles.complexId(row), PairTiles.intField(row, 1), PairTiles.intField(row, 2),
        PairTiles.intField(row, 3), tile);
  }

  public Row toRow() {
    return PairTiles.toRow(complexId, nTokens, row0, col0, tile, 0);
  }

  public boolean isWholeComplex() {
    return row0 == 0 && col0 == 0 && tile.rows() == nTokens && tile.cols() == nTokens;
  }

  public int dim() {
    return tile.dim();
  }

  /** Bytes of the encoded pair values (bf16). */
  public long pairBytes() {
    return 2L * tile.rows() * tile.cols() * tile.dim();
  }

  @Override
  public String toString() {
    return "tile of '" + complexId + "' (N=" + nTokens + ") at (" + row0 + ", " + col0 + ") " + tile.shapeString();
  }
}
