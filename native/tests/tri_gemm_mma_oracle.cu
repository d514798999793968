// The mma.sync triangle GEMM (mma.sync m16n8k16, cp.async, 128x256x64 tiles), stage 2 of the
// library until 2026-12-01, when the wgmma + TMA kernel (now src/stage2_tri_gemm.cu) replaced it on
// every path (1.8-2.1x on the H200). It lives on here only as the independent oracle of
// tri_gemm_wgmma_test: a second implementation of the same contract, compared value for value.
// Stage 2: the triangle GEMM, one N x N x N product per (batch, channel), fp32 accumulate.
//   outgoing: Z_c = A_c B_c^T with A_c[i][k] = a[i,k,c], B_c[j][k] = b[j,k,c]  (both K-contiguous)
//   incoming: Z_c = A_c^T B_c with A_c[k][i] = a[k,i,c], B_c[k][j] = b[k,j,c]  (both M/N-contiguous)
// Stage 1 stores a and b the same way for both directions ([c][row][col]); the incoming kernel
// reads its operands M/N-major and transposes them on the way into registers (ldmatrix.trans),
// so no transposed store is ever needed.
// Tiles: 128 x 256 x 64, 8 warps (2 x 4, 64 x 64 each), 4-stage cp.async pipeline, XOR-swizzled
// shared memory (conflict-free for cp.async stores and ldmatrix loads), mma.sync m16n8k16 bf16.
// The grid is (tiles of one channel, B*D channels); tiles of a channel are visited in groups of
// 8 M-tiles so the A and B panels in flight stay in L2.
// z is stored channel-major bf16 ([c][i][j], rows of N valid columns, stride Np): each warp
// writes whole 16-byte runs, and stage 3 reads 128 consecutive tokens of a channel at a time.
// Under CP the same epilogue writes each token's z into the plane of the rank owning the token
// (ZTarget): the second all-to-all (channel -> token) fused into the store.
#include "common.cuh"
#include "mma_oracles.h"
#include "trimul_internal.h"

