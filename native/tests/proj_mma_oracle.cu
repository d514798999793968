// The mma.sync projection kernels, stages 1 and 3 of the library until the wgmma + TMA kernels
// (src/stage1_proj_in.cu, src/stage3_proj_out.cu) replaced them on every path. They live on here
// only as the independent oracle of proj_wgmma_test: a second implementation of the same
// contracts (ProjInGeom / AbTarget, and the stage 3 tile), compared value for value.
// Stage 1 (LN_in + input projection + gates + mask, channel-major store of a and b) and
// stage 3 (LN_out + output projection + gate + bias + residual), both fused, templated on D.
// Both work on tiles of 128 consecutive tokens of one pair row (b, i, j0..j0+127), which are
// contiguous in x and in out, with 8 warps and mma.sync m16n8k16 bf16 tensor-core GEMMs whose
// operands sit in shared memory rows padded by 16 bytes (conflict-free ldmatrix for any D%16==0).
// Weights stream through a double-buffered cp.async chunk while the previous chunk multiplies.
#include <algorithm>

#include "common.cuh"
#include "mma_oracles.h"
#include "trimul_internal.h"

namespace foldcp {

namespace {

constexpr int TOK = 128;
constexpr int THREADS = 256;

// Copies `rows` rows of D bf16 (global row stride D) into smem rows of stride LD elements;
// rows with !valid(row) are zero-filled.
template <int D, int LD, typename Valid>
__device__ __forceinline__ void load_rows(uint32_t sdst, const bf16* src, int rows, Valid valid, int tid) {
  constexpr int CPR = D / 8;  // 16-byte chunks per row
  const int total = rows * CPR;
  for (int q = tid; q < total; q += THREADS) {
    const int r = q / CPR, c = q - r * CPR;
    const bool ok = valid(r);
    cp_async16(sdst + (uint32_t)(r * LD + c * 8) * 2u, ok ? (const void*)(src + (size_t)r * D + c * 8) : (const void*)src,
               ok);
  }
}

// LayerNorm (two-pass, fp32) of rows [row0, row0 + nrows) of a bf16 smem tile, in place, by one
// warp; R rows at a time so that their shuffle reductions overlap. nrows % R == 0.
template <int D, int LD>
__device__ __forceinline__ void layernorm_rows_smem(bf16* xs, int row0, int nrows, const float* __restrict__ w,
                                                    const float* __restrict__ bvec, float eps, int lane) {
  constexpr int E = D / 32;
  constexpr int R = 4;
  float gw[E], gb[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    gw[e] = __ldg(w + lane + 32 * e);
    gb[e] = __ldg(bvec + lane + 32 * e);
  }
  for (int r0 = row0; r0 < row0 + nrows; r0 += R) {
    float v[R][E];
    float s[R], q[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      s[r] = 0.f;
#pragma unroll
      for (int e = 0; e < E; ++e) {
        v[r][e] = __bfloat162float(xs[(r0 + r) * LD + lane + 32 * e]);
        s[r] += v[r][e];
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int r = 0; r < R; ++r) s[r] += __shfl_xor_sync(0xffffffffu, s[r], o);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      s[r] *= (1.0f / D);  // mean
      q[r] = 0.f;
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const float d = v[r][e] - s[r];
        q[r] += d * d;
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int r = 0; r < R; ++r) q[r] += __shfl_xor_sync(0xffffffffu, q[r], o);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float rstd = rsqrtf(q[r] * (1.0f / D) + eps);
#pragma unroll
      for (int e = 0; e < E; ++e)
        xs[(r0 + r) * LD + lane + 32 * e] = __float2bfloat16_rn((v[r][e] - s[r]) * rstd * gw[e] + gb[e]);
    }
  }
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Stage 1. grid (ceil(out_cols/128), out_rows, B); block = tokens (b, i, k0..k0+127) (ProjInGeom).
// Output: a[b][c][i][k], b[b][c][i][k] (bf16) in the plane of the rank owning channel c
// (AbTarget); zero for padded or masked tokens.
// W1 rows per group of 8 channels (32 rows): p_in[c], g_in[c], p_in[D+c], g_in[D+c].
// A chunk = 32 channels = 128 W1 rows; warps 2 (tokens, 64 each) x 4 (channel groups).
// ------------------------------------------------------------------------------------------
template <int D>
struct ProjInCfg {
  static constexpr int LD = D + 8;
  static constexpr int XS = TOK * LD * 2;
  static constexpr int WS = 128 * LD * 2;
  static constexpr int OLD = TOK + 8;
  static constexpr int OS = 64 * OLD * 2;
  static constexpr int SMEM = XS + 2 * WS + OS + TOK * 4;
  static constexpr int NCH = D / 32;
};

template <int D>
__global__ void __launch_bounds__(THREADS, 1)
    proj_in_kernel(const bf16* __restrict__ x, const uint8_t* __restrict__ mask, const bf16* __restrict__ W1,
                   const float* __restrict__ lnw, const float* __restrict__ lnb, const float* __restrict__ pin_b,
                   const float* __restrict__ gin_b, const __grid_constant__ ProjInGeom geo,
                   const __grid_constant__ AbTarget tgt, float eps) {
  using C = ProjInCfg<D>;
  extern __shared__ __align__(128) uint8_t smem[];
  bf16* xs = reinterpret_cast<bf16*>(smem);
  bf16* outs = reinterpret_cast<bf16*>(smem + C::XS + 2 * C::WS);
  float* ms = reinterpret_cast<float*>(smem + C::XS + 2 * C::WS + C::OS);
  const uint32_t s_x = smem_u32(xs);
  const uint32_t s_w = s_x + C::XS;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int k0 = blockIdx.x * TOK;
  const int i = blockIdx.y;
  const int b = blockIdx.z;
  const int64_t xr = geo.x_rows, xc = geo.x_cols;
  // 16-byte chunk `ch` (tokens k0 + 8ch ..) of channel c (0..D-1) of array ab (0 = a, 1 = b) goes
  // to the rank that owns channel c; chunks at or past store_cols are not stored (they would land
  // in the next tile's columns of the destination).
  const int nchunks = (int)min((int64_t)(TOK / 8), (geo.store_cols - k0 + 7) / 8);
  auto dst_of = [&](int ab, int c, int ch) -> bf16* {
    const int q = c / tgt.dloc, cl = c - q * tgt.dloc;
    bf16* base = reinterpret_cast<bf16*>(ab == 0 ? tgt.a[q] : tgt.b[q]);
    return base + ((int64_t)b * tgt.dloc + cl) * tgt.plane[q] + (tgt.row0[q] + i) * tgt.ld[q] + tgt.col0[q] + k0 + ch * 8;
  };

  bool any = false;
  if (tid < TOK) {
    const int k = k0 + tid;
    bool v = (i < xr) && (k < xc) && (geo.g_row0 + i < geo.n_valid) && (geo.g_col0 + k < geo.n_valid);
    if (v && mask != nullptr) v = mask[((size_t)b * xr + i) * xc + k] != 0;
    ms[tid] = v ? 1.f : 0.f;
    any = v;
  }
  if (!__syncthreads_or(any)) {
    // whole tile padded or masked: a = b = 0
    const uint4 zero = make_uint4(0, 0, 0, 0);
    for (int q = tid; q < 2 * D * (TOK / 8); q += THREADS) {
      const int row = q / (TOK / 8), ch = q % (TOK / 8);
      if (ch < nchunks) *reinterpret_cast<uint4*>(dst_of(row < D ? 0 : 1, row < D ? row : row - D, ch)) = zero;
    }
    return;
  }

  const bf16* xt = x + (((size_t)b * xr + i) * xc + k0) * D;
  const int kvalid = (int)min((int64_t)TOK, xc - k0);
  load_rows<D, C::LD>(s_x, xt, TOK, [&](int r) { return r < kvalid; }, tid);
  cp_async_commit();
  load_rows<D, C::LD>(s_w, W1, 128, [](int) { return true; }, tid);
  cp_async_commit();
  cp_async_wait<1>();
  __syncthreads();
  layernorm_rows_smem<D, C::LD>(xs, warp * 16, 16, lnw, lnb, eps, lane);

  const int wm = warp >> 2, wn = warp & 3;
  const int g = lane >> 2, t4 = lane & 3, l7 = lane & 7;

  for (int j = 0; j < C::NCH; ++j) {
    cp_async_wait<0>();
    __syncthreads();
    if (j + 1 < C::NCH) {
      load_rows<D, C::LD>(s_w + ((j + 1) & 1) * C::WS, W1 + (size_t)(j + 1) * 128 * D, 128, [](int) { return true; }, tid);
    }
    cp_async_commit();
    const uint32_t sW = s_w + (j & 1) * C::WS;

    float acc[4][4][4];
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int c = 0; c < 4; ++c)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[a][c][e] = 0.f;

#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t af[4][4];
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        const int row = wm * 64 + mt * 16 + (lane & 15);
        const int ch = kk * 2 + (lane >> 4);
        ldsm_x4(af[mt], s_x + (uint32_t)(row * C::LD + ch * 8) * 2u);
      }
      uint32_t bw[2][4];
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        const int row = wn * 32 + p * 16 + l7 + ((lane >> 4) << 3);
        const int ch = kk * 2 + ((lane >> 3) & 1);
        ldsm_x4(bw[p], sW + (uint32_t)(row * C::LD + ch * 8) * 2u);
      }
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        mma_bf16(acc[mt][0], af[mt], bw[0][0], bw[0][1]);  // p_a
        mma_bf16(acc[mt][1], af[mt], bw[0][2], bw[0][3]);  // g_a
        mma_bf16(acc[mt][2], af[mt], bw[1][0], bw[1][1]);  // p_b
        mma_bf16(acc[mt][3], af[mt], bw[1][2], bw[1][3]);  // g_b
      }
    }

    // epilogue: gates, biases, mask -> outs[ch_local (a: 0..31, b: 32..63)][token]
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int cl = wn * 8 + 2 * t4 + e;
      const int c = j * 32 + cl;
      const float bpa = __ldg(pin_b + c), bga = __ldg(gin_b + c);
      const float bpb = __ldg(pin_b + D + c), bgb = __ldg(gin_b + D + c);
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int tok = wm * 64 + mt * 16 + g + 8 * h;
          const bool valid = ms[tok] != 0.f;
          const float va = sigmoidf_fast(acc[mt][1][2 * h + e] + bga) * (acc[mt][0][2 * h + e] + bpa);
          const float vb = sigmoidf_fast(acc[mt][3][2 * h + e] + bgb) * (acc[mt][2][2 * h + e] + bpb);
          outs[cl * C::OLD + tok] = __float2bfloat16_rn(valid ? va : 0.f);
          outs[(32 + cl) * C::OLD + tok] = __float2bfloat16_rn(valid ? vb : 0.f);
        }
      }
    }
    __syncthreads();
    // coalesced store: 64 channel rows x 256 bytes
