// Stage 3 for the widest pairs: D or H above kWideOutMax (384), up to kMaxWidth (512), as two
// kernels with p in HBM between them (proj_out_split):
//   P (proj_out_p_kernel<H>):  p = LN_out(z) p_out^T + b_p, rounded to bf16, token-major into pbuf
//                              ((B, rows, cols, D), the layout of x and out);
//   G (proj_out_g_kernel<D>):  out = sigmoid(LN_in(x) g_out^T + b_g) * p (+ x).
// Why two: one kernel needs both A operands of a 128-token tile at once, LN_out(z) (128 KiB at
// H = 512) and LN_in(x) (D / 4 registers per thread, 128 at D = 512), beside the accumulators and
// a weight ring; the single wide kernel (stage3_wide.cuh) spilled 1.4 KB per thread at 512/512 and
// ran at 7x its floor there (native/NOTES-gpu.md). Apart, each kernel has one A operand (P: A_z in
// shared memory, SS wgmmas; G: LN_in(x) in registers, channels past 256 in shared memory as in
// stage 1) and one weight matrix, and its chunks are m64n64 (twice the output channels per B
// byte of the m64n32 chunks before). The price is p's round trip (2 N^2 D bf16: about 2 ms of
// HBM at (1,2048,512)), which up to 384 costs more than the wide kernel loses (trimul_internal.h:
// kWideOutMax), and p rounded to bf16 before the gate (relative 2^-9 on one factor; the
// layer's error against float64 stays far inside the 1e-2 contract: trimul_test).
// P is a template of H only, G of D only (D and H are runtime counts of chunks in the other): 32
// kernels cover every pair with a width above 384.
// Both keep the streaming kernels' plan (pipeline.cuh): 128-token tiles, two consumer warpgroups of
// 64 tokens taking turns on a shared weight ring of 64-row chunks (8 KiB k-block slots).
#pragma once
#include <climits>
#include <cstdint>

#include "common.cuh"
#include "pipeline.cuh"
#include "stage3_common.cuh"
#include "trimul_internal.h"
#include "wgmma_common.cuh"

