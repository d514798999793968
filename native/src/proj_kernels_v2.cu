// Stage 1 and stage 3, version 2: the LayerNorm'd A operands (xn, LN_out(z)) never touch shared
// memory. Each warp owns 16 tokens; each thread loads its part of those tokens straight from
// global memory in mma.m16n8k16 A-fragment order (thread (g, t4) holds tokens g and g+8 and
// channels 16kk + 8q + 2t4 + {0,1}), reduces the LayerNorm statistics with two shuffles, and
// keeps the normalized bf16 fragments in registers for the whole GEMM. Only the weights stream
// through shared memory (64-row chunks, double-buffered with cp.async), so the CTA needs no
// barrier besides the weight pipeline and two CTAs fit on an SM where registers allow.
#include <algorithm>

#include "common.cuh"
#include "trimul_internal.h"

namespace foldcp {
namespace {

constexpr int TOK = 128;  // tokens per CTA (8 warps x 16)
constexpr int THREADS = 256;

template <int D, int LD>
__device__ __forceinline__ void load_w_rows(uint32_t sdst, const bf16* src, int rows, int tid) {
  constexpr int CPR = D / 8;
  const int total = rows * CPR;
  for (int q = tid; q < total; q += THREADS) {
    const int r = q / CPR, c = q - r * CPR;
    cp_async16(sdst + (uint32_t)(r * LD + c * 8) * 2u, src + (size_t)r * D + c * 8, true);
  }
}

__device__ __forceinline__ float2 unpack_bf16x2(uint32_t v) {
  __nv_bfloat162 h = *reinterpret_cast<__nv_bfloat162*>(&v);
  return __bfloat1622float2(h);
}

// Raw token-major bf16 rows in A-fragment order: f[kk][h + 2q] = x[row_h][16kk + 8q + 2t4 .. +1].
template <int D>
__device__ __forceinline__ void load_x_frags(uint32_t (&f)[D / 16][4], const bf16* x, size_t tok_g, bool v0, bool v1,
                                             int t4) {
  const uint32_t* p0 = reinterpret_cast<const uint32_t*>(x + tok_g * D) + t4;
  const uint32_t* p1 = reinterpret_cast<const uint32_t*>(x + (tok_g + 8) * D) + t4;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      f[kk][2 * q] = v0 ? p0[8 * kk + 4 * q] : 0u;
      f[kk][2 * q + 1] = v1 ? p1[8 * kk + 4 * q] : 0u;
    }
  }
}

// In-place LayerNorm (two-pass, fp32) of the two rows held in fragment order (see above).
template <int D>
__device__ __forceinline__ void ln_frags(uint32_t (&f)[D / 16][4], const float* __restrict__ w,
                                         const float* __restrict__ b, float eps, int t4) {
  float s[2] = {0.f, 0.f};
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 v = unpack_bf16x2(f[kk][j]);
      s[j & 1] += v.x + v.y;
    }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    s[h] += __shfl_xor_sync(0xffffffffu, s[h], 1);
    s[h] += __shfl_xor_sync(0xffffffffu, s[h], 2);
    s[h] *= (1.0f / D);
  }
  float q[2] = {0.f, 0.f};
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 v = unpack_bf16x2(f[kk][j]);
      const float a = v.x - s[j & 1], c = v.y - s[j & 1];
      q[j & 1] += a * a + c * c;
    }
  float r[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    q[h] += __shfl_xor_sync(0xffffffffu, q[h], 1);
    q[h] += __shfl_xor_sync(0xffffffffu, q[h], 2);
    r[h] = rsqrtf(q[h] * (1.0f / D) + eps);
  }
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = 16 * kk + 8 * (j >> 1) + 2 * t4;
      const float2 gw = __ldg(reinterpret_cast<const float2*>(w + c));
      const float2 gb = __ldg(reinterpret_cast<const float2*>(b + c));
      const float2 v = unpack_bf16x2(f[kk][j]);
      const int h = j & 1;
      f[kk][j] = pack_bf16x2((v.x - s[h]) * r[h] * gw.x + gb.x, (v.y - s[h]) * r[h] * gw.y + gb.y);
    }
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Stage 1 v2. grid (Np/128, Np, B); CTA = tokens (b, i, k0..k0+127), warp w = 16 of them.
// W1 (interleaved per 8 channels: p_a, g_a, p_b, g_b rows) streams in 64-row chunks
// (16 channels). Per chunk each warp stores a and b for its 16 tokens and 16 channels through a
// small per-warp staging tile as full 32-byte sectors ([c][i][k] rows).
// ------------------------------------------------------------------------------------------
template <int D>
struct In2Cfg {
  static constexpr int LD = D + 8;
  static constexpr int WS = 64 * LD * 2;
  static constexpr int STG_RS = 48;             // bytes per staging row (16 tokens + pad)
  static constexpr int STG = 32 * STG_RS;       // per warp
  static constexpr int SMEM = 2 * WS + 8 * STG;
  static constexpr int NCH = D / 16;
  static constexpr int MIN_BLOCKS = D <= 192 ? 2 : 1;  // 2 CTAs/SM need <= 128 registers
};