#pragma unroll
    for (int it = 0; it < (64 * TOK / 8) / THREADS; ++it) {
      const int q = tid + it * THREADS;
      const int row = q >> 4, ch = q & 15;
      const uint4 v = *reinterpret_cast<const uint4*>(outs + row * C::OLD + ch * 8);
      if (ch < nchunks) *reinterpret_cast<uint4*>(dst_of(row < 32 ? 0 : 1, j * 32 + (row & 31), ch)) = v;
    }
  }
}

// ------------------------------------------------------------------------------------------
// Stage 3. grid (ceil(cols/128), rows, B); block = tokens (b, i, j0..j0+127), j < cols stored;
// x and out are (B, rows, cols, D), z is (B, D) planes of rows x ldz floats (plane stride sz).
// out = sigmoid(xn g_out^T + bg) * (LN_out(z) p_out^T + bp) (+ x)
// W3 rows per group of 8 channels (16 rows): p_out[c], g_out[c].
// A chunk = 32 channels = 64 W3 rows; warps 4 (tokens, 32 each) x 2 (16 channels each).
// x may alias out: each token's x is read (smem copy at start, residual read in the epilogue by
// the thread that then writes the same two values) before it is overwritten.
// ------------------------------------------------------------------------------------------
template <int D>
struct ProjOutCfg {
  static constexpr int LD = D + 8;
  static constexpr int LZ = TOK * LD * 2;
  static constexpr int XS = TOK * LD * 2;
  static constexpr int WS = 64 * LD * 2;
  static constexpr int SMEM = LZ + XS + 2 * WS;
  static constexpr int NCH = D / 32;
  static constexpr int MIN_BLOCKS = (2 * SMEM <= 227 * 1024) ? 2 : 1;
};

