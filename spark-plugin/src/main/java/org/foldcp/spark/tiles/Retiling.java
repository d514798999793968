package org.foldcp.spark.tiles;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;
import org.foldcp.ops.tensor.PairTensor;
import scala.Tuple2;

/**
 * Brings pair tiles of any tiling (whole complexes, another grid, ragged user tiles) into the
 * tiles of a CP layout and back. Input side: every tile is cut into the pieces that fall into
 * each rank's layout tile ({@link #pieces}); the pieces of one (complex, rank) are assembled into
 * the padded layout tile ({@link #assemble}), which must be covered exactly once. Output side:
 * layout tiles are cropped to the complex's N ({@link #crop}).
 */
public final class Retiling {
  private Retiling() {}

  /** The layout of one complex on {@code grid}. */
  public static ShardLayout layout(TileRecord r, CpGrid grid) {
    return ShardLayout.ofTiles(grid, r.nTokens, r.dim());
  }

  /** Cuts a tile into the pieces that belong to each rank of the layout of its complex. */
  public static List<Tuple2<TileKey, TileRecord>> pieces(TileRecord in, CpGrid grid) {
    checkInside(in);
    ShardLayout l = layout(in, grid);
    List<Tuple2<TileKey, TileRecord>> out = new ArrayList<>();
    int r1 = in.row0 + in.tile.rows();
    int c1 = in.col0 + in.tile.cols();
    for (int rank = 0; rank < grid.size(); rank++) {
      TileBounds t = l.tile(rank);
      int lo0 = Math.max(in.row0, t.row0);
      int hi0 = Math.min(r1, t.row0 + t.rows);
      int lo1 = Math.max(in.col0, t.col0);
      int hi1 = Math.min(c1, t.col0 + t.cols);
      if (lo0 >= hi0 || lo1 >= hi1) {
        continue;
      }
      PairTensor piece = (lo0 == in.row0 && hi0 == r1 && lo1 == in.col0 && hi1 == c1)
          ? in.tile : in.tile.window(lo0 - in.row0, lo1 - in.col0, hi0 - lo0, hi1 - lo1);
      out.add(new Tuple2<>(new TileKey(in.complexId, rank), new TileRecord(in.complexId, in.nTokens, lo0, lo1, piece)));
    }
    return out;
  }

  /**
   * The layout tile of {@code key} from its pieces: values where a piece covers it, masked zeros
   * in the padding beyond N. Fails, naming the complex and a position, when a real position is
   * covered twice or not at all, or when pieces disagree on N or D.
   */
  public static TileRecord assemble(TileKey key, Iterable<TileRecord> pieces, CpGrid grid) {
    List<TileRecord> all = new ArrayList<>();
    pieces.forEach(all::add);
    if (all.isEmpty()) {
      throw new IllegalStateException("no pieces for " + key);
    }
    int n = all.get(0).nTokens;
    int d = all.get(0).dim();
    long area = 0;
    for (TileRecord p : all) {
      InvalidInputException.require(p.nTokens == n, "n_tokens of a tile of complex '" + key.complexId + "'", p.nTokens,
          "every tile of a complex must give the same n_tokens (" + n + ")");
      InvalidInputException.require(p.dim() == d, "dim of a tile of complex '" + key.complexId + "'", p.dim(),
          "every tile of a complex must give the same dim (" + d + ")");
      area += (long) p.tile.rows() * p.tile.cols();
    }
    TileBounds t = layout(all.get(0), grid).tile(key.rank);
    // n_tokens sizes the layout tile: a tile claiming a huge N must not allocate N x N x D first.
    // Pieces of less area than the real positions of the layout tile leave one uncovered.
    long realRows = Math.max(0, Math.min(t.rows, (long) n - t.row0));
    long realCols = Math.max(0, Math.min(t.cols, (long) n - t.col0));
    if (area < realRows * realCols) {
      throw missing(firstUncovered(all, t, n), key.complexId, n);
    }
    PairTensor tile = PairTensor.zeros(1, t.rows, t.cols, d);
    int[][] cover = new int[t.rows][t.cols];
    for (TileRecord p : all) {
      for (int i = 0; i < p.tile.rows(); i++) {
        int li = p.row0 + i - t.row0;
        System.arraycopy(p.tile.row(0, i), 0, tile.row(0, li), (p.col0 - t.col0) * d, p.tile.cols() * d);
        for (int j = 0; j < p.tile.cols(); j++) {
          int lj = p.col0 + j - t.col0;
          if (++cover[li][lj] > 1) {
            throw InvalidInputException.of("pair position (" + (p.row0 + i) + ", " + (p.col0 + j) + ") of complex '"
                + key.complexId + "'", "given twice", "the tiles of a complex must not overlap");
          }
          if (!p.tile.valid(0, i, j)) {
            tile.setValid(0, li, lj, false);
          }
        }
      }
    }
    boolean padded = false;
    for (int i = 0; i < t.rows; i++) {
      for (int j = 0; j < t.cols; j++) {
        boolean real = t.row0 + i < n && t.col0 + j < n;
        if (real && cover[i][j] == 0) {
          throw missing(new int[] {t.row0 + i, t.col0 + j}, key.complexId, n);
        }
        if (!real) {
          tile.setValid(0, i, j, false);
          padded = true;
        }
      }
    }
    if (!padded && !tile.hasMask()) {
      tile.setMask(null);
    }
    return new TileRecord(key.complexId, n, t.row0, t.col0, tile);
  }