template <int D>
__global__ void __launch_bounds__(THREADS, In2Cfg<D>::MIN_BLOCKS)
    proj_in_v2_kernel(const bf16* __restrict__ x, const uint8_t* __restrict__ mask, const bf16* __restrict__ W1,
                      const float* __restrict__ lnw, const float* __restrict__ lnb, const float* __restrict__ pin_b,
                      const float* __restrict__ gin_b, bf16* __restrict__ a_ws, bf16* __restrict__ b_ws, int N, int Np,
                      long long sab, float eps) {
  using C = In2Cfg<D>;
  extern __shared__ __align__(128) uint8_t smem[];
  const uint32_t s_w = smem_u32(smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3, l7 = lane & 7;
  uint8_t* stg = smem + 2 * C::WS + warp * C::STG;

  const int k0 = blockIdx.x * TOK;
  const int i = blockIdx.y;
  const int b = blockIdx.z;
  const size_t plane = (size_t)sab;
  const size_t out_row = (size_t)i * Np + k0;
  const int kv = (i < N) ? min(TOK, N - k0) : 0;  // tokens of the tile inside the N x N grid
  const int r0 = warp * 16 + g, r1 = r0 + 8;
  const size_t mrow = ((size_t)b * N + i) * N + k0;
  bool v0 = r0 < kv, v1 = r1 < kv;
  if (mask != nullptr) {
    if (v0) v0 = mask[mrow + r0] != 0;
    if (v1) v1 = mask[mrow + r1] != 0;
  }
  if (!__syncthreads_or(v0 || v1)) {
    const uint4 zero = make_uint4(0, 0, 0, 0);
    for (int q = tid; q < 2 * D * (TOK / 8); q += THREADS) {
      const int row = q / (TOK / 8), ch = q % (TOK / 8);
      bf16* dst = (row < D ? a_ws + ((size_t)b * D + row) * plane : b_ws + ((size_t)b * D + row - D) * plane);
      *reinterpret_cast<uint4*>(dst + out_row + ch * 8) = zero;
    }
    return;
  }

  load_w_rows<D, C::LD>(s_w, W1, 64, tid);
  cp_async_commit();

  uint32_t xa[D / 16][4];
  load_x_frags<D>(xa, x, mrow + r0, v0, v1, t4);  // masked tokens load nothing (their a, b are 0)
  ln_frags<D>(xa, lnw, lnb, eps, t4);

  for (int j = 0; j < C::NCH; ++j) {
    cp_async_wait<0>();
    __syncthreads();
    if (j + 1 < C::NCH) load_w_rows<D, C::LD>(s_w + ((j + 1) & 1) * C::WS, W1 + (size_t)(j + 1) * 64 * D, 64, tid);
    cp_async_commit();
    const uint32_t sW = s_w + (j & 1) * C::WS;

#pragma unroll 1
    for (int grp = 0; grp < 2; ++grp) {  // one group of 8 channels (p_a, g_a, p_b, g_b) at a time
      float acc[4][4];
#pragma unroll
      for (int n = 0; n < 4; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[n][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int p = 0; p < 2; ++p) {
          uint32_t bw[4];
          const int row = grp * 32 + p * 16 + l7 + ((lane >> 4) << 3);
          ldsm_x4(bw, sW + (uint32_t)(row * C::LD + (kk * 2 + ((lane >> 3) & 1)) * 8) * 2u);
          mma_bf16(acc[2 * p], xa[kk], bw[0], bw[1]);
          mma_bf16(acc[2 * p + 1], xa[kk], bw[2], bw[3]);
        }
      }
      // n-tiles: 0 p_a, 1 g_a, 2 p_b, 3 g_b for channels j*16 + grp*8 + 0..7
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int cl = grp * 8 + 2 * t4 + e;
        const int c = j * 16 + cl;
        const float bpa = __ldg(pin_b + c), bga = __ldg(gin_b + c);
        const float bpb = __ldg(pin_b + D + c), bgb = __ldg(gin_b + D + c);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const bool v = h ? v1 : v0;
          const float va = sigmoidf_fast(acc[1][2 * h + e] + bga) * (acc[0][2 * h + e] + bpa);
          const float vb = sigmoidf_fast(acc[3][2 * h + e] + bgb) * (acc[2][2 * h + e] + bpb);
          const int tok = g + 8 * h;
          *reinterpret_cast<bf16*>(stg + cl * C::STG_RS + tok * 2) = __float2bfloat16_rn(v ? va : 0.f);
          *reinterpret_cast<bf16*>(stg + (16 + cl) * C::STG_RS + tok * 2) = __float2bfloat16_rn(v ? vb : 0.f);
        }
      }
    }
    __syncwarp();
    {
      const int row = lane;  // 0..15: a channels, 16..31: b channels
      bf16* dst = (row < 16 ? a_ws : b_ws) + ((size_t)b * D + j * 16 + (row & 15)) * plane + out_row + warp * 16;
      const uint4 u0 = *reinterpret_cast<const uint4*>(stg + row * C::STG_RS);
      const uint4 u1 = *reinterpret_cast<const uint4*>(stg + row * C::STG_RS + 16);
      reinterpret_cast<uint4*>(dst)[0] = u0;
      reinterpret_cast<uint4*>(dst)[1] = u1;
    }
    __syncwarp();
  }
}

