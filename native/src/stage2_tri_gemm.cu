// Stage 2 of the TriMul layer, the triangle GEMM: one N x N x Np product per (batch, channel)
// plane of the channel-major a and b, fp32 accumulate, z rounded once to bf16 and stored through
// a ZTarget (one GPU: this workspace's z; under context parallelism each token's z goes straight
// to the rank that owns the token: the channel -> token layout change rides the stores).
// On Hopper's asynchronous tensor-core path: TMA loads into 128B-swizzled shared memory, an
// mbarrier pipeline, warp specialization and wgmma.mma_async m64n256k16 (bf16 in, fp32
// accumulate). tests/tri_gemm_mma_oracle.cu is an independent mma.sync kernel of the same
// contract, the oracle of tri_gemm_wgmma_test (equal up to the fp32 summation order).
//   outgoing (direction 0): Z_c = A_c B_c^T, A_c[i][k] = a[c][i][k], B_c[j][k] = b[c][j][k]
//                           both operands K-major (K contiguous in memory)
//   incoming (direction 1): Z_c = A_c^T B_c, A_c[k][i] = a[c][k][i], B_c[k][j] = b[c][k][j]
//                           both operands M/N-major: wgmma reads them transposed (tnspA/tnspB)
//
// CTA: 384 threads = 3 warpgroups, 1 CTA per SM (192 KiB of pipeline buffers + 16 KiB of
// epilogue staging), persistent.
//   warpgroup 0: producer. One thread issues the TMA loads of every k-block of every tile this
//                CTA owns, STAGES k-blocks ahead of the consumers. Its warpgroup gives registers
//                back (setmaxnreg.dec to 40) so that the consumers can have 232.
//   warpgroups 1, 2: consumers. Tile 128 x 256, each consumer owns 64 rows x 256 columns: one
//                wgmma m64n256k16 per 16 of K, 128 fp32 accumulators per thread. After the last
//                k-block of a tile each warp stages its 16 x 256 block of z through 2 KiB of shared
//                memory (stmatrix) and stores whole 128-byte rows, while the producer already
//                loads the next tile's first k-blocks.
// Pipeline: STAGES = 4 slots of (A 128 x 64, B 256 x 64) bf16 = 48 KiB. Per slot s two mbarriers:
//   full[s]  (count 1): the producer's arrive.expect_tx(48 KiB) + the TMA's complete_tx bytes.
//   empty[s] (count 8): one arrive per consumer warp once its wgmmas reading slot s are complete.
// Both sides walk the same sequence of k-blocks (tile after tile), so slot = it % STAGES and
// phase = (it / STAGES) & 1 for the it-th k-block of this CTA; the producer waits for the empty
// barrier with the opposite parity (a fresh barrier's "previous" phase counts as complete, so its
// first STAGES waits return at once).
// Tile order: tile t of the CTA's sequence (blockIdx.x, + gridDim.x, ...) is plane t / tilesPerPlane
// and, inside the plane, the same grouped order as the mma.sync oracle (8 M-tiles per group), so the CTAs
// working at the same time share A and B panels in L2.
#include <cstdint>

#include "common.cuh"
#include "trimul_internal.h"
#include "wgmma_common.cuh"