template <int D>
__global__ void __launch_bounds__(THREADS, ProjOutCfg<D>::MIN_BLOCKS)
    proj_out_kernel(const bf16* x, const bf16_raw* __restrict__ z, const bf16* __restrict__ W3,
                    const float* __restrict__ lniw, const float* __restrict__ lnib, const float* __restrict__ lnow,
                    const float* __restrict__ lnob, const float* __restrict__ pout_b, const float* __restrict__ gout_b,
                    bf16* out, int rows, int cols, long long ldz, long long sz, float eps, int residual) {
  using C = ProjOutCfg<D>;
  extern __shared__ __align__(128) uint8_t smem[];
  bf16* lzs = reinterpret_cast<bf16*>(smem);
  bf16* xs = reinterpret_cast<bf16*>(smem + C::LZ);
  const uint32_t s_lz = smem_u32(lzs);
  const uint32_t s_x = s_lz + C::LZ;
  const uint32_t s_w = s_x + C::XS;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int j0 = blockIdx.x * TOK;
  const int i = blockIdx.y;
  const int b = blockIdx.z;
  const int jvalid = min(TOK, cols - j0);
  const size_t tok0 = ((size_t)b * rows + i) * cols + j0;  // token index of (b, i, j0)

  load_rows<D, C::LD>(s_x, x + tok0 * D, TOK, [&](int r) { return r < jvalid; }, tid);
  cp_async_commit();
  load_rows<D, C::LD>(s_w, W3, 64, [](int) { return true; }, tid);
  cp_async_commit();

  // ---- LN_out from channel-major bf16 z: thread = (token, half of the channel pairs) ----
  {
    const int tok = warp * 16 + (lane & 15);
    const int q = lane >> 4;
    const bool valid = tok < jvalid;
    const size_t cs = (size_t)sz;  // channel stride
    const bf16_raw* zp = z + (size_t)b * D * cs + (size_t)i * ldz + j0 + tok;
    float v[D / 2];
#pragma unroll
    for (int u = 0; u < D / 4; ++u) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = 4 * u + 2 * q + e;
        v[2 * u + e] = valid ? bf16_lo(__ldcs(zp + c * cs)) : 0.f;
      }
    }
    float s = 0.f;
