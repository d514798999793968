// Stage 3 of a split pair, second kernel (stage3_split.cuh): out = sigmoid(LN_in(x) g_out^T + b_g) *
// p (+ x), p from the first kernel's pbuf.
#include "stage3_split.cuh"

namespace foldcp {
namespace {

template <int D>
cudaError_t launch_g_t(const DevLayer& L, const void* x, const void* pbuf, void* out, int64_t B, int64_t rows,
                       int64_t cols, cudaStream_t s) {
  using C = split::GCfg<D>;
  const int64_t tiles_k = (cols + proj::TOK - 1) / proj::TOK;
  const int64_t total = B * rows * tiles_k;
  if (B <= 0 || rows <= 0 || cols <= 0 || total > INT_MAX || rows > INT_MAX || cols > INT_MAX ||
      !split_g_args_ok(L, x, pbuf, out))
    return cudaErrorInvalidValue;
  // x: (B, rows, cols, D) bf16 in boxes of 64 channels x 128 tokens; g_out: the D x D rows after
  // p_out's D x H in W3 (row c = output channel c), boxes of 64 k x 64 rows.
  CUtensorMap mx, mw;
  cudaError_t e = encode_tokens(&mx, x, D, cols, rows, B, proj::TOK);
  if (e != cudaSuccess) return e;
  e = encode_weights(&mw, static_cast<const bf16_raw*>(L.w_out) + (size_t)D * L.hidden, D, D, split::kRows);
  if (e != cudaSuccess) return e;
  return launch_persistent<split::proj_out_g_kernel<D>>(
      C::SMEM, total, s, mx, mw, static_cast<const bf16*>(x), static_cast<const bf16*>(pbuf), static_cast<bf16*>(out),
      L.ln_in_w, L.ln_in_b, L.g_out_b, (int)rows, (int)cols, L.eps, L.residual, (int)tiles_k, (int)total);
}

}  // namespace

bool split_g_args_ok(const DevLayer& L, const void* x, const void* pbuf, const void* out) {
  return ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(pbuf) | reinterpret_cast<uintptr_t>(out) |
           reinterpret_cast<uintptr_t>(L.w_out)) &
          15) == 0 &&
         pbuf != x;
}

cudaError_t launch_split_g(const DevLayer& L, const void* x, const void* pbuf, void* out, int64_t B, int64_t rows,
                           int64_t cols, cudaStream_t s) {
  return with_dim(L.dim, [&](auto d) { return launch_g_t<decltype(d)::value>(L, x, pbuf, out, B, rows, cols, s); });
}

cudaError_t prepare_split(int dim, int hidden) {
  cudaError_t e = prepare_split_p(hidden);
  if (e != cudaSuccess) return e;
  return with_dim(dim, [](auto d) {
    constexpr int D = decltype(d)::value;
    return prepare_on_current_device<split::proj_out_g_kernel<D>>(split::GCfg<D>::SMEM);
  });
}

}  // namespace foldcp
