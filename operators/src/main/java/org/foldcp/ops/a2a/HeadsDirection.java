package org.foldcp.ops.a2a;

/** Which way a heads all-to-all goes; each is the exact inverse of the other. */
public enum HeadsDirection {
  /** [B, S_local, H, Dh] per rank to [B, S, H/W, Dh]: all positions, this rank's heads. */
  SCATTER,
  /** [B, S, H/W, Dh] per rank back to [B, S_local, H, Dh]: this rank's positions, all heads. */
  GATHER
}
