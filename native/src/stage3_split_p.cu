// Stage 3 of a split pair, first kernel (stage3_split.cuh): p = LN_out(z) p_out^T + b_p into pbuf.
// One translation unit per kernel of the pair, so that the 16 instantiations of each compile in
// parallel.
#include "stage3_split.cuh"

namespace foldcp {
namespace {

template <int H>
cudaError_t launch_p_t(const DevLayer& L, const bf16_raw* z, void* pbuf, int64_t B, int64_t rows, int64_t cols,
                       int64_t ldz, int64_t sz, cudaStream_t s) {
  using C = split::PCfg<H>;
  const int64_t tiles_k = (cols + proj::TOK - 1) / proj::TOK;
  const int64_t total = B * rows * tiles_k;
  if (!out_args_ok(L, pbuf, z, pbuf, B, rows, cols, ldz, sz, total)) return cudaErrorInvalidValue;
  // p_out: the first D rows of W3 ([D][H]: row c = output channel c), boxes of 64 k x 64 rows (rows
  // past D and columns past H zero-filled)
  CUtensorMap mw, mz{};
  cudaError_t e = encode_weights(&mw, L.w_out, H, L.dim, split::kRows);
  if (e != cudaSuccess) return e;
  // z by TMA where its rows are 16-byte aligned; else LN_out loads it from global memory.
  const int z_tma = encode_z_rows(&mz, z, H, B, rows, cols, ldz, sz);
  return launch_persistent<split::proj_out_p_kernel<H>>(C::SMEM, total, s, mw, mz, static_cast<bf16*>(pbuf), z,
                                                        L.ln_out_w, L.ln_out_b, L.p_out_b, L.dim, (int)rows,
                                                        (int)cols, (long long)ldz, (long long)sz, L.eps, z_tma,
                                                        (int)tiles_k, (int)total);
}

}  // namespace

cudaError_t launch_split_p(const DevLayer& L, const bf16_raw* z, void* pbuf, int64_t B, int64_t rows, int64_t cols,
                           int64_t ldz, int64_t sz, cudaStream_t s) {
  return with_dim(L.hidden,
                  [&](auto h) { return launch_p_t<decltype(h)::value>(L, z, pbuf, B, rows, cols, ldz, sz, s); });
}

cudaError_t prepare_split_p(int hidden) {
  return with_dim(hidden, [](auto h) {
    constexpr int H = decltype(h)::value;
    return prepare_on_current_device<split::proj_out_p_kernel<H>>(split::PCfg<H>::SMEM);
  });
}

}  // namespace foldcp