namespace foldcp {
namespace split {

constexpr int kRows = 64;  // weight rows per chunk = output channels per chunk (an m64n64 wgmma's B)

// ---- P
// Besides the weight ring: A_z (the tile's LN_out(z)), LN_out w, b (H each) and b_p (up to
// kMaxWidth: D is a runtime value here). Weight slots: as many as fit, up to what the mbarrier
// array holds beside z's (2 per consumer warpgroup).
constexpr int p_extra(int H) { return proj::x_tile_bytes(H) + (2 * H + kMaxWidth) * 4; }
constexpr int p_max_stages() { return proj::stages_beside(proj::CONSUMERS); }
template <int H>
struct PCfg : ProjCfg<H, 0, p_extra(H), H, proj::KB_BYTES, kRows, p_max_stages()> {
  static constexpr int AZBYTES = proj::x_tile_bytes(H);
  static constexpr int KS_H = H / 16;
};

template <int H>
__global__ void __launch_bounds__(proj::THREADS, 1)
    proj_out_p_kernel(const __grid_constant__ CUtensorMap tmW, const __grid_constant__ CUtensorMap tmZ,
                      bf16* __restrict__ pbuf, const bf16_raw* __restrict__ z, const float* __restrict__ lnow,
                      const float* __restrict__ lnob, const float* __restrict__ pout_b, int D, int rows, int cols,
                      long long ldz, long long sz, float eps, int z_tma, int tiles_k, int total) {
  using namespace proj;
  using C = PCfg<H>;
  constexpr int RINGBARS = 2 * C::STAGES;  // the weight ring's full and empty, then z's
  static_assert((RINGBARS + 2 * CONSUMERS) * 8 <= STATIC_SMEM, "the mbarriers outgrow STATIC_SMEM");
  __shared__ __align__(8) uint64_t bars[RINGBARS + 2 * CONSUMERS];
  extern __shared__ uint8_t smem_raw[];
  uint8_t* sm;
  const uint32_t base = aligned_smem(smem_raw, &sm);
  const uint32_t s_az = base;              // LN_out(z) of the tile (by TMA: raw z first)
  const uint32_t s_w = s_az + C::AZBYTES;  // STAGES weight slots of 64 rows
  float* const v_lnow = reinterpret_cast<float*>(sm + C::AZBYTES + C::STAGES * C::W_SLOT);
  float* const v_lnob = v_lnow + H;
  float* const v_bp = v_lnob + H;
  for (int c = threadIdx.x; c < H; c += THREADS) {
    v_lnow[c] = lnow[c];
    v_lnob[c] = lnob[c];
  }
  for (int c = threadIdx.x; c < D; c += THREADS) v_bp[c] = pout_b[c];
  const RingBars rb = ring_bars<0, C::STAGES>(bars);
  const ZBars zb = z_bars(&bars[RINGBARS]);
  zb.init();
  init_ring_bars<0, C::STAGES>(rb);  // (its __syncthreads also publishes the vectors)

  const int wg = threadIdx.x >> 7;
  const int tid_wg = threadIdx.x & 127;
  const int n_local = tiles_of_this_cta(total);
  const int nch = (D + kRows - 1) / kRows;  // (rows past D in the last chunk are TMA's zero fill)

  if (wg == 0) {
    // ------------------------------------------------------------ producers
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid_wg == 0 && n_local > 0) {
      produce_weights<C::WKB, C::STAGES, kRows>(&tmW, s_w, rb, n_local, 0, nch);
    } else if (tid_wg == 32 && n_local > 0 && z_tma) {
      produce_z<C::NKB>(&tmZ, s_az, zb, n_local, tiles_k, rows, cols);
    }
    return;
  }

  // -------------------------------------------------------------- consumers
  setmaxnreg_inc<CONSUMER_REGS>();
  const int cw = wg - 1;  // tokens 64 cw .. 64 cw + 63 of the tile
  const int lane = tid_wg & 31, warp = tid_wg >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const uint32_t az_wg = s_az + (uint32_t)(cw * WG_KB_BYTES);
  ChunkRing<C::STAGES> ring;

