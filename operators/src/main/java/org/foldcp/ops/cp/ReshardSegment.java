package org.foldcp.ops.cp;

import java.io.Serializable;

/**
 * One message of a reshard: rank {@code src} sends rank {@code dst} the values of the token
 * window {@code tokens} (padded global coordinates) for channels [channel0, channel0 + channels).
 * The payload is laid out [i][j][c] relative to the window and channel0, floats.
 */
public final class ReshardSegment implements Serializable {
  private static final long serialVersionUID = 1L;

  public final int src;
  public final int dst;
  public final TileBounds tokens;
  public final int channel0;
  public final int channels;

  public ReshardSegment(int src, int dst, TileBounds tokens, int channel0, int channels) {
    this.src = src;
    this.dst = dst;
    this.tokens = tokens;
    this.channel0 = channel0;
    this.channels = channels;
  }

  /** Floats in the payload (per batch element). */
  public long length() {
    return (long) tokens.rows * tokens.cols * channels;
  }

  /** Index of (local row i, local col j, channel c - channel0) in the payload. */
  public int offset(int i, int j, int cLocal) {
    return (i * tokens.cols + j) * channels + cLocal;
  }

  @Override
  public String toString() {
    return src + "->" + dst + " tokens " + tokens + " channels [" + channel0 + ", " + (channel0 + channels) + ")";
  }
}
