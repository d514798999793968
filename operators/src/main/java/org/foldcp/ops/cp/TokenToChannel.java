package org.foldcp.ops.cp;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.layer.Direction;

/**
 * The first reshard (docs/design.md section 2, step 1): after the projection every rank holds a and b
 * for its token tile and all D channels; each channel owner needs its D/cp channels over the
 * whole N x N grid, channel-major, transposed for incoming so the triangle product is always
 * Z_c = A_c B_c^T. The GPU route fuses this into the projection epilogue's stores; the CPU, TCP
 * and shuffle routes move the segments below.
 */
public final class TokenToChannel {
  private TokenToChannel() {}

  /** Every (src, dst) pair: src's whole tile, dst's channel slice. src-major order. */
  public static List<ReshardSegment> segments(ShardLayout layout) {
    int cp = layout.grid().size();
    List<ReshardSegment> out = new ArrayList<>(cp * cp);
    for (int src = 0; src < cp; src++) {
      for (int dst = 0; dst < cp; dst++) {
        out.add(new ReshardSegment(src, dst, layout.tile(src), layout.firstChannel(dst), layout.channelsPerRank()));
      }
    }
    return out;
  }

  /** The segments rank {@code src} sends, one per destination, in destination order. */
  public static List<ReshardSegment> sentBy(ShardLayout layout, int src) {
    return segments(layout).subList(src * layout.grid().size(), (src + 1) * layout.grid().size());
  }

  /**
   * Row index in the owner's channel matrix of token (gi, gj): gi for outgoing (A_c[i][k] =
   * a[i,k,c]), gj for incoming (A_c[i][k] = a[k,i,c]).
   */
  public static int matrixRow(Direction dir, int gi, int gj) {
    return dir == Direction.OUTGOING ? gi : gj;
  }

  /** Column index in the owner's channel matrix of token (gi, gj). */
  public static int matrixCol(Direction dir, int gi, int gj) {
    return dir == Direction.OUTGOING ? gj : gi;
  }

  /**
   * Packs row {@code i} of the sender's tile into the payload of {@code s}: values[(c - c0) *
   * cols + j] holds channel c (absolute, from channel c0 = {@code valuesChannel0}) of the row's
   * token j, cols = the tile's columns. The segment's payload starts at {@code base} in
   * {@code payload} (several payloads may share one array).
   */
  public static void packRow(ReshardSegment s, int i, float[] values, int valuesChannel0, float[] payload, int base) {
    int cols = s.tokens.cols;
    for (int q = 0; q < s.channels; q++) {
      int v = (s.channel0 + q - valuesChannel0) * cols;
      for (int j = 0; j < cols; j++) {
        payload[base + s.offset(i, j, q)] = values[v + j];
      }
    }
  }

  /**
   * Stores a received payload (from {@code base} on) into the owner's channel matrices,
   * m[cLocal][row * np + col], np = the padded N (each matrix np x np, row-major).
   */
  public static void unpack(ReshardSegment s, Direction dir, float[] payload, int base0, float[][] m, int np) {
    TileBounds t = s.tokens;
    for (int i = 0; i < t.rows; i++) {
      for (int j = 0; j < t.cols; j++) {
        int row = matrixRow(dir, t.row0 + i, t.col0 + j);
        int col = matrixCol(dir, t.row0 + i, t.col0 + j);
        int base = base0 + s.offset(i, j, 0);
        for (int q = 0; q < s.channels; q++) {
          m[q][row * np + col] = payload[base + q];
        }
      }
    }
  }
}
