package org.foldcp.ops.a2a;

import org.foldcp.ops.InvalidInputException;

/**
 * The index math of the heads all-to-all: which elements rank {@code src} sends rank
 * {@code dst}, and where they land. The host route uses it; the GPU route implements the same
 * definition independently in native code, and the tests hold both to a reference built from
 * the definition itself. With hl = H/W, S = W*S_local, for b in [0, B) and sl in [0, S_local):
 * <ul>
 *   <li>SCATTER, me to q: hl*Dh elements from {@code ((b*S_local + sl)*H + q*hl)*Dh} of me's
 *       input to {@code ((b*S + me*S_local + sl)*hl)*Dh} of q's output: me's positions, q's heads.
 *   <li>GATHER, me to q: hl*Dh elements from {@code ((b*S + q*S_local + sl)*hl)*Dh} of me's
 *       input to {@code ((b*S_local + sl)*H + me*hl)*Dh} of q's output: q's positions, me's heads.
 * </ul>
 * Outer level b, inner level sl. The blocks into one rank's output are disjoint and cover it.
 */
public final class HeadsLayout {
  private HeadsLayout() {}

  /** The block {@code src} sends {@code dst}, as defined above (not normalised). */
  public static BlockCopy block(HeadsShape shape, HeadsDirection direction, int src, int dst) {
    int w = shape.world();
    InvalidInputException.require(src >= 0 && src < w, "source rank", src, "must lie in [0, " + w + ")");
    InvalidInputException.require(dst >= 0 && dst < w, "destination rank", dst, "must lie in [0, " + w + ")");
    int sl = shape.seqLocal();
    int h = shape.heads();
    int dh = shape.headDim();
    int hl = shape.headsLocal();
    int run = hl * dh;
    // strides of the token-major side [B, S_local, H, Dh] and of the heads-major side [B, S, hl, Dh]
    int tokenOuter = sl * h * dh;
    int tokenInner = h * dh;
    int headsOuter = shape.seq() * run;
    int headsInner = run;
    if (direction == HeadsDirection.SCATTER) {
      // dst's heads of src's positions, into src's position range of dst's output
      return new BlockCopy(dst * run, src * sl * run, shape.batch(), sl, run,
          tokenOuter, tokenInner, headsOuter, headsInner);
    }
    // GATHER: dst's position range of src's heads-major input, into src's heads of dst's output
    return new BlockCopy(dst * sl * run, src * run, shape.batch(), sl, run,
        headsOuter, headsInner, tokenOuter, tokenInner);
  }
}
