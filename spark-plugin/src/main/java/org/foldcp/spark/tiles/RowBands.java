package org.foldcp.spark.tiles;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.PairTensor;

/**
 * A complex too large for one tile row, cut into row bands: tiles (row0, 0, rows, N) of at most
 * {@code maxTileBytes} bf16 bytes each, in row order. A Spark binary value holds less than 2 GiB,
 * so a cp = 1 complex with 2 N^2 D bytes above the limit (1 GiB by default) travels as bands, and the cp = 1 route puts
 * them back together ({@link #gather}) when they arrive one after another, as the readers emit
 * them; its output leaves as bands again ({@link #cut}).
 *
 * <p>The limit is a constructor parameter so that tests exercise the cutting with small tensors.
 */
public final class RowBands implements Serializable {
  private static final long serialVersionUID = 1L;

  /**
   * The most pair bytes of one band by default: 1 GiB. A binary value could hold almost 2 GiB, but
   * Spark keeps a whole row (the pair bytes, the mask, the id and the fixed fields) in one byte
   * array of at most 2^31 - 16 bytes (UnsafeRow, column vectors), so half of that leaves room for
   * the rest of the row and for the copies Spark makes growing its buffers.
   */
  public static final long DEFAULT_MAX_TILE_BYTES = 1L << 30;

  /** The most pair bytes one tile row can hold at all (the JVM's largest array, 2^31 - 9). */
  public static final long BINARY_LIMIT = Integer.MAX_VALUE - 8;

  /** Bands of the default size. */
  public static final RowBands BINARY = new RowBands(DEFAULT_MAX_TILE_BYTES);

  private final long maxTileBytes;

  /** Bands of at most {@code maxTileBytes} pair bytes each (1 to {@link #BINARY_LIMIT}). */
  public RowBands(long maxTileBytes) {
    InvalidInputException.require(maxTileBytes >= 2 && maxTileBytes <= BINARY_LIMIT, "maxTileBytes", maxTileBytes,
        "must be between 2 and " + BINARY_LIMIT + " (a tile row's pair bytes live in one binary value)");
    this.maxTileBytes = maxTileBytes;
  }

  public long maxTileBytes() {
    return maxTileBytes;
  }

  /**
   * Rows of an N x N x D complex per band: all N when the complex fits one tile, else as many as
   * fit. Fails when a single row of 2 N D bytes is already too large (N D above 2^30 for binary
   * values), since bands never split a row.
   */
  public int rowsPerBand(String complexId, int n, int dim) {
    long rowBytes = 2L * n * dim;
    InvalidInputException.require(rowBytes <= maxTileBytes, "row size of complex '" + complexId + "' (N = " + n
        + ", D = " + dim + ")", rowBytes + " bytes", "one row of pair values (2 N D bytes) must fit in one tile of at"
        + " most " + maxTileBytes + " bytes; use cp > 1, whose ranks hold tiles of N/cp columns");
    return (int) Math.min(n, maxTileBytes / rowBytes);
  }

  /** Bands covering rows [0, N) of an N-token complex, as (row0, rows) pairs. */
  public int[][] bands(String complexId, int n, int dim) {
    int per = rowsPerBand(complexId, n, dim);
    int count = (n + per - 1) / per;
    int[][] out = new int[count][];
    for (int k = 0; k < count; k++) {
      out[k] = new int[] {k * per, Math.min(per, n - k * per)};
    }
    return out;
  }

