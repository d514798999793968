package org.foldcp.ops.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The {@link Simd} operations on jdk.incubator.vector, at the CPU's preferred width (L = 8 floats
 * with AVX2, 16 with AVX-512). The GEMM micro-kernel keeps a 6 x 2L tile of C in twelve vector
 * registers, one explicit FMA per element and k; the sigmoid runs {@link Simd#sigmoid(float)}'s
 * operations lane-wise (and that very method on the tail). Loaded only where the module is
 * present ({@link Simd#create}); this class must stay the only one that names
 * jdk.incubator.vector, so that the rest of the backend runs without it.
 */
final class VectorSimd extends Simd {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();
  private static final int MR = 6;
  private static final int NR = 2 * L;

  private VectorSimd() {
    super(MR, NR);
  }

  /** The kernel, or null where a vector holds fewer than 2 floats (no SIMD worth the name). */
  static Simd create() {
    return L >= 2 ? new VectorSimd() : null;
  }

  @Override
  String describe() {
    return "jdk.incubator.vector " + S.vectorBitSize() + "-bit, " + MR + "x" + NR;
  }

  @Override
  void gemmTile(int kb, float[] a, int aOff, float[] b, int bOff, float[] c, int cOff, int ldc, boolean add) {
    int r0 = cOff;
    int r1 = r0 + ldc;
    int r2 = r1 + ldc;
    int r3 = r2 + ldc;
    int r4 = r3 + ldc;
    int r5 = r4 + ldc;
    FloatVector c00;
    FloatVector c01;
    FloatVector c10;
    FloatVector c11;
    FloatVector c20;
    FloatVector c21;
    FloatVector c30;
    FloatVector c31;
    FloatVector c40;
    FloatVector c41;
    FloatVector c50;
    FloatVector c51;
    if (add) {
      c00 = FloatVector.fromArray(S, c, r0);
      c01 = FloatVector.fromArray(S, c, r0 + L);
      c10 = FloatVector.fromArray(S, c, r1);
      c11 = FloatVector.fromArray(S, c, r1 + L);
      c20 = FloatVector.fromArray(S, c, r2);
      c21 = FloatVector.fromArray(S, c, r2 + L);
      c30 = FloatVector.fromArray(S, c, r3);
      c31 = FloatVector.fromArray(S, c, r3 + L);
      c40 = FloatVector.fromArray(S, c, r4);
      c41 = FloatVector.fromArray(S, c, r4 + L);
      c50 = FloatVector.fromArray(S, c, r5);
      c51 = FloatVector.fromArray(S, c, r5 + L);
    } else {
      FloatVector z = FloatVector.zero(S);
      c00 = z;
      c01 = z;
      c10 = z;
      c11 = z;
      c20 = z;
      c21 = z;
      c30 = z;
      c31 = z;
      c40 = z;
      c41 = z;
      c50 = z;
      c51 = z;
    }
    for (int p = 0; p < kb; p++) {
      int bi = bOff + p * NR;
      int ai = aOff + p * MR;
      FloatVector b0 = FloatVector.fromArray(S, b, bi);
      FloatVector b1 = FloatVector.fromArray(S, b, bi + L);
      FloatVector x = FloatVector.broadcast(S, a[ai]);
      c00 = x.fma(b0, c00);
      c01 = x.fma(b1, c01);
      x = FloatVector.broadcast(S, a[ai + 1]);
      c10 = x.fma(b0, c10);
      c11 = x.fma(b1, c11);
      x = FloatVector.broadcast(S, a[ai + 2]);
      c20 = x.fma(b0, c20);
      c21 = x.fma(b1, c21);
      x = FloatVector.broadcast(S, a[ai + 3]);
      c30 = x.fma(b0, c30);
      c31 = x.fma(b1, c31);
      x = FloatVector.broadcast(S, a[ai + 4]);
      c40 = x.fma(b0, c40);
      c41 = x.fma(b1, c41);
      x = FloatVector.broadcast(S, a[ai + 5]);
      c50 = x.fma(b0, c50);
      c51 = x.fma(b1, c51);
    }
    c00.intoArray(c, r0);
    c01.intoArray(c, r0 + L);
    c10.intoArray(c, r1);
    c11.intoArray(c, r1 + L);
    c20.intoArray(c, r2);
    c21.intoArray(c, r2 + L);
    c30.intoArray(c, r3);
    c31.intoArray(c, r3 + L);
    c40.intoArray(c, r4);
    c41.intoArray(c, r4 + L);
    c50.intoArray(c, r5);
    c51.intoArray(c, r5 + L);
  }

  @Override
  void sigmoid(float[] x, int n) {
    FloatVector one = FloatVector.broadcast(S, 1f);
    FloatVector round = FloatVector.broadcast(S, ROUND);
    FloatVector ln2Hi = FloatVector.broadcast(S, -LN2_HI);
    FloatVector ln2Lo = FloatVector.broadcast(S, -LN2_LO);
    FloatVector p0 = FloatVector.broadcast(S, P0);
    FloatVector p1 = FloatVector.broadcast(S, P1);
    FloatVector p2 = FloatVector.broadcast(S, P2);
    FloatVector p3 = FloatVector.broadcast(S, P3);
    FloatVector p4 = FloatVector.broadcast(S, P4);
    FloatVector p5 = FloatVector.broadcast(S, P5);
    int j = 0;
    for (; j + L <= n; j += L) {
      FloatVector t = FloatVector.fromArray(S, x, j).neg();
      t = t.blend(EXP_MIN, t.compare(VectorOperators.LT, EXP_MIN));
      t = t.blend(EXP_MAX, t.compare(VectorOperators.GT, EXP_MAX));
      FloatVector k = t.fma(LOG2E, ROUND);
      FloatVector nn = k.sub(round);
      FloatVector r = nn.fma(ln2Hi, t);
      r = nn.fma(ln2Lo, r);
      FloatVector p = p0.fma(r, p1);
      p = p.fma(r, p2);
      p = p.fma(r, p3);
      p = p.fma(r, p4);
      p = p.fma(r, p5);
      FloatVector e = p.fma(r.mul(r), r).add(one);
      FloatVector scale = k.reinterpretAsInts().sub(ROUND_BITS - 127).lanewise(VectorOperators.LSHL, 23)
          .reinterpretAsFloats();
      one.div(one.add(e.mul(scale))).intoArray(x, j);
    }
    for (; j < n; j++) {
      x[j] = Simd.sigmoid(x[j]);
    }
  }
}