namespace foldcp {
namespace tgw {
constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4;
constexpr int CONSUMERS = wgcta::CONSUMERS;     // consumer warpgroups, 64 rows of the tile each
constexpr int THREADS = wgcta::THREADS;         // 384
constexpr int A_BYTES = BM * BK * 2;            // 16 KiB
constexpr int B_BYTES = BN * BK * 2;            // 32 KiB
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;  // 48 KiB: the expect_tx count of one k-block
// Epilogue staging: per consumer warp 16 rows x 64 columns of bf16 z (2 KiB), one column quarter
// of its 16 x 256 accumulator block at a time.
constexpr int OUT_WARP_BYTES = 16 * 64 * 2;
constexpr int OUT_BYTES = CONSUMERS * 4 * OUT_WARP_BYTES;                  // 16 KiB
constexpr int SMEM = STAGES * STAGE_BYTES + OUT_BYTES + 1024;  // + slack to align the buffers to 1024 B
constexpr int GROUP_M = 8;
constexpr int PRODUCER_REGS = wgcta::PRODUCER_REGS, CONSUMER_REGS = wgcta::CONSUMER_REGS;
// Box of one TMA load: K-major operands: 64 (K, 128 bytes: the swizzle span) x rows;
// MN-major operands: 64 (M or N, 128 bytes) x 64 (K) per load, 2 loads for A, 4 for B.
constexpr int MN_BOX_BYTES = 64 * 64 * 2;  // 8 KiB
static_assert(STAGE_BYTES < (1 << 20), "mbarrier tx-count is 20 bits");
static_assert(SMEM <= 227 * 1024, "over the sm_90 dynamic shared-memory limit");
}  // namespace tgw

namespace {

// Tile t of all planes: plane, then grouped order inside the plane (as the mma.sync oracle).
struct TileXY {
  int plane, m0, n0;
};
__device__ __forceinline__ TileXY tile_xy(int t, int tilesM, int tilesN) {
  using namespace tgw;
  const int tpp = tilesM * tilesN;
  TileXY r;
  r.plane = t / tpp;
  const int in = t - r.plane * tpp;
  const int per_group = GROUP_M * tilesN;
  const int group = in / per_group;
  const int first_m = group * GROUP_M;
  const int gsz = min(tilesM - first_m, GROUP_M);
  const int rem = in - group * per_group;
  r.m0 = (first_m + rem % gsz) * BM;
  r.n0 = (rem / gsz) * BN;
  return r;
}

}  // namespace

// KMAJOR: outgoing (both operands K-major); else incoming (both M/N-major).
// ZTMA: the epilogue's store route (see the launch): TMA stores through tmZ, or 16-byte stores per
// lane to the ZTarget's owners (tmZ unused). Two instantiations, so that neither route's registers
// weigh on the other (one kernel with both spilled 16 B).
// tmA / tmB: 3D maps (innermost: columns of the stored plane, then rows, then planes) over a_ws
// and b_ws, bf16, 128B swizzle; boxes as described at tgw::MN_BOX_BYTES.
template <bool KMAJOR, bool ZTMA>
__global__ void __launch_bounds__(tgw::THREADS, 1)
    tri_gemm_wgmma_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                          const __grid_constant__ CUtensorMap tmZ, const __grid_constant__ ZTarget zt,
                          int Np, int tilesM, int tilesN, int planes) {
  using namespace tgw;
  __shared__ __align__(8) uint64_t full_bar[STAGES];
  __shared__ __align__(8) uint64_t empty_bar[STAGES];
  extern __shared__ uint8_t smem_raw[];
  // 128B swizzle: TMA and wgmma both compute the XOR pattern from address bits 4-9, so every
  // operand tile must start on a 1024-byte boundary (then the descriptor base offset is 0).
  const uint32_t sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t full0 = smem_u32(&full_bar[0]);
  const uint32_t empty0 = smem_u32(&empty_bar[0]);

  const int wg = threadIdx.x >> 7;  // 0: producer, 1..CONSUMERS: consumers (warp-uniform)
  const int tid_wg = threadIdx.x & 127;

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, CONSUMERS * 4);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  const int KT = Np / BK;
  const int total = planes * tilesM * tilesN;

  if (wg == 0) {
    // ------------------------------------------------------------ producer warpgroup
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid_wg == 0) {
      tma_prefetch_map(&tmA);
      tma_prefetch_map(&tmB);
      int s = 0;
      uint32_t ph = 0;
      for (int t = blockIdx.x; t < total; t += gridDim.x) {
        const TileXY xy = tile_xy(t, tilesM, tilesN);
        for (int kt = 0; kt < KT; ++kt) {
          // Slot s is free once all 8 consumer warps released its previous use (parity ph ^ 1).
          mbar_wait(empty0 + 8 * s, ph ^ 1u);
          const uint32_t full = full0 + 8 * s;
          mbar_arrive_expect_tx(full, STAGE_BYTES);
          const uint32_t sA = sbase + s * STAGE_BYTES;
          const uint32_t sB = sA + A_BYTES;
          const int k0 = kt * BK;
          if constexpr (KMAJOR) {
            // A: rows m0..m0+127, k0..k0+63 -> 128 rows of 128 B; B: rows n0..n0+255 likewise.
            tma_load_3d(sA, &tmA, k0, xy.m0, xy.plane, full);
            tma_load_3d(sB, &tmB, k0, xy.n0, xy.plane, full);
          } else {
            // A: k-rows k0..k0+63 of columns m0 + 64h .. +63, each box 64 k-rows of 128 B.
#pragma unroll
            for (int h = 0; h < BM / 64; ++h) tma_load_3d(sA + h * MN_BOX_BYTES, &tmA, xy.m0 + 64 * h, k0, xy.plane, full);
#pragma unroll
            for (int h = 0; h < BN / 64; ++h) tma_load_3d(sB + h * MN_BOX_BYTES, &tmB, xy.n0 + 64 * h, k0, xy.plane, full);
          }
          if (++s == STAGES) {
            s = 0;
            ph ^= 1u;
          }
        }
      }
    }
    return;
  }

  // -------------------------------------------------------------- consumer warpgroups
  setmaxnreg_inc<CONSUMER_REGS>();
  const int cw = wg - 1;  // rows 64 cw .. 64 cw + 63 of the tile
  const int lane = tid_wg & 31, warp = tid_wg >> 5;
  // Descriptor strides (bytes):
  //  K-major, 128B swizzle: rows of 128 B (64 k), 8-row groups (the swizzle atom) SBO = 1024 B
  //    apart; the leading offset is unused (K of one wgmma, 32 B, stays inside the 128 B span):
  //    set to 16 B. The k16 step kk moves the start address by 32 B inside the swizzled row (the
  //    hardware applies the XOR to the final address, as TMA did when writing).
  //  M/N-major, 128B swizzle: k-rows of 128 B (64 m or n), 8-k-row groups SBO = 1024 B apart,
  //    64-wide M/N blocks (one TMA box each) LBO = 8 KiB apart. The k16 step moves the start
  //    address by 16 k-rows = 2048 B.
  constexpr uint32_t LBO = KMAJOR ? 16u : (uint32_t)MN_BOX_BYTES;
  constexpr uint32_t SBO = 1024u;
  constexpr uint32_t KSTEP = KMAJOR ? 32u : 2048u;  // bytes per 16 of K
  // This warpgroup's 64 rows of A start 8 KiB into the A tile in both layouts (64 rows x 128 B, or
  // the second 64-column box).
  constexpr uint32_t A_WG_OFF = 64u * 128u;

  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;  // defined values; each tile starts with scale-d = 0 anyway
  int s = 0;
  uint32_t ph = 0;
  const int N = zt.n_store;
  for (int t = blockIdx.x; t < total; t += gridDim.x) {
    const TileXY xy = tile_xy(t, tilesM, tilesN);
    int prev = 0;
    for (int kt = 0; kt < KT; ++kt) {
      mbar_wait(full0 + 8 * s, ph);
      const uint32_t sA = sbase + s * STAGE_BYTES + cw * A_WG_OFF;
      const uint32_t sB = sbase + s * STAGE_BYTES + A_BYTES;
      const uint64_t da = smem_desc(sA, LBO, SBO);
      const uint64_t db = smem_desc(sB, LBO, SBO);
      // Orders this thread's earlier accesses of acc (the previous tile's epilogue reads) before
      // the wgmmas that write it.
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        // The first k16 of a tile overwrites the accumulators (scale-d = 0): no zeroing needed.
        wgmma_m64n256k16<KMAJOR ? 0 : 1>(acc, da + (uint64_t)((kk * KSTEP) >> 4), db + (uint64_t)((kk * KSTEP) >> 4),
                                         (kt > 0 || kk > 0) ? 1 : 0);
      }
      wgmma_commit();
      if (kt > 0) {
        // Keep this k-block's group in flight; the previous one is complete: release its slot.
        wgmma_wait<1>();
        if (lane == 0) mbar_arrive(empty0 + 8 * prev);
      }
      prev = s;
      if (++s == STAGES) {
        s = 0;
        ph ^= 1u;
      }
    }
    wgmma_wait<0>();
    if (lane == 0) mbar_arrive(empty0 + 8 * prev);

    const int zb = xy.plane / zt.dloc, zcl = xy.plane - zb * zt.dloc;  // batch, local channel
    // ---- epilogue: z rounded to bf16, through this warp's 2 KiB of shared memory, so that the
    // global stores are whole 128-byte rows (16 bytes per lane) instead of 4-byte pieces
    // scattered over 8 rows per instruction. Per column quarter q (64 columns): 4 stmatrix x4
    // write the warp's 16 x 64 block (row r at r * 128 B, 16-byte chunk c at position c ^ (r % 8):
    // the 8 rows of one matrix hit 8 different bank groups), then each lane stores 4 chunks.
    const int rbase = xy.m0 + 64 * cw + 16 * warp;  // this warp's 16 rows
    if (xy.n0 < N && rbase < N) {                   // warp-uniform
      const uint32_t stg = sbase + STAGES * STAGE_BYTES + (uint32_t)((4 * cw + warp) * OUT_WARP_BYTES);
      const int mi = lane >> 3, rr = lane & 7;          // stmatrix: lane addresses row rr of matrix mi
      if constexpr (ZTMA) {
        // One local destination: the TMA unit stores the staged block, so the warp goes on to the
        // next tile's MMAs while z drains instead of waiting on its own global stores. 8 steps of
        // 8 rows x 64 columns (1 KiB: quarter st / 2, row half st % 2) alternate between the two
        // halves of the warp's 2 KiB; a half is rewritten only after the store issued from it two
        // steps before has read it. Rows and columns past n_store lie outside the map: not written.
        const int zplane = zb * zt.chans[0] + zt.chan0[0] + zcl;
#pragma unroll
        for (int st = 0; st < 8; ++st) {
          const int q = st >> 1, h = st & 1;
          const uint32_t buf = stg + (uint32_t)(h * 1024);
          if (lane == 0) bulk_wait_read<1>();
          __syncwarp();
#pragma unroll
          for (int m = 0; m < 2; ++m) {
            // matrices k = 0..3: rows 8 h .. 8 h + 7, column blocks 8 q + 4 m + k (16-byte chunk 4 m + k)
            uint32_t r[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
              const int jb = 8 * q + 4 * m + k;
              r[k] = pack_bf16x2(acc[4 * jb + 2 * h], acc[4 * jb + 2 * h + 1]);
            }
            stsm_x4(buf + (uint32_t)(rr * 128 + (((4 * m + mi) ^ rr) << 4)), r);
          }
          fence_proxy_async_smem();  // the stmatrix writes, before the TMA unit reads them
          __syncwarp();
          if (lane == 0) {
            tma_store_3d(&tmZ, buf, xy.n0 + 64 * q, rbase + 8 * h, zplane);
            bulk_commit();
          }
        }
        continue;
      }
      const uint32_t st_row = stg + (uint32_t)((rr + 8 * (mi & 1)) * 128);
      const bool one_dest = zt.grid_cols == 1 && zt.tile_rows >= N;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
#pragma unroll
        for (int jp = 0; jp < 4; ++jp) {
          // matrices: (rows 0-7, column block j), (rows 8-15, j), (0-7, j + 1), (8-15, j + 1)
          const int j = 8 * q + 2 * jp;
          const uint32_t r[4] = {pack_bf16x2(acc[4 * j], acc[4 * j + 1]), pack_bf16x2(acc[4 * j + 2], acc[4 * j + 3]),
                                 pack_bf16x2(acc[4 * j + 4], acc[4 * j + 5]),
                                 pack_bf16x2(acc[4 * j + 6], acc[4 * j + 7])};
          const int c = 2 * jp + (mi >> 1);
          stsm_x4(st_row + (uint32_t)((c ^ rr) << 4), r);
        }
        __syncwarp();
#pragma unroll
        for (int it = 0; it < 4; ++it) {
          const int r = (lane >> 3) + 4 * it, c = lane & 7;
          uint4 v;
          asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                       : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                       : "r"(stg + (uint32_t)(r * 128 + ((c ^ (r & 7)) << 4)))
                       : "memory");
          const int row = rbase + r, col = xy.n0 + 64 * q + 8 * c;
          if (row < N && col < N) {
            int o = 0, rl = row, cl = col;
            if (!one_dest) {
              // CP grid: the owner of (row, col). tile_cols is a multiple of 8, so the 8 columns of
              // a chunk have one owner.
              const int rg = row / zt.tile_rows, cg = col / zt.tile_cols;
              o = rg * zt.grid_cols + cg;
              rl = row - rg * zt.tile_rows;
              cl = col - cg * zt.tile_cols;
            }
            bf16_raw* zr = zt.z[o] + ((int64_t)zb * zt.chans[o] + zt.chan0[o] + zcl) * zt.plane[o] +
                           (int64_t)rl * zt.ld[o] + cl;
            if (col + 8 <= N) {
              *reinterpret_cast<uint4*>(zr) = v;
            } else {
#pragma unroll
              for (int e = 0; e < 7; ++e) {  // at most 7 columns are left (col + 8 > N)
                if (e < N - col) {
                  const uint32_t w = e < 2 ? v.x : e < 4 ? v.y : e < 6 ? v.z : v.w;
                  zr[e] = (bf16_raw)(w >> (16 * (e & 1)));
                }
              }
            }
          }
        }
        __syncwarp();  // all lanes read the quarter before the next one overwrites it
      }
    }
  }
  if (ZTMA && lane == 0) bulk_wait_all();  // the staging must outlive the stores reading it
}