// ------------------------------------------------------------------------------------------
// Stage 3 v2. grid (Np/128, N, B); CTA = tokens (b, i, j0..j0+127), warp w = 16 of them.
// lz = LN_out(z) from channel-major fp32 z and xn = LN_in(x), both in registers; W3
// (interleaved per 8 channels: p_out, g_out rows) streams in 64-row chunks (32 channels).
// x may alias out (in place): a thread reads x at (token, c, c+1) before it writes out there,
// and no other thread writes those bytes.
// ------------------------------------------------------------------------------------------
template <int D>
struct Out2Cfg {
  static constexpr int LD = D + 8;
  static constexpr int WS = 64 * LD * 2;
  static constexpr int SMEM = 2 * WS;
  static constexpr int NCH = D / 32;
  static constexpr int MIN_BLOCKS = D <= 128 ? 2 : 1;
};

template <int D>
__global__ void __launch_bounds__(THREADS, Out2Cfg<D>::MIN_BLOCKS)
    proj_out_v2_kernel(const bf16* x, const float* __restrict__ z, const bf16* __restrict__ W3,
                       const float* __restrict__ lniw, const float* __restrict__ lnib, const float* __restrict__ lnow,
                       const float* __restrict__ lnob, const float* __restrict__ pout_b,
                       const float* __restrict__ gout_b, bf16* out, int N, int Np, long long sz, float eps,
                       int residual) {
  using C = Out2Cfg<D>;
  extern __shared__ __align__(128) uint8_t smem[];
  const uint32_t s_w = smem_u32(smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3, l7 = lane & 7;
  const int j0 = blockIdx.x * TOK;
  const int i = blockIdx.y;
  const int b = blockIdx.z;
  const int jvalid = min(TOK, N - j0);
  const size_t tok0 = ((size_t)b * N + i) * N + j0;
  const int r0 = warp * 16 + g, r1 = r0 + 8;
  const bool v0 = r0 < jvalid, v1 = r1 < jvalid;

  load_w_rows<D, C::LD>(s_w, W3, 64, tid);
  cp_async_commit();

  // ---- lz = LN_out(z) in fragment order, from fp32 z[c][i][j] (exact two-pass statistics) ----
  uint32_t lz[D / 16][4];
  {
    const size_t cs = (size_t)sz;
    const float* zp = z + (size_t)b * D * cs + (size_t)i * Np + j0 + r0;
    float v[D / 16][4][2];  // [kk][h + 2q][e]
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int jq = 0; jq < 4; ++jq)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int h = jq & 1, q = jq >> 1;
          const int c = 16 * kk + 8 * q + 2 * t4 + e;
          v[kk][jq][e] = (h ? v1 : v0) ? __ldcs(zp + c * cs + 8 * h) : 0.f;
        }
    float s[2] = {0.f, 0.f};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int jq = 0; jq < 4; ++jq) s[jq & 1] += v[kk][jq][0] + v[kk][jq][1];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      s[h] += __shfl_xor_sync(0xffffffffu, s[h], 1);
      s[h] += __shfl_xor_sync(0xffffffffu, s[h], 2);
      s[h] *= (1.0f / D);
    }
    float qs[2] = {0.f, 0.f};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int jq = 0; jq < 4; ++jq)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float d = v[kk][jq][e] - s[jq & 1];
          qs[jq & 1] += d * d;
        }
    float r[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      qs[h] += __shfl_xor_sync(0xffffffffu, qs[h], 1);
      qs[h] += __shfl_xor_sync(0xffffffffu, qs[h], 2);
      r[h] = rsqrtf(qs[h] * (1.0f / D) + eps);
    }
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int jq = 0; jq < 4; ++jq) {
        const int h = jq & 1, q = jq >> 1;
        const int c = 16 * kk + 8 * q + 2 * t4;
        const float2 gw = __ldg(reinterpret_cast<const float2*>(lnow + c));
        const float2 gb = __ldg(reinterpret_cast<const float2*>(lnob + c));
        lz[kk][jq] = pack_bf16x2((v[kk][jq][0] - s[h]) * r[h] * gw.x + gb.x,
                                 (v[kk][jq][1] - s[h]) * r[h] * gw.y + gb.y);
      }
  }
  // keep the x loads below from being hoisted into the z phase (register pressure at D = 256)
  asm volatile("" ::: "memory");
  // ---- xn = LN_in(x) ----
  uint32_t xa[D / 16][4];
  load_x_frags<D>(xa, x, tok0 + r0, v0, v1, t4);
  ln_frags<D>(xa, lniw, lnib, eps, t4);

  for (int j = 0; j < C::NCH; ++j) {
    cp_async_wait<0>();
    __syncthreads();
    if (j + 1 < C::NCH) load_w_rows<D, C::LD>(s_w + ((j + 1) & 1) * C::WS, W3 + (size_t)(j + 1) * 64 * D, 64, tid);
    cp_async_commit();
    const uint32_t sW = s_w + (j & 1) * C::WS;

#pragma unroll 1
    for (int half = 0; half < 2; ++half) {  // two groups of 8 channels at a time: fewer live registers
      float accp[2][4], accg[2][4];
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) accp[n][e] = accg[n][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int gl = 0; gl < 2; ++gl) {
          uint32_t bw[4];
          const int row = (half * 2 + gl) * 16 + l7 + ((lane >> 4) << 3);
          ldsm_x4(bw, sW + (uint32_t)(row * C::LD + (kk * 2 + ((lane >> 3) & 1)) * 8) * 2u);
          mma_bf16(accp[gl], lz[kk], bw[0], bw[1]);
          mma_bf16(accg[gl], xa[kk], bw[2], bw[3]);
        }
      }
