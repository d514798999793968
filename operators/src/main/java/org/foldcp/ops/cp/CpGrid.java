package org.foldcp.ops.cp;

import java.io.Serializable;
import org.foldcp.ops.InvalidInputException;

/**
 * The shape of the context-parallel grid: cp0 row groups by cp1 column groups, cp = cp0 * cp1
 * ranks. A 1-D grid is (cp, 1): rank r holds a band of rows and every column. Logical rank
 * (r0, r1) is r0 * cp1 + r1. Non-square grids are allowed.
 */
public final class CpGrid implements Serializable {
  private static final long serialVersionUID = 1L;

  private final int rowGroups;
  private final int colGroups;

  private CpGrid(int rowGroups, int colGroups) {
    InvalidInputException.require(rowGroups >= 1, "cp0 (grid rows)", rowGroups, "grid dimensions must be >= 1");
    InvalidInputException.require(colGroups >= 1, "cp1 (grid columns)", colGroups, "grid dimensions must be >= 1");
    this.rowGroups = rowGroups;
    this.colGroups = colGroups;
  }

  /** A 1-D grid: cp row bands. */
  public static CpGrid oneD(int cp) {
    InvalidInputException.require(cp >= 1, "cp", cp, "the number of context-parallel ranks must be >= 1");
    return new CpGrid(cp, 1);
  }

  /** A 2-D grid of cp0 x cp1 tiles. */
  public static CpGrid of(int cp0, int cp1) {
    return new CpGrid(cp0, cp1);
  }

  /** Parses "4" (1-D) or "2x3" (2-D). */
  public static CpGrid parse(String s) {
    String v = s == null ? "" : s.trim().toLowerCase(java.util.Locale.ROOT);
    try {
      int x = v.indexOf('x');
      return x < 0 ? oneD(Integer.parseInt(v)) : of(Integer.parseInt(v.substring(0, x)), Integer.parseInt(v.substring(x + 1)));
    } catch (NumberFormatException e) {
      throw InvalidInputException.of("cp grid", "'" + s + "'", "must be a rank count like 4 or a grid like 2x2");
    }
  }

  public int rowGroups() { return rowGroups; }

  public int colGroups() { return colGroups; }

  public int size() { return rowGroups * colGroups; }

  public int rank(int r0, int r1) {
    return r0 * colGroups + r1;
  }

  public int rowGroupOf(int rank) {
    checkRank(rank);
    return rank / colGroups;
  }

  public int colGroupOf(int rank) {
    checkRank(rank);
    return rank % colGroups;
  }

  void checkRank(int rank) {
    InvalidInputException.require(rank >= 0 && rank < size(), "rank", rank, "must lie in [0, " + size() + ") for grid " + this);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CpGrid && ((CpGrid) o).rowGroups == rowGroups && ((CpGrid) o).colGroups == colGroups;
  }

  @Override
  public int hashCode() {
    return rowGroups * 31 + colGroups;
  }

  /** "2x1" style, as in the benchmark CSV. */
  @Override
  public String toString() {
    return rowGroups + "x" + colGroups;
  }
}
