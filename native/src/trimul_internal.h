// Internal interface between the host API (trimul_api.cu) and the kernel files, plus the
// workspace layout, which the tests also use to check each stage on its own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>

namespace foldcp {

// Tokens are padded to a multiple of this (masked, zero-valued) inside the workspace only.
constexpr int64_t kPad = 128;
inline int64_t padded_n(int64_t n) { return (n + kPad - 1) / kPad * kPad; }

// Workspace: a and b (bf16, [B][D] planes of Np x Np, a_ws[b][c][row][col] = a[b,row,col,c] for
// both directions; rows/cols >= N are zero), then z (fp32, channel-major [B][D] planes of N x Np:
// z[b][c][i][j], columns >= N unused). Plane strides sab / sz (elements) are padded by 256 bytes
// so that the B*D planes do not sit at power-of-two distances (DRAM partition camping); the
// environment variable FOLDCP_WS_PAD=0 turns the padding off (for measurements).
struct WsLayout {
  int64_t np;
  int64_t sab;  // elements between channel planes of a / b
  int64_t sz;   // floats between channel planes of z
  size_t a_off, b_off, z_off, total;
};
inline size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
bool ws_pad_enabled();
inline WsLayout ws_layout(int64_t B, int64_t N, int64_t D) {
  WsLayout l{};
  const bool pad = ws_pad_enabled();
  l.np = padded_n(N);
  l.sab = l.np * l.np + (pad ? 128 : 0);
  l.sz = N * l.np + (pad ? 64 : 0);
  const size_t ab = align_up((size_t)B * D * l.sab * 2, 256);
  const size_t z = align_up((size_t)B * D * l.sz * 4, 256);
  l.a_off = 0;
  l.b_off = ab;
  l.z_off = 2 * ab;
  l.total = 2 * ab + z;
  return l;
}

struct DevLayer {
  int dim;
  int direction;  // 0 outgoing, 1 incoming
  int residual;
  float eps;
  const void* w_in;   // bf16 [4D][D]: per group of 8 channels: p_a, g_a, p_b, g_b rows
  const void* w_out;  // bf16 [2D][D]: per group of 8 channels: p_out, g_out rows
  const float* ln_in_w;
  const float* ln_in_b;
  const float* ln_out_w;
  const float* ln_out_b;
  const float* p_in_b;   // 2D (zeros when absent)
  const float* g_in_b;   // 2D
  const float* p_out_b;  // D
  const float* g_out_b;  // D
};

// Each returns the launch error (cudaGetLastError) of its kernels.
cudaError_t prepare_kernels(int dim);  // raises dynamic shared-memory limits, once per process/device
cudaError_t launch_proj_in(const DevLayer& L, const void* x, const uint8_t* mask, void* a_ws, void* b_ws,
                           int64_t B, int64_t N, int64_t sab, cudaStream_t s);
cudaError_t launch_tri_gemm(const DevLayer& L, const void* a_ws, const void* b_ws, float* z, int64_t B,
                            int64_t N, int64_t sab, int64_t sz, cudaStream_t s);
cudaError_t launch_proj_out(const DevLayer& L, const void* x, const float* z, void* out, int64_t B, int64_t N,
                            int64_t sz, cudaStream_t s);
// Two versions of stages 1 and 3: v1 (LayerNorm'd tiles in shared memory, proj_kernels.cu) and
// v2 (A operands in registers, proj_kernels_v2.cu). Measured on one H200 (2026-11-29): stage 1 v1
// is faster at every D (39.5 vs 50.3 ms at 1x4096^2x256); stage 3 v2 is faster for D >= 192
// (38.9 vs 41.0 ms there) and v1 for D <= 128 (2.93 vs 2.99 ms at 1x2048^2x128). Default: the
// faster per stage; FOLDCP_PROJ=v1 or =v2 forces one version for both stages (comparisons).
bool proj_in_use_v2(int dim);
bool proj_out_use_v2(int dim);
cudaError_t prepare_kernels_v2(int dim);
cudaError_t launch_proj_in_v2(const DevLayer& L, const void* x, const uint8_t* mask, void* a_ws, void* b_ws,
                              int64_t B, int64_t N, int64_t sab, cudaStream_t s);
cudaError_t launch_proj_out_v2(const DevLayer& L, const void* x, const float* z, void* out, int64_t B, int64_t N,
                               int64_t sz, cudaStream_t s);
cudaError_t launch_f32_to_bf16(const float* src, void* dst, size_t n, cudaStream_t s);

}  // namespace foldcp

// For tests: where a forward of (B, N, D) leaves its intermediates in `workspace`.
extern "C" int foldcp_trimul_debug_workspace(int64_t B, int64_t N, int64_t D, void* workspace, void** a_ws,
                                             void** b_ws, float** z_ws, int64_t* np, int64_t* sab, int64_t* sz);
