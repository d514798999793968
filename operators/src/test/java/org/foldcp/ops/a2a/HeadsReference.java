package org.foldcp.ops.a2a;

import java.lang.reflect.Array;

/**
 * The heads all-to-all straight from its definition, for any primitive array type: all-gather
 * every rank's part into the global [B, S, H, Dh] tensor, then slice out what each rank holds.
 * Shares no index math with {@link HeadsLayout}. Rows of Dh are copied with System.arraycopy,
 * so the bits move as they are.
 */
final class HeadsReference {
  private HeadsReference() {}

  /** Per rank [B, S_local, H, Dh] to per rank [B, S, H/W, Dh]. */
  static Object[] scatter(HeadsShape s, Object[] inputs) {
    Object global = newLike(inputs[0], s.batch() * s.seq() * s.heads() * s.headDim());
    // all-gather: global position src*S_local + sl is rank src's local position sl
    for (int src = 0; src < s.world(); src++) {
      for (int b = 0; b < s.batch(); b++) {
        for (int sl = 0; sl < s.seqLocal(); sl++) {
          for (int h = 0; h < s.heads(); h++) {
            System.arraycopy(inputs[src], tokenMajor(s, b, sl, s.seqLocal(), h), global,
                tokenMajor(s, b, src * s.seqLocal() + sl, s.seq(), h), s.headDim());
          }
        }
      }
    }
    // slice: rank r keeps heads [r*H/W, (r+1)*H/W) of every position
    Object[] out = new Object[s.world()];
    int hl = s.headsLocal();
    for (int r = 0; r < s.world(); r++) {
      out[r] = newLike(inputs[0], s.elements());
      for (int b = 0; b < s.batch(); b++) {
        for (int pos = 0; pos < s.seq(); pos++) {
          for (int j = 0; j < hl; j++) {
            System.arraycopy(global, tokenMajor(s, b, pos, s.seq(), r * hl + j), out[r],
                ((b * s.seq() + pos) * hl + j) * s.headDim(), s.headDim());
          }
        }
      }
    }
    return out;
  }

  /** Per rank [B, S, H/W, Dh] to per rank [B, S_local, H, Dh]. */
  static Object[] gather(HeadsShape s, Object[] inputs) {
    Object global = newLike(inputs[0], s.batch() * s.seq() * s.heads() * s.headDim());
    int hl = s.headsLocal();
    // all-gather: rank r's local head j is global head r*H/W + j
    for (int r = 0; r < s.world(); r++) {
      for (int b = 0; b < s.batch(); b++) {
        for (int pos = 0; pos < s.seq(); pos++) {
          for (int j = 0; j < hl; j++) {
            System.arraycopy(inputs[r], ((b * s.seq() + pos) * hl + j) * s.headDim(), global,
                tokenMajor(s, b, pos, s.seq(), r * hl + j), s.headDim());
          }
        }
      }
    }
    // slice: rank q keeps positions [q*S_local, (q+1)*S_local) with all heads
    Object[] out = new Object[s.world()];
    for (int q = 0; q < s.world(); q++) {
      out[q] = newLike(inputs[0], s.elements());
      for (int b = 0; b < s.batch(); b++) {
        for (int sl = 0; sl < s.seqLocal(); sl++) {
          for (int h = 0; h < s.heads(); h++) {
            System.arraycopy(global, tokenMajor(s, b, q * s.seqLocal() + sl, s.seq(), h), out[q],
                tokenMajor(s, b, sl, s.seqLocal(), h), s.headDim());
          }
        }
      }
    }
    return out;
  }

  /** Offset of row (b, pos, h) of a [B, seq, H, Dh] tensor. */
  private static int tokenMajor(HeadsShape s, int b, int pos, int seq, int h) {
    return ((b * seq + pos) * s.heads() + h) * s.headDim();
  }

  private static Object newLike(Object array, int length) {
    return Array.newInstance(array.getClass().getComponentType(), length);
  }
}