  for (int u = 0; u < n_local; ++u) {
    const TokenTile tt = token_tile(u, tiles_k, rows);
    const int i = tt.i, b = tt.b;
    const int j0 = tt.kt * TOK;
    const int jvalid = min(TOK, cols - j0);

    // LN_out(z) -> this warpgroup's rows of A_z (its previous tile's wgmmas are complete: the last
    // release_chunk waited for all of them; by TMA the raw z was loaded once they were). The same
    // calls as the fused-width kernels' z paths, so the TMA and global-memory paths agree bit for bit.
    if (z_tma) {
      mbar_wait(zb.full(cw), u & 1);
      ln_out_from_tma<H>(v_lnow, v_lnob, eps, s_az, cw, warp, lane);
    } else {
      ln_out_to_tile<H>(z, b, i, j0, jvalid, ldz, sz, v_lnow, v_lnob, eps, s_az, cw, warp, lane);
    }
    fence_proxy_async_smem();    // the A_z writes are read by wgmma (async proxy)
    bar_sync(BAR_WG + cw, 128);  // all 4 warps' rows are written before the wgmmas read them

    // This thread's outputs: tokens t0 (h = 0) and t0 + 8 (h = 1) of the tile, channels
    // 64 j + 8 jj + 2 t4 + {0, 1} of chunk j (the m64n64 accumulator layout).
    const int t0 = 64 * cw + 16 * warp + g;
    const bool tv[2] = {t0 < jvalid, t0 + 8 < jvalid};
    bf16* const prow = pbuf + (((int64_t)b * rows + i) * cols + j0 + t0) * D;
    float acc[32] = {};  // (each chunk's first wgmma overwrites them)
    for (int j = 0; j < nch; ++j) {
      const int ws0 = issue_chunk<C::WKB, C::STAGES, C::W_SLOT>(cw, ring, rb, s_w, [&](int kb, uint32_t slot) {
        const uint64_t db = smem_desc(slot, 16u, 1024u);
        const uint64_t da = smem_desc(az_wg + kb * KB_BYTES, 16u, 1024u);
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {  // compile-time after unrolling
          const uint64_t step = (uint64_t)((ks * 32) >> 4);
          if (4 * kb + ks < C::KS_H) wgmma_m64n64k16_ss(acc, da + step, db + step, (kb > 0 || ks > 0) ? 1 : 0);
        }
      });
      release_chunk<C::WKB, C::STAGES>(ws0, rb, lane);
      // the tile's last MMAs are complete: A_z may take the next tile's z
      if (z_tma && j == nch - 1) zb.release(cw, lane);
      fence_regs(acc);
      // ---- epilogue: p + b_p, rounded to bf16, 4 bytes per token and channel pair
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const int c = kRows * j + 8 * jj + 2 * t4;
        if (c >= D) break;  // (D % 64 == 32: the last chunk's upper half)
        const float2 bp = *reinterpret_cast<const float2*>(v_bp + c);
#pragma unroll
        for (int h = 0; h < 2; ++h)
          if (tv[h])
            *reinterpret_cast<uint32_t*>(prow + 8 * h * D + c) =
                pack_bf16x2(acc[4 * jj + 2 * h] + bp.x, acc[4 * jj + 2 * h + 1] + bp.y);
      }
    }
  }
  turn_finish(cw, ring.issued);
}

// ---- G
// LN_in(x) in registers up to 256 channels, the rest (the tail) in shared memory (stage 1's
// split: the chunk loop's registers stay those of D = 256). x ring: 3 k-block slots above
// D = 256 (room for the tail and a weight ring), else two tiles' worth.
constexpr int g_reg_width(int D) { return D > 256 ? 256 : D; }
constexpr int g_x_slots(int D) { return D > 256 ? 3 : 2 * ((D + 63) / 64); }
// Besides the x ring and the weight ring: the tail, LN_in w, b and b_g / 2 (D each).
constexpr int g_extra(int D) { return proj::tail_bytes(D, g_reg_width(D)) + 3 * D * 4; }
constexpr int g_max_stages(int D) { return proj::stages_beside(g_x_slots(D)); }
template <int D>
struct GCfg : ProjCfg<D, g_x_slots(D), g_extra(D), D, proj::KB_BYTES, kRows, g_max_stages(D)> {
  static constexpr int KR = g_reg_width(D);          // channels of LN_in(x) in registers
  static constexpr int TAIL = proj::tail_bytes(D, KR);  // the rest, in shared memory
  static constexpr int NCH = (D + kRows - 1) / kRows;   // chunks of 64 output channels
};

