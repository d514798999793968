/* GEMM for one vector width: packing buffers, A and B packing, the MR x NR register tile, the blocked loop. */

/* Packing buffers of the calling thread (dynamic TLS: allocated at a thread's first call, freed
 * when it exits); 64 extra bytes so that the working pointer can be 64-byte aligned. */
static __thread float NAME(a_pack)[MC * KC + 16];
static __thread float NAME(b_pack)[KC * NC + 16];

static inline float *aligned64(float *p) {
  return (float *) (((uintptr_t) p + 63) & ~(uintptr_t) 63);
}

/* C[i*ldc + j] = (add ? C : 0) + sum_p ap[p*MR + i] * bp[p*NR + j], one fma per p in order. */
static inline void NAME(tile)(int kb, const float *restrict ap, const float *restrict bp, float *c, long ldc,
                              int add) {
  vf acc[MR][2];
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++) {
    if (add) {
      acc[i][0] = V_LOAD(c + i * ldc);
      acc[i][1] = V_LOAD(c + i * ldc + VW);
    } else {
      acc[i][0] = V_ZERO();
      acc[i][1] = V_ZERO();
    }
  }
  for (int p = 0; p < kb; p++) {
    vf b0 = V_LOAD(bp);
    vf b1 = V_LOAD(bp + VW);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      vf x = V_SET1(ap[i]);
      acc[i][0] = V_FMA(x, b0, acc[i][0]);
      acc[i][1] = V_FMA(x, b1, acc[i][1]);
    }
    ap += MR;
    bp += NR;
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++) {
    V_STORE(c + i * ldc, acc[i][0]);
    V_STORE(c + i * ldc + VW, acc[i][1]);
  }
}

/* A(i, p) = ta ? a[p*lda + i] : a[i*lda + p]; rows i0.. of A, mc of them, k from p0, kb of them,
 * into panels of MR rows: dst[s*MR*kb + p*MR + r] = A(i0 + s*MR + r, p0 + p), zeros past mc. */
static void NAME(pack_a)(int ta, const float *a, long lda, int i0, int mc, int p0, int kb, float *dst) {
  for (int s = 0; s < mc; s += MR) {
    int rows = mc - s < MR ? mc - s : MR;
    float *d = dst + (long) s * kb;
    if (ta) {
      for (int p = 0; p < kb; p++) {
        const float *src = a + (long) (p0 + p) * lda + i0 + s;
        int r = 0;
        for (; r < rows; r++) d[p * MR + r] = src[r];
        for (; r < MR; r++) d[p * MR + r] = 0.0f;
      }
    } else {
      for (int r = 0; r < MR; r++) {
        if (r < rows) {
          const float *src = a + (long) (i0 + s + r) * lda + p0;
          for (int p = 0; p < kb; p++) d[p * MR + r] = src[p];
        } else {
          for (int p = 0; p < kb; p++) d[p * MR + r] = 0.0f;
        }
      }
    }
  }
}

/* B(p, j) = tb ? b[j*ldb + p] : b[p*ldb + j]; into panels of NR columns:
 * dst[t*NR*kb + p*NR + r] = B(p0 + p, j0 + t*NR + r), zeros past nc. */
static void NAME(pack_b)(int tb, const float *b, long ldb, int j0, int nc, int p0, int kb, float *dst) {
  for (int t = 0; t < nc; t += NR) {
    int cols = nc - t < NR ? nc - t : NR;
    float *d = dst + (long) t * kb;
    if (!tb) {
      for (int p = 0; p < kb; p++) {
        const float *src = b + (long) (p0 + p) * ldb + j0 + t;
        if (cols == NR) {
          V_STORE(d + p * NR, V_LOAD(src));
          V_STORE(d + p * NR + VW, V_LOAD(src + VW));
        } else {
          int r = 0;
          for (; r < cols; r++) d[p * NR + r] = src[r];
          for (; r < NR; r++) d[p * NR + r] = 0.0f;
        }
      }
    } else {
      for (int r = 0; r < NR; r++) {
        if (r < cols) {
          const float *src = b + (long) (j0 + t + r) * ldb + p0;
          for (int p = 0; p < kb; p++) d[p * NR + r] = src[p];
        } else {
          for (int p = 0; p < kb; p++) d[p * NR + r] = 0.0f;
        }
      }
    }
  }
}

void NAME(gemm)(int ta, int tb, int m, int n, int k, const float *a, long lda, const float *b, long ldb, float *c,
                long ldc, int accumulate) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate)
      for (int i = 0; i < m; i++) memset(c + (long) i * ldc, 0, (size_t) n * sizeof(float));
    return;
  }
  float *ap = aligned64(NAME(a_pack));
  float *bp = aligned64(NAME(b_pack));
  float edge[MR * NR];
  for (int jc = 0; jc < n; jc += NC) {
    int nc = n - jc < NC ? n - jc : NC;
    for (int pc = 0; pc < k; pc += KC) {
      int kb = k - pc < KC ? k - pc : KC;
      NAME(pack_b)(tb, b, ldb, jc, nc, pc, kb, bp);
      int add = accumulate || pc > 0;
      for (int ic = 0; ic < m; ic += MC) {
        int mc = m - ic < MC ? m - ic : MC;
        NAME(pack_a)(ta, a, lda, ic, mc, pc, kb, ap);
        /* jr outside ir: one B panel stays in L1 while the A panels stream past it. */
        for (int jr = 0; jr < nc; jr += NR) {
          int nb = nc - jr < NR ? nc - jr : NR;
          const float *bpanel = bp + (long) jr * kb;
          for (int ir = 0; ir < mc; ir += MR) {
            int mb = mc - ir < MR ? mc - ir : MR;
            const float *apanel = ap + (long) ir * kb;
            float *ct = c + (long) (ic + ir) * ldc + jc + jr;
            if (mb == MR && nb == NR) {
              NAME(tile)(kb, apanel, bpanel, ct, ldc, add);
            } else {
              if (add)
                for (int i = 0; i < mb; i++) memcpy(edge + i * NR, ct + (long) i * ldc, (size_t) nb * sizeof(float));
              NAME(tile)(kb, apanel, bpanel, edge, NR, add);
              for (int i = 0; i < mb; i++) memcpy(ct + (long) i * ldc, edge + i * NR, (size_t) nb * sizeof(float));
            }
          }
        }
      }
    }
  }
}
