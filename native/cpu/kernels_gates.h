/* The gates: sigmoid (scalar and vector, Simd.sigmoid's operations), gate_projection and gate_output. */

/* The sigmoid's constants: Simd.java's, which documents them. */
#define EXP_MIN (-87.0f)
#define EXP_MAX 88.0f
#define LOG2E 1.44269504088896341f
#define ROUND 12582912.0f
#define ROUND_BITS 0x4B400000
#define LN2_HI 0.693359375f
#define LN2_LO (-2.12194440e-4f)
#define P0 1.9875691500e-4f
#define P1 1.3981999507e-3f
#define P2 8.3334519073e-3f
#define P3 4.1665795894e-2f
#define P4 1.6666665459e-1f
#define P5 5.0000001201e-1f

static inline float sigmoid1(float v) {
  float t = -v;
  t = t < EXP_MIN ? EXP_MIN : t; /* compare and select: NaN passes through */
  t = t > EXP_MAX ? EXP_MAX : t;
  float k = fmaf(t, LOG2E, ROUND);
  float n = k - ROUND;
  float r = fmaf(n, -LN2_HI, t);
  r = fmaf(n, -LN2_LO, r);
  float p = fmaf(P0, r, P1);
  p = fmaf(p, r, P2);
  p = fmaf(p, r, P3);
  p = fmaf(p, r, P4);
  p = fmaf(p, r, P5);
  float e = fmaf(p, r * r, r) + 1.0f;
  int32_t kb;
  memcpy(&kb, &k, 4);
  int32_t sb = (int32_t) ((uint32_t) (kb - (ROUND_BITS - 127)) << 23);
  float scale;
  memcpy(&scale, &sb, 4);
  e *= scale;
  return 1.0f / (1.0f + e);
}

static inline vf sigmoidv(vf v) {
  vf t = V_NEG(v);
  t = V_MIN_SEL(t, V_SET1(EXP_MIN));
  t = V_MAX_SEL(t, V_SET1(EXP_MAX));
  vf k = V_FMA(t, V_SET1(LOG2E), V_SET1(ROUND));
  vf n = V_SUB(k, V_SET1(ROUND));
  vf r = V_FMA(n, V_SET1(-LN2_HI), t);
  r = V_FMA(n, V_SET1(-LN2_LO), r);
  vf p = V_FMA(V_SET1(P0), r, V_SET1(P1));
  p = V_FMA(p, r, V_SET1(P2));
  p = V_FMA(p, r, V_SET1(P3));
  p = V_FMA(p, r, V_SET1(P4));
  p = V_FMA(p, r, V_SET1(P5));
  vf e = V_ADD(V_FMA(p, V_MUL(r, r), r), V_SET1(1.0f));
  e = V_MUL(e, V_SCALE(k));
  const vf one = V_SET1(1.0f);
  return V_DIV(one, V_ADD(one, e));
}

/* proj rows 4q + (0: p of a, 1: g of a, 2: p of b, 3: g of b), cols values each; bias4 likewise.
 * a[q*cols + j] = mask[j] == 0 ? 0 : sigmoid(g + bg) * (p + bp), the same for b. */
void NAME(gate_projection)(const float *proj, int cc, int cols, const float *bias4, const uint8_t *mask, float *a,
                           float *b) {
  for (int q = 0; q < cc; q++) {
    for (int half = 0; half < 2; half++) {
      const float *p = proj + (long) (4 * q + 2 * half) * cols;
      const float *g = p + cols;
      float bp = bias4[4 * q + 2 * half];
      float bg = bias4[4 * q + 2 * half + 1];
      float *o = (half == 0 ? a : b) + (long) q * cols;
      vf bpv = V_SET1(bp);
      vf bgv = V_SET1(bg);
      int j = 0;
      for (; j + VW <= cols; j += VW) {
        vf s = sigmoidv(V_ADD(V_LOAD(g + j), bgv));
        V_STORE(o + j, V_MUL(s, V_ADD(V_LOAD(p + j), bpv)));
      }
      for (; j < cols; j++) o[j] = sigmoid1(g[j] + bg) * (p[j] + bp);
      if (mask) {
        /* +0.0 where masked, as the scalar o[j] = 0.0f (a NaN there becomes +0.0 too). */
        for (j = 0; j + 8 <= cols; j += 8) {
          __m256i mi = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) (mask + j)));
          __m256 off = _mm256_castsi256_ps(_mm256_cmpeq_epi32(mi, _mm256_setzero_si256()));
          _mm256_storeu_ps(o + j, _mm256_andnot_ps(off, _mm256_loadu_ps(o + j)));
        }
        for (; j < cols; j++)
          if (mask[j] == 0) o[j] = 0.0f;
      }
    }
  }
}

/* out[j*d + c] = bf16(sigmoid(go + gb[c]) * (po + pb[c]) (+ x)), token-major rows of d. */
void NAME(gate_output)(const float *po, const float *go, int cols, int d, const float *pb, const float *gb,
                       const uint16_t *x, int residual, uint16_t *out) {
  float xf[VW];
  for (int j = 0; j < cols; j++) {
    const float *pr = po + (long) j * d;
    const float *gr = go + (long) j * d;
    const uint16_t *xr = x + (long) j * d;
    uint16_t *orow = out + (long) j * d;
    int c = 0;
    for (; c + VW <= d; c += VW) {
      vf s = sigmoidv(V_ADD(V_LOAD(gr + c), V_LOAD(gb + c)));
      vf r = V_MUL(s, V_ADD(V_LOAD(pr + c), V_LOAD(pb + c)));
      if (residual) {
        bf16_to_float(xr + c, VW, xf);
        r = V_ADD(r, V_LOAD(xf));
      }
      floatv_to_bf16(r, orow + c);
    }
    for (; c < d; c++) {
      float r = sigmoid1(gr[c] + gb[c]) * (pr[c] + pb[c]);
      if (residual) {
        uint32_t u = (uint32_t) xr[c] << 16;
        float xv;
        memcpy(&xv, &u, 4);
        r += xv;
      }
      orow[c] = float_to_bf16(r);
    }
  }
}
