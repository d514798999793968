/* One instruction-set variant of the CPU backend's kernels (kernels_impl.h documents them). */
#ifndef FOLDCP_CPU_KERNELS_H
#define FOLDCP_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

struct foldcp_cpu_kernels {
  const char *name;
  int mr; /* register tile of the GEMM: mr x nr */
  int nr;
  /* C (m x n, row stride ldc) = (accumulate ? C : 0) + A B with A(i,p) = ta ? a[p*lda+i] : a[i*lda+p]
   * and B(p,j) = tb ? b[j*ldb+p] : b[p*ldb+j]. */
  void (*gemm)(int ta, int tb, int m, int n, int k, const float *a, long lda, const float *b, long ldb, float *c,
               long ldc, int accumulate);
  /* out[j*d + c] = LayerNorm over c of bf16 x[j*d + c], j < cols. */
  void (*layer_norm_bf16)(const uint16_t *x, int cols, int d, const float *w, const float *bias, float eps,
                          float *out);
  void (*layer_norm_f32)(const float *x, int cols, int d, const float *w, const float *bias, float eps, float *out);
  void (*gate_projection)(const float *proj, int cc, int cols, const float *bias4, const uint8_t *mask, float *a,
                          float *b);
  void (*gate_output)(const float *po, const float *go, int cols, int d, const float *pb, const float *gb,
                      const uint16_t *x, int residual, uint16_t *out);
  /* iters rounds of 12 independent vector FMA chains; returns the flops done. */
  double (*fma_chains)(long iters);
};

extern const struct foldcp_cpu_kernels foldcp_cpu_kernels_avx512;
extern const struct foldcp_cpu_kernels foldcp_cpu_kernels_avx2;

/* copy_avx2.c: n bytes with non-temporal stores (AVX2), fenced; for large copies whose
 * destination the CPU does not read soon. */
void foldcp_copy_stream_avx2(void *dst, const void *src, size_t n);

#endif