namespace foldcp {
namespace tg {
constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, THREADS = 256;
constexpr int A_BYTES = BM * BK * 2;  // 16 KiB
constexpr int B_BYTES = BN * BK * 2;  // 32 KiB
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int SMEM = STAGES * STAGE_BYTES;  // 192 KiB
constexpr int GROUP_M = 8;
}  // namespace tg

template <bool KMAJOR>
__global__ void __launch_bounds__(tg::THREADS, 1)
    tri_gemm_kernel(const bf16* __restrict__ A, const bf16* __restrict__ B, const __grid_constant__ ZTarget zt, int Np,
                    int tilesM, int tilesN, long long sab) {
  using namespace tg;
  extern __shared__ __align__(128) uint8_t smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp >> 2;  // 0..1 : 64 rows each
  const int wn = warp & 3;   // 0..3 : 64 cols each

  // grouped tile order within the channel
  const int t = blockIdx.x;
  const int per_group = GROUP_M * tilesN;
  const int group = t / per_group;
  const int first_m = group * GROUP_M;
  const int gsz = min(tilesM - first_m, GROUP_M);
  const int rem = t - group * per_group;
  const int m0 = (first_m + rem % gsz) * BM;
  const int n0 = (rem / gsz) * BN;

  const size_t chan = blockIdx.y;
  const bf16* Ac = A + chan * (size_t)sab;
  const bf16* Bc = B + chan * (size_t)sab;
  const int zb = (int)(chan / zt.dloc), zcl = (int)(chan % zt.dloc);  // batch, local channel
  const uint32_t sbase = smem_u32(smem);
  const int KT = Np / BK;

  // ---- per-thread load descriptors (fixed over k) ----
  const bf16* ga;
  const bf16* gb;
  uint32_t sa_off, sb_off;  // swizzled smem offset of this thread's first chunk
  size_t ga_step, gb_step;  // global element step per r
  size_t g_kstep;           // global element step per k-tile
  bool b_ok[8];
  if constexpr (KMAJOR) {
    const int row = tid >> 3, ch = tid & 7;
    ga = Ac + (size_t)(m0 + row) * Np + ch * 8;
    gb = Bc + (size_t)(n0 + row) * Np + ch * 8;
    sa_off = row * 128 + ((ch ^ (row & 7)) << 4);
    sb_off = sa_off;
    ga_step = (size_t)32 * Np;
    gb_step = (size_t)32 * Np;
    g_kstep = BK;
#pragma unroll
    for (int r = 0; r < 8; ++r) b_ok[r] = (n0 + row + 32 * r) < Np;
  } else {
    const int arow = tid >> 4, ach = tid & 15;  // A: 64 k-rows x 16 chunks
    const int brow = tid >> 5, bch = tid & 31;  // B: 64 k-rows x 32 chunks
    ga = Ac + (size_t)arow * Np + m0 + ach * 8;
    gb = Bc + (size_t)brow * Np + n0 + bch * 8;
    sa_off = arow * 256 + (((ach & 8) | ((ach ^ arow) & 7)) << 4);
    sb_off = brow * 512 + (((bch & 24) | ((bch ^ brow) & 7)) << 4);
    ga_step = (size_t)16 * Np;
    gb_step = (size_t)8 * Np;
    g_kstep = (size_t)BK * Np;
    const bool ok = (n0 + bch * 8) < Np;
#pragma unroll
    for (int r = 0; r < 8; ++r) b_ok[r] = ok;
  }

  auto load_tile = [&](int slot, int kt) {
    const uint32_t sA = sbase + slot * STAGE_BYTES;
    const uint32_t sB = sA + A_BYTES;
    const bf16* pa = ga + (size_t)kt * g_kstep;
    const bf16* pb = gb + (size_t)kt * g_kstep;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      // K-major: rows +32r (128 B each); MN-major: k-rows +16r (256 B each)
      cp_async16(sA + sa_off + r * 4096, pa + r * ga_step, true);
    }
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      // K-major: rows +32r (128 B each); MN-major: k-rows +8r (512 B each)
      cp_async16(sB + sb_off + r * 4096, b_ok[r] ? (const void*)(pb + r * gb_step) : (const void*)Bc, b_ok[r]);
    }
  };

  float acc[4][8][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) load_tile(s, s);
    cp_async_commit();
  }

  const int l7 = lane & 7;
  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    {
      const int nk = kt + STAGES - 1;
      if (nk < KT) load_tile(nk % STAGES, nk);
      cp_async_commit();
    }
    const uint32_t sA = sbase + (kt % STAGES) * STAGE_BYTES;
    const uint32_t sB = sA + A_BYTES;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      uint32_t af[4][4];
      uint32_t bfr[8][2];
      if constexpr (KMAJOR) {
#pragma unroll
        for (int mt = 0; mt < 4; ++mt) {
          const int row = wm * 64 + mt * 16 + (lane & 15);
          const int ch = kk * 2 + (lane >> 4);
          ldsm_x4(af[mt], sA + row * 128 + ((ch ^ l7) << 4));
        }
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const int row = wn * 64 + p * 16 + l7 + ((lane >> 4) << 3);
          const int ch = kk * 2 + ((lane >> 3) & 1);
          uint32_t r[4];
          ldsm_x4(r, sB + row * 128 + ((ch ^ l7) << 4));
          bfr[2 * p][0] = r[0];
          bfr[2 * p][1] = r[1];
          bfr[2 * p + 1][0] = r[2];
          bfr[2 * p + 1][1] = r[3];
        }
      } else {
        const int krowA = kk * 16 + l7 + ((lane >> 4) << 3);
#pragma unroll
        for (int mt = 0; mt < 4; ++mt) {
          const int ch = wm * 8 + mt * 2 + ((lane >> 3) & 1);
          ldsm_x4_t(af[mt], sA + krowA * 256 + (((ch & 8) | ((ch ^ l7) & 7)) << 4));
        }
        const int krowB = kk * 16 + l7 + (((lane >> 3) & 1) << 3);
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const int ch = wn * 8 + p * 2 + (lane >> 4);
          uint32_t r[4];
          ldsm_x4_t(r, sB + krowB * 512 + (((ch & 24) | ((ch ^ l7) & 7)) << 4));
          bfr[2 * p][0] = r[0];
          bfr[2 * p][1] = r[1];
          bfr[2 * p + 1][0] = r[2];
          bfr[2 * p + 1][1] = r[3];
        }
      }
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) mma_bf16(acc[mt][nt], af[mt], bfr[nt][0], bfr[nt][1]);
    }
  }
  cp_async_wait<0>();

  // ---- epilogue: z rounded to bf16, channel-major rows, each token to the rank that owns it ----
  // Tile columns are even (a multiple of 8 under CP), so a column pair never straddles two ranks.
  const int g = lane >> 2, t4 = lane & 3;
  const int N = zt.n_store;
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + wm * 64 + mt * 16 + g + 8 * h;
      if (row < N) {
        const int rg = row / zt.tile_rows;
        const int rl = row - rg * zt.tile_rows;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
          const int col = n0 + wn * 64 + nt * 8 + 2 * t4;
          if (col < N) {
            const int cg = col / zt.tile_cols;
            const int o = rg * zt.grid_cols + cg;
            bf16_raw* zr = zt.z[o] + ((int64_t)zb * zt.chans[o] + zt.chan0[o] + zcl) * zt.plane[o] +
                           (int64_t)rl * zt.ld[o] + (col - cg * zt.tile_cols);
            if (col + 1 < N) {
              *reinterpret_cast<uint32_t*>(zr) = pack_bf16x2(acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1]);
            } else {
              zr[0] = bf16_bits(acc[mt][nt][2 * h]);
            }
          }
        }
      }
    }
  }
}

// The oracle's launch (same arguments and output as launch_tri_gemm_to).
cudaError_t launch_tri_gemm_mma_to(const DevLayer& L, const void* a_ws, const void* b_ws, int64_t np, int64_t sab,
                                   const ZTarget& t, int64_t B, cudaStream_t s) {
  const int tilesM = (int)(np / tg::BM);
  const int tilesN = (int)((np + tg::BN - 1) / tg::BN);
  dim3 grid(tilesM * tilesN, (unsigned)(B * t.dloc));
  const bf16* a = static_cast<const bf16*>(a_ws);
  const bf16* b = static_cast<const bf16*>(b_ws);
  if (L.direction == 0)
    tri_gemm_kernel<true><<<grid, tg::THREADS, tg::SMEM, s>>>(a, b, t, (int)np, tilesM, tilesN, sab);
  else
    tri_gemm_kernel<false><<<grid, tg::THREADS, tg::SMEM, s>>>(a, b, t, (int)np, tilesM, tilesN, sab);
  return cudaGetLastError();
}

cudaError_t prepare_tri_gemm_mma() {
  cudaError_t e = cudaFuncSetAttribute(tri_gemm_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, tg::SMEM);
  if (e != cudaSuccess) return e;
  return cudaFuncSetAttribute(tri_gemm_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, tg::SMEM);
}

}  // namespace foldcp
