package org.foldcp.ops.cp;

import java.io.Serializable;
import org.foldcp.ops.InvalidInputException;

/**
 * Where everything lives for a pair tensor of N tokens and D channels on a CP grid, through a
 * stack of hidden width H (docs/design.md section 2): token tiles of D channels before and after
 * the layer, slices of the H hidden channels in between.
 *
 * <p>N is padded up to a multiple of 8 lcm(cp0, cp1) with masked tokens so that every tile has the
 * same extent (the GPU kernels want equal tiles); masked tokens contribute exactly zero to every
 * triangle sum, and the padding is cropped on the way out. H is not padded: each rank owns
 * H / cp hidden channels, so H must divide by cp (D need not).
 */
public final class ShardLayout implements Serializable {
  private static final long serialVersionUID = 2L;

  private final CpGrid grid;
  private final int n;
  private final int dim;
  private final int hidden;
  private final int paddedN;
  private final int tileRows;
  private final int tileCols;
  private final int channelsPerRank;
  private final int tileMultiple;

  /** The layout of a stack whose hidden width H equals D. */
  public ShardLayout(CpGrid grid, int n, int dim) {
    this(grid, n, dim, dim);
  }

  public ShardLayout(CpGrid grid, int n, int dim, int hidden) {
    this(grid, n, dim, hidden, GPU_TILE_MULTIPLE);
  }

  /**
   * As above, with every tile side also a multiple of {@code tileMultiple}: the GPU CP kernels
   * store 8 tokens (16 bytes of bf16) at a time into the channel owners' planes, so a tile side
   * must never end inside such a group ({@link #forGpu}).
   */
  public ShardLayout(CpGrid grid, int n, int dim, int hidden, int tileMultiple) {
    this(grid, n, dim, hidden, tileMultiple, false);
  }

  /**
   * The tiles of a complex of N tokens and D channels, before it meets a stack: what the tiling
   * steps of the routes need (who holds which token). The channel split comes with the stack's
   * hidden width ({@link #withHidden}); until then {@link #channelsPerRank} and its kin refuse.
   */
  public static ShardLayout ofTiles(CpGrid grid, int n, int dim) {
    return new ShardLayout(grid, n, dim, 0, GPU_TILE_MULTIPLE, true);
  }

  private ShardLayout(CpGrid grid, int n, int dim, int hidden, int tileMultiple, boolean tilesOnly) {
    InvalidInputException.require(tileMultiple >= 1, "tile multiple", tileMultiple, "must be >= 1");
    InvalidInputException.require(n >= 1, "N", n, "the number of tokens must be >= 1");
    InvalidInputException.require(dim >= 1, "D", dim, "the pair channel count must be >= 1");
    if (!tilesOnly) {
      InvalidInputException.require(hidden >= 1, "H", hidden, "the hidden channel count must be >= 1");
      InvalidInputException.require(hidden % grid.size() == 0, hidden == dim ? "D" : "H", hidden,
          "must be divisible by cp = " + grid.size() + " (grid " + grid + "): each rank owns "
              + (hidden == dim ? "D" : "H") + "/cp channels of the triangle product; choose cp among the divisors"
              + " of " + hidden);
    }
    this.grid = grid;
    this.n = n;
    this.dim = dim;
    this.hidden = hidden;
    this.tileMultiple = tileMultiple;
    int multiple = lcm(grid.rowGroups(), grid.colGroups()) * tileMultiple;
    this.paddedN = (int) Math.min(Integer.MAX_VALUE, ((long) n + multiple - 1) / multiple * multiple);
    this.tileRows = paddedN / grid.rowGroups();
    this.tileCols = paddedN / grid.colGroups();
    this.channelsPerRank = hidden / grid.size();
  }

  /**
   * Tile sides are multiples of this many tokens in every layout, CPU routes included, so that a
   * CPU rank and a GPU rank agree on who holds which token and tiles move between routes
   * unchanged: the GPU kernels store 8 bf16 tokens (16 bytes) at a time. The extra padding is
   * masked and costs the CPU at most a few tokens per tile.
   */
  public static final int GPU_TILE_MULTIPLE = 8;

  /** The layout of the GPU CP path (the same as the default one: see {@link #GPU_TILE_MULTIPLE}). */
  public static ShardLayout forGpu(CpGrid grid, int n, int dim, int hidden) {
    return new ShardLayout(grid, n, dim, hidden, GPU_TILE_MULTIPLE);
  }

  /**
   * The same tiles with the triangle product's channels split for a stack of hidden width
   * {@code h} (H must divide by cp): what the rank steps use, since a complex's layout is fixed by
   * its N and D before it meets the stack.
   */
  public ShardLayout withHidden(int h) {
    return h == hidden ? this : new ShardLayout(grid, n, dim, h, tileMultiple);
  }

  static int lcm(int a, int b) {
    int x = a;
    int y = b;
    while (y != 0) {
      int t = x % y;
      x = y;
      y = t;
    }
    return a / x * b;
  }

  public CpGrid grid() { return grid; }

  public int n() { return n; }

  public int dim() { return dim; }

  /** The hidden width H: the channels split over the ranks during the triangle product; 0 for {@link #ofTiles}. */
  public int hidden() { return hidden; }

  /** N after padding with masked tokens (a multiple of lcm(cp0, cp1)). */
  public int paddedN() { return paddedN; }

  public int tileRows() { return tileRows; }

  public int tileCols() { return tileCols; }

  public int channelsPerRank() {
    requireChannels();
    return channelsPerRank;
  }

  /** Whether the layout splits channels (false for {@link #ofTiles}, until {@link #withHidden}). */
  public boolean splitsChannels() {
    return hidden > 0;
  }

  private void requireChannels() {
    if (hidden == 0) {
      throw new IllegalStateException("a layout of tiles only has no channel split: withHidden(H) of the stack"
          + " first (" + this + ")");
    }
  }

  /** The token window of {@code rank} in the padded grid. */
  public TileBounds tile(int rank) {
    return new TileBounds(grid.rowGroupOf(rank) * tileRows, grid.colGroupOf(rank) * tileCols, tileRows, tileCols);
  }

  /** First channel owned by {@code rank}; it owns [first, first + channelsPerRank). */
  public int firstChannel(int rank) {
    requireChannels();
    grid.checkRank(rank);
    return rank * channelsPerRank;
  }

  /** The rank that owns channel c during the triangle product. */
  public int channelOwner(int c) {
    requireChannels();
    InvalidInputException.require(c >= 0 && c < hidden, "channel", c, "must lie in [0, " + hidden + ")");
    return c / channelsPerRank;
  }

  /** The rank whose tile holds token (gi, gj) of the padded grid. */
  public int tokenOwner(int gi, int gj) {
    InvalidInputException.require(gi >= 0 && gi < paddedN && gj >= 0 && gj < paddedN, "token",
        "(" + gi + ", " + gj + ")", "must lie in the padded grid [0, " + paddedN + ")^2");
    return grid.rank(gi / tileRows, gj / tileCols);
  }

  @Override
  public String toString() {
    return "ShardLayout(grid " + grid + ", N=" + n + " padded to " + paddedN + ", tile " + tileRows + "x" + tileCols
        + ", D=" + dim + (hidden == 0 ? ", channels split by the stack's H)"
        : (hidden == dim ? "" : ", H=" + hidden) + ", " + channelsPerRank + " channels per rank)");
  }
}
