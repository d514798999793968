package org.foldcp.ops.gpu.cp;

import java.util.Random;
import org.foldcp.ops.a2a.HeadsShape;

/**
 * One case of the heads all-to-all team test, one line of text (it travels to the rank
 * processes as a file). Every rank's input is made from the seed and the rank, so any process
 * can make all of them: the reference is an all-gather of those inputs, sliced.
 *
 * @param skewRank  a rank that asks for one more head per rank (-1: none): the mismatch test
 * @param repeats  scatter + gather pairs in a row (the memory test)
 */
record HeadsCase(String name, int batch, int seqLocal, int heads, int headDim, HeadsDtype dtype, StoreRoute route,
    long seed, int skewRank, int repeats) {

  String line() {
    return String.join(" ", name, "" + batch, "" + seqLocal, "" + heads, "" + headDim, dtype.name(), route.name(),
        "" + seed, "" + skewRank, "" + repeats);
  }

  static HeadsCase parse(String line) {
    String[] f = line.trim().split(" ");
    return new HeadsCase(f[0], Integer.parseInt(f[1]), Integer.parseInt(f[2]), Integer.parseInt(f[3]),
        Integer.parseInt(f[4]), HeadsDtype.valueOf(f[5]), StoreRoute.valueOf(f[6]), Long.parseLong(f[7]),
        Integer.parseInt(f[8]), Integer.parseInt(f[9]));
  }

  HeadsShape shape(int rank, int world) {
    int h = rank == skewRank ? heads + world : heads;
    return new HeadsShape(batch, seqLocal, h, headDim, world);
  }

  /**
   * Rank {@code rank}'s input as raw bits: 16-bit values in the low half of each int for bf16 and
   * fp16, fp32 bits otherwise; about one value in 64 is a NaN with a payload or an infinity, so
   * that a route that canonicalises NaNs or goes through float arithmetic is caught.
   */
  int[] input(int rank, int world) {
    HeadsShape s = shape(rank, world);
    Random rnd = new Random(seed * 1_000_003L + rank);
    int[] v = new int[s.elements()];
    boolean wide = dtype == HeadsDtype.F32;
    for (int i = 0; i < v.length; i++) {
      int special = rnd.nextInt(64);
      if (wide) {
        v[i] = special == 0 ? 0x7fc00000 | (rnd.nextInt() & 0x3fffff) | 1 : special == 1 ? 0xff800000 : rnd.nextInt();
      } else {
        v[i] = special == 0 ? 0x7f81 + rnd.nextInt(0x7e) : special == 1 ? 0xfc00 : rnd.nextInt(0x10000);
      }
    }
    return v;
  }

  /** What rank {@code rank} must hold after the scatter: [B, S, H/W, Dh] sliced from every input. */
  int[] scattered(int rank, int world) {
    HeadsShape s = shape(rank, world);
    int[][] all = new int[world][];
    for (int r = 0; r < world; r++) {
      all[r] = input(r, world);
    }
    int hl = s.headsLocal();
    int[] out = new int[s.elements()];
    int k = 0;
    for (int b = 0; b < s.batch(); b++) {
      for (int pos = 0; pos < s.seq(); pos++) {
        int src = pos / s.seqLocal();
        int sl = pos % s.seqLocal();
        for (int hh = 0; hh < hl; hh++) {
          int h = rank * hl + hh;
          for (int d = 0; d < s.headDim(); d++) {
            out[k++] = all[src][((b * s.seqLocal() + sl) * s.heads() + h) * s.headDim() + d];
          }
        }
      }
    }
    return out;
  }
}