#pragma unroll
      for (int gl = 0; gl < 2; ++gl) {
        const int c = j * 32 + (half * 2 + gl) * 8 + 2 * t4;
        const float2 bp = __ldg(reinterpret_cast<const float2*>(pout_b + c));
        const float2 bg = __ldg(reinterpret_cast<const float2*>(gout_b + c));
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (h ? v1 : v0) {
            float o0 = sigmoidf_fast(accg[gl][2 * h] + bg.x) * (accp[gl][2 * h] + bp.x);
            float o1 = sigmoidf_fast(accg[gl][2 * h + 1] + bg.y) * (accp[gl][2 * h + 1] + bp.y);
            const size_t o = (tok0 + (h ? r1 : r0)) * D + c;
            if (residual) {
              const float2 xr = unpack_bf16x2(*reinterpret_cast<const uint32_t*>(x + o));
              o0 += xr.x;
              o1 += xr.y;
            }
            *reinterpret_cast<uint32_t*>(out + o) = pack_bf16x2(o0, o1);
          }
        }
      }
    }
  }
}

// ------------------------------------------------------------------------------------------
template <int D>
static cudaError_t launch_in2_t(const DevLayer& L, const void* x, const uint8_t* mask, void* a_ws, void* b_ws,
                                int64_t B, int64_t N, int64_t sab, cudaStream_t s) {
  const int np = (int)padded_n(N);
  dim3 grid(np / TOK, np, (unsigned)B);
  proj_in_v2_kernel<D><<<grid, THREADS, In2Cfg<D>::SMEM, s>>>(
      static_cast<const bf16*>(x), mask, static_cast<const bf16*>(L.w_in), L.ln_in_w, L.ln_in_b, L.p_in_b, L.g_in_b,
      static_cast<bf16*>(a_ws), static_cast<bf16*>(b_ws), (int)N, np, sab, L.eps);
  return cudaGetLastError();
}

