/* bf16 <-> fp32 conversions, scalar and vector (Bf16.java's rounding), for LayerNorm's input and the gates' output. */

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
