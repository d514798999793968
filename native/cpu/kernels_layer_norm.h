/* LayerNorm over the channels of each token, from bf16 or fp32 (Stages.layerNorm, term by term). */

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