template <int D>
static cudaError_t launch_out2_t(const DevLayer& L, const void* x, const float* z, void* out, int64_t B, int64_t N,
                                 int64_t sz, cudaStream_t s) {
  const int np = (int)padded_n(N);
  dim3 grid(np / TOK, (unsigned)N, (unsigned)B);
  proj_out_v2_kernel<D><<<grid, THREADS, Out2Cfg<D>::SMEM, s>>>(
      static_cast<const bf16*>(x), z, static_cast<const bf16*>(L.w_out), L.ln_in_w, L.ln_in_b, L.ln_out_w,
      L.ln_out_b, L.p_out_b, L.g_out_b, static_cast<bf16*>(out), (int)N, np, sz, L.eps, L.residual);
  return cudaGetLastError();
}

template <int D>
static cudaError_t prepare2_t() {
  cudaError_t e =
      cudaFuncSetAttribute(proj_in_v2_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, In2Cfg<D>::SMEM);
  if (e != cudaSuccess) return e;
  return cudaFuncSetAttribute(proj_out_v2_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, Out2Cfg<D>::SMEM);
}

#define FOLDCP_FOR_EACH_D2(X) X(32) X(64) X(96) X(128) X(160) X(192) X(224) X(256)

cudaError_t prepare_kernels_v2(int dim) {
  switch (dim) {
#define CASE(d) \
  case d:       \
    return prepare2_t<d>();
    FOLDCP_FOR_EACH_D2(CASE)
#undef CASE
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_proj_in_v2(const DevLayer& L, const void* x, const uint8_t* mask, void* a_ws, void* b_ws, int64_t B,
                              int64_t N, int64_t sab, cudaStream_t s) {
  switch (L.dim) {
#define CASE(d) \
  case d:       \
    return launch_in2_t<d>(L, x, mask, a_ws, b_ws, B, N, sab, s);
    FOLDCP_FOR_EACH_D2(CASE)
#undef CASE
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_proj_out_v2(const DevLayer& L, const void* x, const float* z, void* out, int64_t B, int64_t N,
                               int64_t sz, cudaStream_t s) {
  switch (L.dim) {
#define CASE(d) \
  case d:       \
    return launch_out2_t<d>(L, x, z, out, B, N, sz, s);
    FOLDCP_FOR_EACH_D2(CASE)
#undef CASE
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace foldcp