  /** The part of a layout tile inside the complex's N x N grid; null when it is all padding. */
  public static TileRecord crop(TileRecord layoutTile) {
    int rows = Math.min(layoutTile.tile.rows(), layoutTile.nTokens - layoutTile.row0);
    int cols = Math.min(layoutTile.tile.cols(), layoutTile.nTokens - layoutTile.col0);
    if (rows <= 0 || cols <= 0) {
      return null;
    }
    if (rows == layoutTile.tile.rows() && cols == layoutTile.tile.cols()) {
      return layoutTile;
    }
    return new TileRecord(layoutTile.complexId, layoutTile.nTokens, layoutTile.row0, layoutTile.col0,
        layoutTile.tile.window(0, 0, rows, cols));
  }

  private static InvalidInputException missing(int[] position, String complexId, int n) {
    return InvalidInputException.of("pair position (" + position[0] + ", " + position[1] + ") of complex '"
        + complexId + "'", "missing", "the tiles of a complex must cover its whole N x N grid (N = " + n + ")");
  }

  /**
   * The first real position of layout tile {@code t} (row-major) that no piece covers, found
   * without allocating the tile: row by row, the pieces' column ranges are merged. Called only
   * when the pieces' area is short of the tile's, so a gap exists, and every row before it is
   * covered whole: the rows scanned are bounded by the pieces' area.
   */
  private static int[] firstUncovered(List<TileRecord> pieces, TileBounds t, int n) {
    int rowEnd = (int) Math.min((long) t.row0 + t.rows, n);
    int colEnd = (int) Math.min((long) t.col0 + t.cols, n);
    List<int[]> spans = new ArrayList<>();
    for (int i = t.row0; i < rowEnd; i++) {
      spans.clear();
      for (TileRecord p : pieces) {
        if (i >= p.row0 && i - p.row0 < p.tile.rows()) {
          spans.add(new int[] {p.col0, p.col0 + p.tile.cols()});
        }
      }
      spans.sort((a, b) -> Integer.compare(a[0], b[0]));
      int next = t.col0;
      for (int[] s : spans) {
        if (s[0] > next) {
          break;
        }
        next = Math.max(next, s[1]);
      }
      if (next < colEnd) {
        return new int[] {i, next};
      }
    }
    throw new IllegalStateException("pieces of area below the tile's cover it: overlapping pieces outside " + t);
  }

  private static void checkInside(TileRecord r) {
    String what = "tile (row0, col0, rows, cols) of complex '" + r.complexId + "'";
    String tile = "(" + r.row0 + ", " + r.col0 + ", " + r.tile.rows() + ", " + r.tile.cols() + ")";
    InvalidInputException.require(r.nTokens >= 1, "n_tokens of complex '" + r.complexId + "'", r.nTokens, "must be >= 1");
    InvalidInputException.require(r.row0 >= 0 && r.col0 >= 0 && r.row0 <= r.nTokens - r.tile.rows()
        && r.col0 <= r.nTokens - r.tile.cols(), what, tile, "must lie inside the N x N grid, N = " + r.nTokens);
  }
}