// x may alias out (in place): a tile's x is all in registers (or the tail) before its first output
// is written, a thread reads each residual right before it writes that output, and tiles do not
// overlap. pbuf never aliases x; it may be out itself (out != x), read before written likewise.
template <int D>
__global__ void __launch_bounds__(proj::THREADS, 1)
    proj_out_g_kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW, const bf16* x,
                      const bf16* pbuf, bf16* out, const float* __restrict__ lniw, const float* __restrict__ lnib,
                      const float* __restrict__ gout_b, int rows, int cols, float eps, int residual, int tiles_k,
                      int total) {
  using namespace proj;
  using C = GCfg<D>;
  __shared__ __align__(8) uint64_t bars[2 * C::NXBUF + 2 * C::STAGES];
  extern __shared__ uint8_t smem_raw[];
  uint8_t* sm;
  const uint32_t base = aligned_smem(smem_raw, &sm);
  const uint32_t s_x = base;                               // NXBUF x k-block slots
  const uint32_t s_w = s_x + C::NXBUF * C::XBYTES;         // STAGES weight slots of 64 rows
  const uint32_t s_tail = s_w + C::STAGES * C::W_SLOT;     // LN_in(x) past C::KR
  float* const v_lniw = reinterpret_cast<float*>(sm + (s_tail - base) + C::TAIL);
  float* const v_lnib = v_lniw + D;
  float* const v_hbg = v_lnib + D;  // b_g / 2 (gate_half)
  for (int c = threadIdx.x; c < D; c += THREADS) {
    v_lniw[c] = lniw[c];
    v_lnib[c] = lnib[c];
    v_hbg[c] = 0.5f * gout_b[c];
  }
  const RingBars rb = ring_bars<C::NXBUF, C::STAGES>(bars);
  init_ring_bars<C::NXBUF, C::STAGES>(rb);  // (its __syncthreads also publishes the vectors)

  const int wg = threadIdx.x >> 7;
  const int tid_wg = threadIdx.x & 127;
  const int n_local = tiles_of_this_cta(total);

  if (wg == 0) {
    // ------------------------------------------------------------ producers
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid_wg == 0 && n_local > 0) {
      produce_weights<C::WKB, C::STAGES, kRows>(&tmW, s_w, rb, n_local, 0, C::NCH);
    } else if (tid_wg == 32 && n_local > 0) {
      // each tile's p into L2 for the epilogues (contiguous: its tokens x D), paced by the x ring;
      // the residual's x finds L2 after the ring's TMA loads
      produce_x_ring<C::NKB, C::NXBUF>(&tmX, s_x, rb, n_local, tiles_k, rows, [&](const TokenTile& tt, int j0) {
        bulk_prefetch_l2(pbuf + (((int64_t)tt.b * rows + tt.i) * cols + j0) * D,
                         (uint32_t)(min(TOK, cols - j0) * D * 2));
      });
    }
    return;
  }

  // -------------------------------------------------------------- consumers
  setmaxnreg_inc<CONSUMER_REGS>();
  const int cw = wg - 1;  // tokens 64 cw .. 64 cw + 63 of the tile
  const int lane = tid_wg & 31, warp = tid_wg >> 5;
  const int g = lane >> 2, t4 = lane & 3;

  uint32_t ax[C::KR / 16][4];
  const uint64_t da_tail = tail_desc(s_tail, cw);  // (D > 256)
  ChunkRing<C::STAGES> ring;
  RingPos<C::NXBUF> xring;

  for (int u = 0; u < n_local; ++u) {
    const TokenTile tt = token_tile(u, tiles_k, rows);
    const int i = tt.i, b = tt.b;
    const int j0 = tt.kt * TOK;
    const int jvalid = min(TOK, cols - j0);

    if constexpr (C::TAIL > 0) {
      ln_in_frags_ring_split<D, C::KR, C::NXBUF>(ax, xring, rb, s_x, s_tail, cw, warp, lane, v_lniw, v_lnib, eps);
      fence_proxy_async_smem();    // the tail's stmatrix writes, before the wgmmas read them
      bar_sync(BAR_WG + cw, 128);  // every warp's rows of the warpgroup's tail are written
    } else {
      ln_in_frags_ring<D, C::NXBUF>(ax, xring, rb, s_x, cw, warp, lane, v_lniw, v_lnib, eps);
    }

    // This thread's outputs: tokens t0 (h = 0) and t0 + 8 (h = 1), channels 64 j + 8 jj + 2 t4 + {0, 1}.
    const int t0 = 64 * cw + 16 * warp + g;
    const bool tv[2] = {t0 < jvalid, t0 + 8 < jvalid};
    const int64_t tok0 = (((int64_t)b * rows + i) * cols + j0 + t0) * D;  // element offset of token t0
    float acc[32] = {};  // (each chunk's first wgmma overwrites them)
    for (int j = 0; j < C::NCH; ++j) {
      const int ws0 = issue_chunk<C::WKB, C::STAGES, C::W_SLOT>(cw, ring, rb, s_w, [&](int kb, uint32_t slot) {
        const uint64_t db = smem_desc(slot, 16u, 1024u);
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {  // the conditions are compile-time after unrolling
          const int k = 4 * kb + ks;
          const uint64_t step = (uint64_t)((ks * 32) >> 4);
          if (k < C::KR / 16)
            wgmma_m64n64k16_rs(acc, ax[k], db + step, (kb > 0 || ks > 0) ? 1 : 0);
          else if (k < C::KS)
            wgmma_m64n64k16_ss(acc, tail_step(da_tail, k - C::KR / 16), db + step, 1);
        }
      });
      // p and the residual of this chunk's outputs (L2: prefetched / just loaded by TMA), loaded while
      // the chunk's MMAs run.
      uint32_t pres[8][2], xres[8][2];
#pragma unroll
      for (int jj = 0; jj < 8; ++jj)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int c = kRows * j + 8 * jj + 2 * t4;
          pres[jj][h] = xres[jj][h] = 0u;
          if (c < D && tv[h]) {
            pres[jj][h] = *reinterpret_cast<const uint32_t*>(pbuf + tok0 + 8 * h * D + c);
            if (residual) xres[jj][h] = *reinterpret_cast<const uint32_t*>(x + tok0 + 8 * h * D + c);
          }
        }
      release_chunk<C::WKB, C::STAGES>(ws0, rb, lane);
      fence_regs(acc);

      // ---- epilogue: out = sigmoid(g + b_g) * p (+ x) (gate_half with p's bias already in p)
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const int c = kRows * j + 8 * jj + 2 * t4;
        if (c >= D) break;  // (D % 64 == 32: the last chunk's upper half)
        const float2 hbg = *reinterpret_cast<const float2*>(v_hbg + c);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float v0 = gate_half(acc[4 * jj + 2 * h], hbg.x, bf16_lo(pres[jj][h]), 0.f);
          float v1 = gate_half(acc[4 * jj + 2 * h + 1], hbg.y, bf16_hi(pres[jj][h]), 0.f);
          if (residual) {  // (not adding 0 keeps a -0 result, as the other stage 3 kernels do)
            v0 += bf16_lo(xres[jj][h]);
            v1 += bf16_hi(xres[jj][h]);
          }
          if (tv[h]) *reinterpret_cast<uint32_t*>(out + tok0 + 8 * h * D + c) = pack_bf16x2(v0, v1);
        }
      }
    }
  }
  turn_finish(cw, ring.issued);
}

}  // namespace split

// Host side (stage3_split_p.cu, stage3_split_g.cu): launch the P kernel of L.hidden / the G kernel
// of L.dim (cudaErrorInvalidValue for what TMA or the int tile arithmetic cannot take), or raise
// their shared-memory limits on the current device (prepare_split: both of a layer).
cudaError_t prepare_split_p(int hidden);
// What G needs of its pointers beyond the tile arithmetic: x, pbuf, out and W3 16-byte aligned (TMA,
// 4-byte pair loads), pbuf not x (out may be x, and pbuf may be out).
bool split_g_args_ok(const DevLayer& L, const void* x, const void* pbuf, const void* out);
cudaError_t launch_split_p(const DevLayer& L, const bf16_raw* z, void* pbuf, int64_t B, int64_t rows, int64_t cols,
                           int64_t ldz, int64_t sz, cudaStream_t s);
cudaError_t launch_split_g(const DevLayer& L, const void* x, const void* pbuf, void* out, int64_t B, int64_t rows,
                           int64_t cols, cudaStream_t s);
cudaError_t prepare_split(int dim, int hidden);

}  // namespace foldcp
