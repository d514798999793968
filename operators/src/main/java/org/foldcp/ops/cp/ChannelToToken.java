package org.foldcp.ops.cp;

import java.util.ArrayList;
import java.util.List;

/**
 * The second reshard (docs/design.md section 2, step 3): each channel owner holds Z_c over the whole
 * N x N grid for its D/cp channels; every rank needs z token-major ([i][j][c]) for its tile and
 * all D channels, for LN_out. The GPU route fuses this into the triangle GEMM's epilogue stores.
 */
public final class ChannelToToken {
  private ChannelToToken() {}

  /** Every (owner, dst) pair: dst's tile, owner's channel slice. owner-major order. */
  public static List<ReshardSegment> segments(ShardLayout layout) {
    int cp = layout.grid().size();
    List<ReshardSegment> out = new ArrayList<>(cp * cp);
    for (int owner = 0; owner < cp; owner++) {
      for (int dst = 0; dst < cp; dst++) {
        out.add(new ReshardSegment(owner, dst, layout.tile(dst), layout.firstChannel(owner), layout.channelsPerRank()));
      }
    }
    return out;
  }

  /** The segments channel owner {@code owner} sends, one per destination, in destination order. */
  public static List<ReshardSegment> sentBy(ShardLayout layout, int owner) {
    return segments(layout).subList(owner * layout.grid().size(), (owner + 1) * layout.grid().size());
  }

  /** Packs z[cLocal][gi * np + gj] of the owner's channels (np x np each) over the destination's tile. */
  public static void pack(ReshardSegment s, float[][] z, int np, float[] payload) {
    TileBounds t = s.tokens;
    for (int i = 0; i < t.rows; i++) {
      for (int j = 0; j < t.cols; j++) {
        int base = s.offset(i, j, 0);
        for (int q = 0; q < s.channels; q++) {
          payload[base + q] = z[q][(t.row0 + i) * np + t.col0 + j];
        }
      }
    }
  }

  /** Writes row {@code i} of a received payload into zt[j * hidden + c] (token-major, absolute channels). */
  public static void unpackRow(ReshardSegment s, int i, float[] payload, float[] zt, int hidden) {
    for (int j = 0; j < s.tokens.cols; j++) {
      System.arraycopy(payload, s.offset(i, j, 0), zt, j * hidden + s.channel0, s.channels);
    }
  }
}