#pragma unroll
    for (int u = 0; u < D / 2; ++u) s += v[u];
    s += __shfl_xor_sync(0xffffffffu, s, 16);
    const float mean = s * (1.0f / D);
    float sq = 0.f;
#pragma unroll
    for (int u = 0; u < D / 2; ++u) {
      const float d = v[u] - mean;
      sq += d * d;
    }
    sq += __shfl_xor_sync(0xffffffffu, sq, 16);
    const float rstd = rsqrtf(sq * (1.0f / D) + eps);
#pragma unroll
    for (int u = 0; u < D / 4; ++u) {
      const int c = 4 * u + 2 * q;
      const float y0 = (v[2 * u] - mean) * rstd * __ldg(lnow + c) + __ldg(lnob + c);
      const float y1 = (v[2 * u + 1] - mean) * rstd * __ldg(lnow + c + 1) + __ldg(lnob + c + 1);
      *reinterpret_cast<uint32_t*>(lzs + tok * C::LD + c) = pack_bf16x2(y0, y1);
    }
  }

  cp_async_wait<1>();
  __syncthreads();
  layernorm_rows_smem<D, C::LD>(xs, warp * 16, 16, lniw, lnib, eps, lane);

  const int wm = warp >> 1, wn = warp & 1;
  const int g = lane >> 2, t4 = lane & 3, l7 = lane & 7;

  for (int j = 0; j < C::NCH; ++j) {
    cp_async_wait<0>();
    __syncthreads();
    if (j + 1 < C::NCH) {
      load_rows<D, C::LD>(s_w + ((j + 1) & 1) * C::WS, W3 + (size_t)(j + 1) * 64 * D, 64, [](int) { return true; }, tid);
    }
    cp_async_commit();
    const uint32_t sW = s_w + (j & 1) * C::WS;

    float accp[2][2][4], accg[2][2][4];
#pragma unroll
    for (int a = 0; a < 2; ++a)
#pragma unroll
      for (int c = 0; c < 2; ++c)
#pragma unroll
        for (int e = 0; e < 4; ++e) accp[a][c][e] = accg[a][c][e] = 0.f;

#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t al[2][4], ax[2][4], bw[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        const int row = wm * 32 + mt * 16 + (lane & 15);
        const int ch = kk * 2 + (lane >> 4);
        const uint32_t off = (uint32_t)(row * C::LD + ch * 8) * 2u;
        ldsm_x4(al[mt], s_lz + off);
        ldsm_x4(ax[mt], s_x + off);
      }
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        const int row = wn * 32 + p * 16 + l7 + ((lane >> 4) << 3);
        const int ch = kk * 2 + ((lane >> 3) & 1);
        ldsm_x4(bw[p], sW + (uint32_t)(row * C::LD + ch * 8) * 2u);
      }
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
        for (int p = 0; p < 2; ++p) {
          mma_bf16(accp[mt][p], al[mt], bw[p][0], bw[p][1]);
          mma_bf16(accg[mt][p], ax[mt], bw[p][2], bw[p][3]);
        }
      }
    }