// ------------------------------------------------------------------ host side
namespace {

// 3D bf16 map (encode_bf16) over `planes` planes of n x n elements (row stride ld, plane stride
// `plane` elements), box {box0 (innermost, 64 = 128 B), box1, 1}: a_ws and b_ws for the loads,
// and a one-destination z for the TMA-store epilogue (box 64 columns x 8 rows, the staging layout).
cudaError_t encode_planes(CUtensorMap* m, const void* base, int64_t n, int64_t ld, int64_t plane, int64_t planes,
                          uint32_t box0, uint32_t box1,
                          CUtensorMapL2promotion promo = CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
  const cuuint64_t dims[3] = {(cuuint64_t)n, (cuuint64_t)n, (cuuint64_t)planes};
  const cuuint64_t strides[2] = {(cuuint64_t)ld * 2, (cuuint64_t)plane * 2};  // bytes, dims 1 and 2
  const cuuint32_t box[3] = {box0, box1, 1};
  return encode_bf16(m, base, 3, dims, strides, box, promo);
}

// Whether p is memory of device dev (not a peer's, not the host's): the TMA-store epilogue is
// used only there. A failed query leaves no error behind and answers no.
bool on_device(const void* p, int dev) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice && a.device == dev;
}

template <bool KMAJOR, bool ZTMA>
cudaError_t launch_kernel(int dev, int grid, const CUtensorMap& ma, const CUtensorMap& mb, const CUtensorMap& mz,
                          const ZTarget& t, int np, int tilesM, int tilesN, int planes, cudaStream_t s) {
  const cudaError_t e = raise_smem_once<tri_gemm_wgmma_kernel<KMAJOR, ZTMA>>(tgw::SMEM, dev);
  if (e != cudaSuccess) return e;
  tri_gemm_wgmma_kernel<KMAJOR, ZTMA><<<grid, tgw::THREADS, tgw::SMEM, s>>>(ma, mb, mz, t, np, tilesM, tilesN, planes);
  return cudaSuccess;
}

}  // namespace