  /**
   * {@code whole}, a complex (0, 0, N, N), as itself when it fits one tile, else as its row bands in
   * order. The bands share the rows of {@code whole} (no copy).
   */
  public List<TileRecord> cut(TileRecord whole) {
    PairTiles.requireWholeComplex(whole);
    PairTensor t = whole.tile;
    if (whole.pairBytes() <= maxTileBytes) {
      return List.of(whole);
    }
    List<TileRecord> out = new ArrayList<>();
    for (int[] band : bands(whole.complexId, whole.nTokens, t.dim())) {
      short[][] rows = new short[band[1]][];
      byte[][] mask = t.hasMask() ? new byte[band[1]][] : null;
      for (int i = 0; i < band[1]; i++) {
        rows[i] = t.row(0, band[0] + i);
        if (mask != null) {
          mask[i] = t.maskRow(0, band[0] + i);
        }
      }
      out.add(new TileRecord(whole.complexId, whole.nTokens, band[0], 0,
          PairTensor.wrap(1, band[1], t.cols(), t.dim(), rows, mask)));
    }
    return out;
  }

  /**
   * Whole complexes from {@code tiles}: whole tiles pass through; row bands (0 &lt; rows &lt; N,
   * all N columns) that follow one another from row 0 to row N are joined into one complex.
   * Anything else (a band out of order, bands of two complexes interleaved, a tile narrower than
   * N) fails naming the tile and what the cp = 1 route accepts.
   */
  public static Iterator<TileRecord> gather(Iterator<TileRecord> tiles) {
    return new Iterator<>() {
      @Override
      public boolean hasNext() {
        return tiles.hasNext();
      }

      @Override
      public TileRecord next() {
        if (!tiles.hasNext()) {
          throw new NoSuchElementException();
        }
        TileRecord first = tiles.next();
        if (!isBand(first)) {
          PairTiles.requireWholeComplex(first);
          return first;
        }
        if (first.row0 != 0) {
          throw outOfOrder(first, 0, first);
        }
        List<TileRecord> bands = new ArrayList<>(List.of(first));
        int covered = first.tile.rows();
        while (covered < first.nTokens) {
          TileRecord b = tiles.hasNext() ? tiles.next() : null;
          if (b == null || !b.complexId.equals(first.complexId) || !isBand(b) || b.row0 != covered
              || b.nTokens != first.nTokens || b.dim() != first.dim()) {
            throw outOfOrder(first, covered, b);
          }
          bands.add(b);
          covered += b.tile.rows();
        }
        return join(bands);
      }
    };
  }

  private static boolean isBand(TileRecord r) {
    return r.col0 == 0 && r.tile.cols() == r.nTokens && r.tile.rows() < r.nTokens;
  }

  private static TileRecord join(List<TileRecord> bands) {
    TileRecord first = bands.get(0);
    int n = first.nTokens;
    short[][] rows = new short[n][];
    boolean anyMask = bands.stream().anyMatch(b -> b.tile.hasMask());
    byte[][] mask = anyMask ? new byte[n][] : null;
    byte[] allValid = null;
    for (TileRecord b : bands) {
      for (int i = 0; i < b.tile.rows(); i++) {
        rows[b.row0 + i] = b.tile.row(0, i);
        if (mask != null) {
          byte[] m = b.tile.maskRow(0, i);
          if (m == null) {
            if (allValid == null) {
              allValid = new byte[n];
              Arrays.fill(allValid, (byte) 1);
            }
            m = allValid.clone();
          }
          mask[b.row0 + i] = m;
        }
      }
    }
    return new TileRecord(first.complexId, n, 0, 0, PairTensor.wrap(1, n, n, first.dim(), rows, mask));
  }

  private static InvalidInputException outOfOrder(TileRecord first, int covered, TileRecord got) {
    String shown = got == null ? "the end of the partition" : got.toString();
    String after = covered == 0 ? "first tile" : "tile after rows [0, " + covered + ")";
    return InvalidInputException.of(after + " of complex '" + first.complexId + "' (N = " + first.nTokens + ")", shown, "the cp = 1 route joins a complex cut into row bands only when its bands come"
        + " one after another in row order, in one partition (as FoldCp.tilesFromNpy and FoldCpData.tilesFromDirectory"
        + " emit them: keep them unshuffled); for other tilings set spark.foldcp.route=shuffle, which assembles tiles");
  }
}