#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const int c = j * 32 + wn * 16 + p * 8 + 2 * t4;
      const float bp0 = __ldg(pout_b + c), bp1 = __ldg(pout_b + c + 1);
      const float bg0 = __ldg(gout_b + c), bg1 = __ldg(gout_b + c + 1);
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int tok = wm * 32 + mt * 16 + g + 8 * h;
          if (tok < jvalid) {
            float v0 = sigmoidf_fast(accg[mt][p][2 * h] + bg0) * (accp[mt][p][2 * h] + bp0);
            float v1 = sigmoidf_fast(accg[mt][p][2 * h + 1] + bg1) * (accp[mt][p][2 * h + 1] + bp1);
            const size_t o = (tok0 + tok) * D + c;
            if (residual) {
              const __nv_bfloat162 xr = *reinterpret_cast<const __nv_bfloat162*>(x + o);
              v0 += __low2float(xr);
              v1 += __high2float(xr);
            }
            *reinterpret_cast<uint32_t*>(out + o) = pack_bf16x2(v0, v1);
          }
        }
      }
    }
  }
}

template <int D>
static cudaError_t launch_in_t(const DevLayer& L, const void* x, const uint8_t* mask, const ProjInGeom& g,
                               const AbTarget& t, int64_t B, cudaStream_t s) {
  dim3 grid((unsigned)((g.out_cols + TOK - 1) / TOK), (unsigned)g.out_rows, (unsigned)B);
  proj_in_kernel<D><<<grid, THREADS, ProjInCfg<D>::SMEM, s>>>(
      static_cast<const bf16*>(x), mask, static_cast<const bf16*>(L.w_in), L.ln_in_w, L.ln_in_b, L.p_in_b, L.g_in_b,
      g, t, L.eps);
  return cudaGetLastError();
}

template <int D>
static cudaError_t launch_out_t(const DevLayer& L, const void* x, const bf16_raw* z, void* out, int64_t B, int64_t rows,
                                int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s) {
  dim3 grid((unsigned)((cols + TOK - 1) / TOK), (unsigned)rows, (unsigned)B);
  proj_out_kernel<D><<<grid, THREADS, ProjOutCfg<D>::SMEM, s>>>(
      static_cast<const bf16*>(x), z, static_cast<const bf16*>(L.w_out), L.ln_in_w, L.ln_in_b, L.ln_out_w, L.ln_out_b,
      L.p_out_b, L.g_out_b, static_cast<bf16*>(out), (int)rows, (int)cols, ldz, sz, L.eps, L.residual);
  return cudaGetLastError();
}

template <int D>
static cudaError_t prepare_t() {
  cudaError_t e = cudaFuncSetAttribute(proj_in_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, ProjInCfg<D>::SMEM);
  if (e != cudaSuccess) return e;
  return cudaFuncSetAttribute(proj_out_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, ProjOutCfg<D>::SMEM);
}

#define FOLDCP_FOR_EACH_D(X) X(32) X(64) X(96) X(128) X(160) X(192) X(224) X(256)

cudaError_t prepare_proj_mma(int dim) {
  switch (dim) {
#define CASE(d) \
  case d:       \
    return prepare_t<d>();
    FOLDCP_FOR_EACH_D(CASE)
#undef CASE
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_proj_in_mma_to(const DevLayer& L, const void* x, const uint8_t* mask, const ProjInGeom& g,
                                  const AbTarget& t, int64_t B, cudaStream_t s) {
  switch (L.dim) {
#define CASE(d) \
  case d:       \
    return launch_in_t<d>(L, x, mask, g, t, B, s);
    FOLDCP_FOR_EACH_D(CASE)
#undef CASE
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_proj_out_mma_tile(const DevLayer& L, const void* x, const bf16_raw* z, void* out, int64_t B,
                                     int64_t rows, int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s) {
  switch (L.dim) {
#define CASE(d) \
  case d:       \
    return launch_out_t<d>(L, x, z, out, B, rows, cols, ldz, sz, s);
    FOLDCP_FOR_EACH_D(CASE)
#undef CASE
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace foldcp
