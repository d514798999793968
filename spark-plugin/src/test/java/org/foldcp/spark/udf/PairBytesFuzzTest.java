package org.foldcp.spark.udf;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.ops.testing.Fuzz;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzzes the BINARY arguments of {@code foldcp_trimul} ({@link PairBytes#decode}, with n and dim
 * through {@link TriMulUdf#positiveInt} as the UDF takes them): valid (pair, mask, n, dim)
 * tuples with the bytes truncated, extended and flipped, mask values other than 0 and 1, and
 * n and dim set to 0, negative, 2^31 - 1, a BIGINT beyond int, fractions. Contract: {@link Fuzz}'s.
 */
@Timeout(300)
class PairBytesFuzzTest {
  static final int RANDOM_INPUTS = Fuzz.iterations(10_000);

  @Test
  void fuzz() {
    PairTensor x = PairTensor.random(1, 6, 4, 5L, 0.3);
    byte[] pair = PairBytes.encode(x);
    byte[] mask = new byte[36];
    for (int i = 0; i < 6; i++) {
      System.arraycopy(x.maskRow(0, i), 0, mask, 6 * i, 6);
    }
    assertTrue(PairBytes.decode(pair, mask, 6, 4).sameAs(x), "the seed decodes");
    try (Fuzz fuzz = new Fuzz("foldcp_trimul pair bytes", 10_000, 16L << 20, 64)) {
      for (int q = 0; q < RANDOM_INPUTS; q++) {
        SplittableRandom rng = Fuzz.rng("pair bytes", q);
        StringBuilder how = new StringBuilder();
        byte[] p = pair;
        byte[] m = rng.nextInt(4) == 0 ? null : mask;
        Number n = 6;
        Number dim = 4;
        int edits = 1 + rng.nextInt(3);
        for (int k = 0; k < edits; k++) {
          switch (rng.nextInt(6)) {
            case 0:
            case 1:
              p = Fuzz.mutateBytes(p, 0, rng, how.append(" pair"));
              break;
            case 2:
              if (m != null && m.length > 0 && rng.nextBoolean()) {
                m = m.clone();
                m[rng.nextInt(m.length)] = Fuzz.pick(rng, (byte) 2, (byte) 0xff, (byte) 0x80, (byte) 0x7f);
                how.append(" mask value;");
              } else {
                m = Fuzz.mutateBytes(m == null ? new byte[0] : m, 0, rng, how.append(" mask"));
              }
              break;
            case 3:
              n = number(rng);
              how.append(" n = ").append(n).append(';');
              break;
            case 4:
              dim = number(rng);
              how.append(" dim = ").append(dim).append(';');
              break;
            default: // consistent claims: n and dim that match a truncated or longer pair
              n = Fuzz.pick(rng, 5, 7, 3, 12);
              how.append(" n = ").append(n).append(';');
          }
        }
        byte[] fp = p;
        byte[] fm = m;
        Number fn = n;
        Number fd = dim;
        fuzz.check(q, how.toString(), Fuzz.concat(fp, fm == null ? new byte[0] : fm),
            () -> PairBytes.decode(fp, fm, TriMulUdf.positiveInt("n", fn, "the number of tokens N"),
                TriMulUdf.positiveInt("dim", fd, "the pair channel count D")));
      }
      fuzz.assertClean();
      assertTrue(fuzz.accepted() > 0, fuzz.summary());
    }
  }

  private static Number number(SplittableRandom rng) {
    return Fuzz.pick(rng, 0, -1, 1, 2, 3, 5, 6, 8, 46341, 65536, Integer.MAX_VALUE, Integer.MIN_VALUE,
        1L << 32, Long.MAX_VALUE, 6.5, 6.0, (short) 6, (byte) -6, null);
  }
}
