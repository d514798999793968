/*
 * The CPU backend's kernels, written once for a vector width: included by kernels_avx512.c
 * (VW = 16) and kernels_avx2.c (VW = 8), each compiled for its instruction set; cpu_jni.c picks
 * one at run time from the CPU's features.
 *
 * The arithmetic is the pure-Java path's (org.foldcp.ops.cpu.Stages, Gemm, Simd), operation by
 * operation, so that every variant gives the same bits:
 *   - GEMM: every element of C starts from 0 (or C) and takes one fused multiply-add per k, in
 *     ascending k; a k-block boundary only stores and reloads the exact fp32 value. An element's
 *     value depends neither on its tile, nor on how M or N are split, nor on the vector width.
 *   - LayerNorm sums: eight partial sums, lane l holding the terms with c = l mod 8, added in the
 *     fixed tree ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)) (Stages.sum8), hence 256-bit accumulators
 *     in both variants.
 *   - sigmoid: Simd.sigmoid's operations lane-wise (Cephes-style exp, fma where it has fma).
 * Compiled with -ffp-contract=off: no multiply-add is fused unless written as one.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

#if VW == 16
typedef __m512 vf;
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, v) _mm512_storeu_ps(p, v)
#define V_SET1(x) _mm512_set1_ps(x)
#define V_ZERO() _mm512_setzero_ps()
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_DIV(a, b) _mm512_div_ps(a, b)
#define V_NEG(v) _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN)))
#define V_MIN_SEL(t, lo) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, lo, _CMP_LT_OQ), t, lo)
#define V_MAX_SEL(t, hi) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, hi, _CMP_GT_OQ), t, hi)
#define V_SCALE(k) \
  _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(_mm512_castps_si512(k), _mm512_set1_epi32(ROUND_BITS - 127)), 23))
/* 8 x 32 register tile: 16 accumulators of 32 zmm registers. */
#define MR 8
#define KC 256
#define NAME(f) f##_avx512
#else
typedef __m256 vf;
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, v) _mm256_storeu_ps(p, v)
#define V_SET1(x) _mm256_set1_ps(x)
#define V_ZERO() _mm256_setzero_ps()
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_DIV(a, b) _mm256_div_ps(a, b)
#define V_NEG(v) _mm256_xor_ps(v, _mm256_set1_ps(-0.0f))
#define V_MIN_SEL(t, lo) _mm256_blendv_ps(t, lo, _mm256_cmp_ps(t, lo, _CMP_LT_OQ))
#define V_MAX_SEL(t, hi) _mm256_blendv_ps(t, hi, _mm256_cmp_ps(t, hi, _CMP_GT_OQ))
#define V_SCALE(k) \
  _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_sub_epi32(_mm256_castps_si256(k), _mm256_set1_epi32(ROUND_BITS - 127)), 23))
/* 6 x 16 register tile: 12 accumulators of 16 ymm registers. */
#define MR 6
#define KC 256
#define NAME(f) f##_avx2
#endif

#define NR (2 * VW)
/* Rows of A packed at once (a multiple of MR) and columns of B packed at once (a multiple of NR):
 * MC x KC and KC x NC floats stay in L2. */
#define MC 96
#define NC 256

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

/* Packing buffers of the calling thread (dynamic TLS: allocated at a thread's first call, freed
 * when it exits); 64 extra bytes so that the working pointer can be 64-byte aligned. */
static __thread float NAME(a_pack)[MC * KC + 16];
static __thread float NAME(b_pack)[KC * NC + 16];

static inline float *aligned64(float *p) {
  return (float *) (((uintptr_t) p + 63) & ~(uintptr_t) 63);
}

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

/* ---------------------------------------------------------------- GEMM */

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

/* ---------------------------------------------------------------- LayerNorm */

/* out = LayerNorm(v) over d values (out may be v): Stages.layerNorm, term by term. */
static inline void NAME(layer_norm)(const float *v, int d, const float *w, const float *bias, float eps, float *out) {
  __m256 s = _mm256_setzero_ps();
  int c = 0;
  for (; c + 8 <= d; c += 8) s = _mm256_add_ps(s, _mm256_loadu_ps(v + c));
  float l[8];
  _mm256_storeu_ps(l, s);
  for (; c < d; c++) l[0] += v[c];
  float mean = (((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))) / (float) d;
  __m256 mv = _mm256_set1_ps(mean);
  s = _mm256_setzero_ps();
  for (c = 0; c + 8 <= d; c += 8) {
    __m256 x = _mm256_sub_ps(_mm256_loadu_ps(v + c), mv);
    s = _mm256_add_ps(s, _mm256_mul_ps(x, x));
  }
  _mm256_storeu_ps(l, s);
  for (; c < d; c++) {
    float x = v[c] - mean;
    l[0] += x * x;
  }
  float var = (((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))) / (float) d;
  float inv = (float) (1.0 / sqrt((double) (var + eps)));
  vf mvv = V_SET1(mean);
  vf iv = V_SET1(inv);
  for (c = 0; c + VW <= d; c += VW) {
    vf x = V_MUL(V_MUL(V_SUB(V_LOAD(v + c), mvv), iv), V_LOAD(w + c));
    V_STORE(out + c, V_ADD(x, V_LOAD(bias + c)));
  }
  for (; c < d; c++) out[c] = (v[c] - mean) * inv * w[c] + bias[c];
}