cudaError_t launch_tri_gemm_ctas(const DevLayer& L, const void* a_ws, const void* b_ws, int64_t np, int64_t sab,
                                 const ZTarget& t, int64_t B, cudaStream_t s, int max_ctas) {
  using namespace tgw;
  const int64_t planes = B * (int64_t)t.dloc;
  // What TMA and the tiling need: 16-byte aligned bases and strides, np a multiple of the M tile
  // (and so of BK), int coordinates.
  if (np <= 0 || np % BM != 0 || np > (1 << 20) || planes <= 0 || planes > (1ll << 30) || sab < np * np ||
      (sab * 2) % 16 != 0 || (reinterpret_cast<uintptr_t>(a_ws) & 15) != 0 ||
      (reinterpret_cast<uintptr_t>(b_ws) & 15) != 0 || t.n_store > np || t.tile_rows <= 0 || t.tile_cols <= 0)
    return cudaErrorInvalidValue;
  // The epilogue stores 8 columns (16 bytes) at a time: every destination row must start 16-byte
  // aligned, and a CP tile's columns must come in whole 8-column chunks.
  const int dests = t.grid_cols * ((t.n_store + t.tile_rows - 1) / t.tile_rows);
  if (dests > kMaxRanks || (dests > 1 && t.tile_cols % 8 != 0)) return cudaErrorInvalidValue;
  for (int o = 0; o < dests; ++o)
    if ((reinterpret_cast<uintptr_t>(t.z[o]) & 15) != 0 || t.ld[o] % 8 != 0 || t.plane[o] % 8 != 0)
      return cudaErrorInvalidValue;
  const int tilesM = (int)(np / BM);
  const int tilesN = (int)((np + BN - 1) / BN);
  const int64_t total = planes * tilesM * tilesN;
  if (total > 0x7fffffff) return cudaErrorInvalidValue;

  CUtensorMap ma, mb;
  const bool kmajor = L.direction == 0;
  // K-major: box 64 (K) x BM or BN rows. M/N-major: box 64 (M or N) x 64 (K).
  cudaError_t e = encode_planes(&ma, a_ws, np, np, sab, planes, 64, kmajor ? BM : 64);
  if (e != cudaSuccess) return e;
  e = encode_planes(&mb, b_ws, np, np, sab, planes, 64, kmajor ? BN : 64);
  if (e != cudaSuccess) return e;

  int dev = 0, sms = 0;
  e = sm_count(&dev, &sms);
  if (e != cudaSuccess) return e;
  int grid = (int)(total < sms ? total : sms);
  if (max_ctas > 0 && grid > max_ctas) grid = max_ctas;

  // The store route, from the target: one destination on this device with whole 16-byte row
  // ends -> TMA stores from the staging (tmZ); a CP grid of owners, a peer's memory, or n_store
  // % 8 != 0 -> 16-byte stores per lane. (The TMA unit writes a row's last 16-byte chunk whole,
  // past n_store: seen on the H200 at N = 1 and 777, 2026-12-01.)
  CUtensorMap mz{};
  const int z_tma = dests == 1 && t.n_store % 8 == 0 && on_device(t.z[0], dev) ? 1 : 0;
  if (z_tma) {
    e = encode_planes(&mz, t.z[0], t.n_store, t.ld[0], t.plane[0], B * (int64_t)t.chans[0], 64, 8,
                      CU_TENSOR_MAP_L2_PROMOTION_NONE);
    if (e != cudaSuccess) return e;
  }

  if (kmajor)
    e = z_tma ? launch_kernel<true, true>(dev, grid, ma, mb, mz, t, (int)np, tilesM, tilesN, (int)planes, s)
              : launch_kernel<true, false>(dev, grid, ma, mb, mz, t, (int)np, tilesM, tilesN, (int)planes, s);
  else
    e = z_tma ? launch_kernel<false, true>(dev, grid, ma, mb, mz, t, (int)np, tilesM, tilesN, (int)planes, s)
              : launch_kernel<false, false>(dev, grid, ma, mb, mz, t, (int)np, tilesM, tilesN, (int)planes, s);
  if (e != cudaSuccess) return e;
  return cudaGetLastError();
}

// One GPU: one destination (this workspace's z), every channel, tokens < N.
cudaError_t launch_tri_gemm(const DevLayer& L, const void* a_ws, const void* b_ws, bf16_raw* z, int64_t B, int64_t N,
                            int64_t sab, int64_t sz, int chan0, int chans, cudaStream_t s) {
  const int64_t np = padded_n(N);
  ZTarget t{};
  t.z[0] = z;
  t.ld[0] = np;
  t.plane[0] = sz;
  t.chans[0] = L.hidden;
  t.chan0[0] = chan0;
  t.tile_rows = t.tile_cols = (int)np;
  t.grid_cols = 1;
  t.dloc = chans;
  t.n_store = (int)N;
  return launch_tri_gemm_to(L, a_ws, b_ws, np, sab, t, B, s);
}

cudaError_t launch_tri_gemm_to(const DevLayer& L, const void* a_ws, const void* b_ws, int64_t np, int64_t sab,
                               const ZTarget& t, int64_t B, cudaStream_t s) {
  return launch_tri_gemm_ctas(L, a_ws, b_ws, np, sab, t, B, s, 0);
}

}  // namespace foldcp
