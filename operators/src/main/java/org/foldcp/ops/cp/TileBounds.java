package org.foldcp.ops.cp;

import java.io.Serializable;

/** The token window [row0, row0+rows) x [col0, col0+cols) of the (padded) pair grid a rank holds. */
public final class TileBounds implements Serializable {
  private static final long serialVersionUID = 1L;

  public final int row0;
  public final int col0;
  public final int rows;
  public final int cols;

  public TileBounds(int row0, int col0, int rows, int cols) {
    this.row0 = row0;
    this.col0 = col0;
    this.rows = rows;
    this.cols = cols;
  }

  public boolean contains(int gi, int gj) {
    return gi >= row0 && gi < row0 + rows && gj >= col0 && gj < col0 + cols;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof TileBounds)) {
      return false;
    }
    TileBounds t = (TileBounds) o;
    return t.row0 == row0 && t.col0 == col0 && t.rows == rows && t.cols == cols;
  }

  @Override
  public int hashCode() {
    return ((row0 * 31 + col0) * 31 + rows) * 31 + cols;
  }

  @Override
  public String toString() {
    return "[" + row0 + ", " + (row0 + rows) + ") x [" + col0 + ", " + (col0 + cols) + ")";
  }
}