static inline void bf16_to_float(const uint16_t *x, int n, float *out) {
  int c = 0;
  for (; c + 8 <= n; c += 8) {
    __m128i h = _mm_loadu_si128((const __m128i *) (x + c));
    _mm256_storeu_ps(out + c, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
  }
  for (; c < n; c++) {
    uint32_t u = (uint32_t) x[c] << 16;
    memcpy(out + c, &u, 4);
  }
}

/* Bf16.fromFloat: round to nearest even; NaN keeps its sign and becomes quiet. */
static inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t) ((bits >> 16) | 0x0040u);
  uint32_t lsb = (bits >> 16) & 1u;
  return (uint16_t) ((bits + 0x7fffu + lsb) >> 16);
}

/* float_to_bf16 on 8 lanes, the same integer operations (the addition wraps as uint32 does). */
static inline void float8_to_bf16(__m256 v, uint16_t *out) {
  __m256i bits = _mm256_castps_si256(v);
  __m256i abs = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  __m256i hi = _mm256_srli_epi32(bits, 16);
  __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
  __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), lsb), 16);
  __m256i quiet = _mm256_or_si256(hi, _mm256_set1_epi32(0x0040));
  __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
  /* 32 -> 16 bits (every value < 2^16): pack within 128-bit lanes, then gather qwords 0 and 2. */
  __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128((__m128i *) out, _mm256_castsi256_si128(packed));
}

#if VW == 16
static inline void floatv_to_bf16(vf v, uint16_t *out) {
  float8_to_bf16(_mm512_castps512_ps256(v), out);
  float8_to_bf16(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)), out + 8);
}
#else
static inline void floatv_to_bf16(vf v, uint16_t *out) { float8_to_bf16(v, out); }
#endif

void NAME(layer_norm_bf16)(const uint16_t *x, int cols, int d, const float *w, const float *bias, float eps,
                           float *out) {
  for (int j = 0; j < cols; j++) {
    float *o = out + (long) j * d;
    bf16_to_float(x + (long) j * d, d, o);
    NAME(layer_norm)(o, d, w, bias, eps, o);
  }
}

void NAME(layer_norm_f32)(const float *x, int cols, int d, const float *w, const float *bias, float eps, float *out) {
  for (int j = 0; j < cols; j++) NAME(layer_norm)(x + (long) j * d, d, w, bias, eps, out + (long) j * d);
}

/* ---------------------------------------------------------------- gates */

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

/* ---------------------------------------------------------------- FMA peak */

/* 12 independent chains of VW-wide FMAs (enough to cover the FMA latency times the FMA ports of
 * every x86 core we know), iters rounds; returns the flops done (the caller times it). */
double NAME(fma_chains)(long iters) {
  vf x0 = V_SET1(1.0f), x1 = V_SET1(1.1f), x2 = V_SET1(1.2f), x3 = V_SET1(1.3f), x4 = V_SET1(1.4f),
     x5 = V_SET1(1.5f), x6 = V_SET1(1.6f), x7 = V_SET1(1.7f), x8 = V_SET1(1.8f), x9 = V_SET1(1.9f),
     x10 = V_SET1(2.0f), x11 = V_SET1(2.1f);
  const vf mul = V_SET1(0.999999f);
  const vf add = V_SET1(1e-7f);
  for (long it = 0; it < iters; it++) {
    x0 = V_FMA(x0, mul, add);
    x1 = V_FMA(x1, mul, add);
    x2 = V_FMA(x2, mul, add);
    x3 = V_FMA(x3, mul, add);
    x4 = V_FMA(x4, mul, add);
    x5 = V_FMA(x5, mul, add);
    x6 = V_FMA(x6, mul, add);
    x7 = V_FMA(x7, mul, add);
    x8 = V_FMA(x8, mul, add);
    x9 = V_FMA(x9, mul, add);
    x10 = V_FMA(x10, mul, add);
    x11 = V_FMA(x11, mul, add);
    __asm__ volatile("" : "+x"(x0), "+x"(x1), "+x"(x2), "+x"(x3), "+x"(x4), "+x"(x5));
    __asm__ volatile("" : "+x"(x6), "+x"(x7), "+x"(x8), "+x"(x9), "+x"(x10), "+x"(x11));
  }
  float sink[VW];
  V_STORE(sink, V_ADD(V_ADD(V_ADD(x0, x1), V_ADD(x2, x3)), V_ADD(V_ADD(V_ADD(x4, x5), V_ADD(x6, x7)),
                                                                  V_ADD(V_ADD(x8, x9), V_ADD(x10, x11)))));
  volatile float keep = sink[0];
  (void) keep;
  return 2.0 * VW * 12.0 * (double) iters;
}

const struct foldcp_cpu_kernels NAME(foldcp_cpu_kernels) = {
    .name = NAME_STRING,
    .mr = MR,
    .nr = NR,
    .gemm = NAME(gemm),
    .layer_norm_bf16 = NAME(layer_norm_bf16),
    .layer_norm_f32 = NAME(layer_norm_f32),
    .gate_projection = NAME(gate_projection),
    .gate_output = NAME(gate_output),
    .fma_chains = NAME(fma_chains),
};
