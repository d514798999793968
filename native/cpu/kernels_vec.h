/* The vector width's type and operations (vf, V_*), GEMM tile and block sizes, NAME(): VW = 16 or 8. */

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
/* V_SCALE(k) = 2^n for k = ROUND + n (n an integer), made from k's bits; ROUND_BITS is in kernels_gates.h. */
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
/* V_SCALE(k) = 2^n for k = ROUND + n (n an integer), made from k's bits; ROUND_BITS is in kernels_gates.h. */
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
