// Stage 3 for the pairs the fused kernel (stage3_proj_out.cu) cannot hold: D or H above
// kFusedOutMax (256), both up to kWideOutMax (384; wider pairs run as two kernels,
// stage3_split.cuh, since this one spills above D = 384: trimul_internal.h). Same math and the
// same tiles (128 tokens (b, i, j0 .. j0 + 127), two consumer warpgroups of 64 tokens taking turns
// on a shared weight ring); what differs is where things live, since the tile's LN_out(z) alone is
// 96 KiB at H = 384:
//   - A_z (LN_out(z), shared memory) is the only whole tile kept: z comes by TMA into it and
//     LN_out turns it token-major and normalizes it in place (ln_out_from_tma), or, where z's rows
//     are not 16-byte aligned, ln_out_to_tile loads it from global memory;
//   - x comes through a ring of k-block slots (two at every pair up to 384), only for LN_in(x)
//     (into registers);
//     the residual is read from global memory (L2: the producer prefetches each tile's x) and the
//     outputs are stored from registers, 4 bytes per token and channel pair;
//   - W3 ([2D][max(D, H)], the layout the fused kernel reads) comes in chunks of 128 rows = 64
//     output channels (slots of 16 KiB) where a ring of a chunk plus one k-block fits beside A_z
//     (H <= 256), else of 64 rows = 32 output channels (slots of 8 KiB; wide_rows); the two views
//     of a slot are m64n64 or m64n32 wgmmas (p: A_z from shared memory, g: LN_in(x) from
//     registers);
//   - the LN vectors are copied to shared memory (read from global memory, the compiler issued
//     their loads all at once and held them: hundreds of bytes of spills), and so are the
//     epilogue's biases (from global memory they missed L1, which the residual and z loads stream
//     through beside 220 KiB of shared memory: the gates waiting on them were 15 % of the kernel's
//     warp samples at 384/384 in ncu).
// x may alias out: a thread reads each residual right before it writes that output, the tile's
// x k-blocks are all in registers before its first output is written, and tiles do not overlap.
// (Registers: D / 4 for LN_in(x) beside 32 accumulators, all of LN_in(x) up to D = 384: ptxas
// spills 0-8 B. Until the mbarrier watchdog stopped trapping (wgmma_common.cuh), channels 256 ..
// D - 1 went to shared memory instead, a tail read by SS wgmmas: with the trap, the whole of it in
// registers spilled 620 B at 384/256; the tail spilled 0-92 B with the store. Speed:
// native/NOTES-gpu.md.)
#pragma once
#include <climits>
#include <cstdint>

#include "common.cuh"
#include "pipeline.cuh"
#include "stage3_common.cuh"
#include "trimul_internal.h"
#include "wgmma_common.cuh"

namespace foldcp {
namespace wide {

constexpr int wide_kw(int D, int H) { return D > H ? D : H; }
// Besides the x ring and the weight ring: A_z, then LN_in w, b (D each) and LN_out w, b (H each).
constexpr int wide_extra_base(int D, int H) {
  return proj::x_tile_bytes(H) + (2 * D + 2 * H) * 4;
}
// ... and the epilogue's biases (bp, bg halved for gate_half: 2 D floats).
constexpr int wide_extra(int D, int H) { return wide_extra_base(D, H) + 2 * D * 4; }
// Weight slots of `rows` W3 rows that fit beside the x ring's slots and `extra` bytes.
constexpr int wide_fit(int xslots, int extra, int rows) {
  return (proj::SMEM_LIMIT - proj::STATIC_SMEM - (xslots * proj::KB_BYTES + extra + 1024)) / (rows * 128);
}
// W3 rows per chunk. 128 (64 output channels, the fused kernel's chunk: 8-row groups alternating
// p_out, g_out, m64n64 views) where D is a multiple of 64 and a ring of a chunk plus one k-block of
// 16 KiB slots fits beside two x slots and the rest (384/256, 320/256, 384/128, ...: A_z of
// H <= 256); else 64 (32 output channels, m64n32 views, slots of 8 KiB: 384/384, 352/x, ...).
// Twice the channels per chunk halve the chunks' turns, MMA waits and epilogue set-ups per tile,
// and the p view's SS MMAs read A_z once per 64 output channels instead of 32.
constexpr int wide_rows(int D, int H) {
  return D % 64 == 0 && wide_fit(2, wide_extra(D, H), 128) >= (wide_kw(D, H) + 63) / 64 + 1 ? 128 : 64;
}
// x ring slots: two where a weight ring of a chunk plus two k-blocks (with 128-row chunks: plus
// one) still fits beside them and the rest (every pair up to 384 since LN_in(x) lost its
// shared-memory tail), else one.
constexpr int wide_x_slots(int D, int H) {
  return wide_rows(D, H) == 128 || wide_fit(2, wide_extra_base(D, H), 64) >= (wide_kw(D, H) + 63) / 64 + 2 ? 2 : 1;
}
// Weight slots: as many as fit, up to what the mbarrier array holds beside the x ring's and z's (16
// pairs in STATIC_SMEM). A chunk is short here (32 or 64 output channels: 64 or 128 rows per
// k-block), so the ring's k-blocks beyond the chunk being read are all the producer can load ahead
// of the next chunk, against the latency of each L2 -> shared-memory TMA.
constexpr int wide_max_stages(int D, int H) { return proj::stages_beside(wide_x_slots(D, H) + proj::CONSUMERS); }
template <int D, int H>
struct WideOutCfg : ProjCfg<D, wide_x_slots(D, H), wide_extra(D, H), wide_kw(D, H), proj::KB_BYTES, wide_rows(D, H),
                            wide_max_stages(D, H)> {
  static constexpr int KW = wide_kw(D, H);
  static constexpr int ROWS = wide_rows(D, H);           // W3 rows per chunk
  static constexpr int CH = ROWS / 2;                    // output channels per chunk
  static constexpr int NCH = D / CH;                     // chunks
  static constexpr int AZBYTES = proj::x_tile_bytes(H);  // LN_out(z) of the tile
  static constexpr int KS_H = H / 16;                    // k16 steps of p_out (those of g_out: KS)
  static constexpr int NKB_H = (H + 63) / 64;            // k-blocks of A_z (z's TMA boxes per warpgroup)
};

template <int D, int H>
__global__ void __launch_bounds__(proj::THREADS, 1)
    proj_out_wide_kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
                         const __grid_constant__ CUtensorMap tmZ, const bf16* x, bf16* out,
                         const bf16_raw* __restrict__ z, const float* __restrict__ lniw,
                         const float* __restrict__ lnib, const float* __restrict__ lnow,
                         const float* __restrict__ lnob, const float* __restrict__ pout_b,
                         const float* __restrict__ gout_b, int rows, int cols, long long ldz, long long sz, float eps,
                         int residual, int z_prefetch, int z_tma, int tiles_k, int total) {
  using namespace proj;
  using C = WideOutCfg<D, H>;
  // the x ring's and the weight ring's barriers, then z's: full and empty per warpgroup
  constexpr int RINGBARS = 2 * C::NXBUF + 2 * C::STAGES;
  static_assert((RINGBARS + 2 * CONSUMERS) * 8 <= STATIC_SMEM, "the mbarriers outgrow STATIC_SMEM");
  __shared__ __align__(8) uint64_t bars[RINGBARS + 2 * CONSUMERS];
  extern __shared__ uint8_t smem_raw[];
  uint8_t* sm;
  const uint32_t base = aligned_smem(smem_raw, &sm);
  const uint32_t s_x = base;                          // NXBUF x k-block slots
  const uint32_t s_az = s_x + C::NXBUF * C::XBYTES;   // LN_out(z) tile
  const uint32_t s_w = s_az + C::AZBYTES;             // STAGES weight slots of C::ROWS rows
  const uint32_t s_vec = s_w + C::STAGES * C::W_SLOT;  // the LayerNorms' and biases' vectors
  const OutVecs vec = load_out_vecs<D, H>(reinterpret_cast<float*>(sm + (s_vec - base)), lniw, lnib,
                                         lnow, lnob, pout_b, gout_b);
  const RingBars rb = ring_bars<C::NXBUF, C::STAGES>(bars);
  const ZBars zb = z_bars(&bars[RINGBARS]);
  zb.init();
  init_ring_bars<C::NXBUF, C::STAGES>(rb);  // (its __syncthreads also publishes the vectors)

  const int wg = threadIdx.x >> 7;
  const int tid_wg = threadIdx.x & 127;
  const int n_local = tiles_of_this_cta(total);

  if (wg == 0) {
    // ------------------------------------------------------------ producers
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid_wg == 0 && n_local > 0) {
      produce_weights<C::WKB, C::STAGES, C::ROWS>(&tmW, s_w, rb, n_local, 0, C::NCH);
    } else if (tid_wg == 32 && n_local > 0) {
      produce_x_ring<C::NKB, C::NXBUF>(&tmX, s_x, rb, n_local, tiles_k, rows, [&](const TokenTile& tt, int j0) {
        prefetch_out_tile<D, H>(x, z, tt.b, tt.i, j0, rows, cols, ldz, sz, z_prefetch);
      });
    } else if (tid_wg == 64 && n_local > 0 && z_tma) {
      produce_z<C::NKB_H>(&tmZ, s_az, zb, n_local, tiles_k, rows, cols);
    }
    return;
  }

  // -------------------------------------------------------------- consumers
  setmaxnreg_inc<CONSUMER_REGS>();
  const int cw = wg - 1;  // tokens 64 cw .. 64 cw + 63 of the tile
  const int lane = tid_wg & 31, warp = tid_wg >> 5;
  const int g = lane >> 2, t4 = lane & 3;

  uint32_t ax[C::KS][4];
  ChunkRing<C::STAGES> ring;
  RingPos<C::NXBUF> xring;

  for (int u = 0; u < n_local; ++u) {
    const TokenTile tt = token_tile(u, tiles_k, rows);
    const int i = tt.i, b = tt.b;
    const int j0 = tt.kt * TOK;
    const int jvalid = min(TOK, cols - j0);

    // LN_out(z) -> this warpgroup's rows of A_z (its previous tile's wgmmas are complete: the last
    // release_chunk waited for all of them; by TMA the raw z was loaded once they were, during the
    // last chunk's epilogue), then LN_in(x) -> registers. (LN_in first, to give the
    // TMA more time, kept LN_in(x)'s registers live through LN_out: ptxas spilled twice as much.)
    if (z_tma) {
      mbar_wait(zb.full(cw), u & 1);
      ln_out_from_tma<H>(vec.lnow, vec.lnob, eps, s_az, cw, warp, lane);
    } else {
      ln_out_to_tile<H>(z, b, i, j0, jvalid, ldz, sz, vec.lnow, vec.lnob, eps, s_az, cw, warp, lane);
    }
    ln_in_frags_ring<D, C::NXBUF>(ax, xring, rb, s_x, cw, warp, lane, vec.lniw, vec.lnib, eps);
    fence_proxy_async_smem();  // the A_z writes are read by wgmma (async proxy)
    bar_sync(BAR_WG + cw, 128);  // all 4 warps' A_z rows are written before the wgmmas read them

    // This thread's outputs: tokens t0 (h = 0) and t0 + 8 (h = 1) of the tile, channels
    // CH j + 8 jj + 2 t4 + {0, 1} of chunk j.
    const int t0 = 64 * cw + 16 * warp + g;
    const bool tv[2] = {t0 < jvalid, t0 + 8 < jvalid};
    const int64_t tok0 = (((int64_t)b * rows + i) * cols + j0 + t0) * D;  // element offset of token t0
    constexpr int NJJ = C::CH / 8;  // 8-channel groups of a chunk
    float accp[C::CH / 2] = {}, accg[C::CH / 2] = {};  // (each chunk's first wgmma overwrites them)
    for (int j = 0; j < C::NCH; ++j) {
      // The residuals of this chunk's outputs, loaded before the turn wait (L2, prefetched).
      uint32_t xres[NJJ][2];
#pragma unroll
      for (int jj = 0; jj < NJJ; ++jj)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          xres[jj][h] = 0u;
          if (residual && tv[h])
            xres[jj][h] = *reinterpret_cast<const uint32_t*>(x + tok0 + 8 * h * D + C::CH * j + 8 * jj + 2 * t4);
        }
      const int ws0 = issue_chunk<C::WKB, C::STAGES, C::ROWS * 128>(cw, ring, rb, s_w, [&](int kb, uint32_t slot) {
        out_kblock_mmas<C::KS_H, C::KS>(accp, accg, ax, s_az + cw * WG_KB_BYTES, slot, kb);
      });
      // The halved biases of the epilogue's first channel pair, read while the MMAs run (the waits
      // below are memory clobbers: loads written before them stay before them); each jj reads the
      // next pair's before its gates.
      auto halved_biases = [&](int c, float2& hbp, float2& hbg) {
        hbp = *reinterpret_cast<const float2*>(vec.bp + c);
        hbg = *reinterpret_cast<const float2*>(vec.bg + c);
      };
      float2 nbp, nbg;
      halved_biases(C::CH * j + 2 * t4, nbp, nbg);
      release_chunk<C::WKB, C::STAGES>(ws0, rb, lane);
      // the tile's last MMAs are complete: A_z may take the next tile's z
      if (z_tma && j == C::NCH - 1) zb.release(cw, lane);
      fence_regs(accp);
      fence_regs(accg);

      // ---- epilogue: out = sigmoid(g + bg) * (p + bp) (+ x)
#pragma unroll
      for (int jj = 0; jj < NJJ; ++jj) {
        const int c = C::CH * j + 8 * jj + 2 * t4;
        const float2 hbp = nbp, hbg = nbg;
        if (jj + 1 < NJJ) halved_biases(c + 8, nbp, nbg);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float v0 = gate_half(accg[4 * jj + 2 * h], hbg.x, accp[4 * jj + 2 * h], hbp.x);
          float v1 = gate_half(accg[4 * jj + 2 * h + 1], hbg.y, accp[4 * jj + 2 * h + 1], hbp.y);
          if (residual) {  // (not adding 0 keeps a -0 result, as the fused kernel does)
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

template <int D, int H>
cudaError_t launch_wide_t(const DevLayer& L, const void* x, const bf16_raw* z, void* out, int64_t B, int64_t rows,
                          int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s) {
  using C = WideOutCfg<D, H>;
  const int64_t tiles_k = (cols + proj::TOK - 1) / proj::TOK;
  const int64_t total = B * rows * tiles_k;
  if (!out_args_ok(L, x, z, out, B, rows, cols, ldz, sz, total)) return cudaErrorInvalidValue;
  // x: (B, rows, cols, D) bf16 in boxes of 64 channels x 128 tokens; W3: [2D][KW] in boxes of
  // 64 k x C::ROWS rows (columns past the K of a view are zero in W3; past KW, zero-filled).
  CUtensorMap mx, mw, mz{};
  cudaError_t e = encode_tokens(&mx, x, D, cols, rows, B, proj::TOK);
  if (e != cudaSuccess) return e;
  e = encode_weights(&mw, L.w_out, C::KW, 2 * D, C::ROWS);
  if (e != cudaSuccess) return e;
  const int z_tma = encode_z_rows(&mz, z, H, B, rows, cols, ldz, sz);
  return launch_persistent<proj_out_wide_kernel<D, H>>(
      C::SMEM, total, s, mx, mw, mz, static_cast<const bf16*>(x), static_cast<bf16*>(out), z, L.ln_in_w, L.ln_in_b,
      L.ln_out_w, L.ln_out_b, L.p_out_b, L.g_out_b, (int)rows, (int)cols, (long long)ldz, (long long)sz, L.eps,
      L.residual, z_rows_aligned(z, ldz, sz), z_tma, (int)tiles_k, (int)total);
}

// Launches (prepare = false) or prepares (raises the shared-memory limit of) the kernel of
// (L.dim, L.hidden), for D in (LO, HI] and a wide pair; anything else gets cudaErrorInvalidValue.
// One translation unit per range of D instantiates it (stage3_wide_d*.cu: 80 kernels compile in
// parallel); launch_proj_out_tile and prepare_proj_out (stage3_proj_out.cu) pick the range.
template <int LO, int HI>
cudaError_t out_range(const DevLayer& L, const void* x, const bf16_raw* z, void* out, int64_t B, int64_t rows,
                      int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s, bool prepare) {
  return with_dim<HI, LO + 32>(L.dim, [&](auto d) {
    return with_dim<kWideOutMax>(L.hidden, [&](auto h) -> cudaError_t {
      constexpr int D = decltype(d)::value, H = decltype(h)::value;
      if constexpr (D > kFusedOutMax || H > kFusedOutMax) {
        if (prepare) return prepare_on_current_device<proj_out_wide_kernel<D, H>>(WideOutCfg<D, H>::SMEM);
        return launch_wide_t<D, H>(L, x, z, out, B, rows, cols, ldz, sz, s);
      } else {
        return cudaErrorInvalidValue;
      }
    });
  });
}
// The ranges of D, one translation unit each.
#define FOLDCP_WIDE_RANGES(X) X(0, 128) X(128, 256) X(256, 384)
#define FOLDCP_WIDE_EXTERN(lo, hi)                                                                                  \
  extern template cudaError_t out_range<lo, hi>(const DevLayer&, const void*, const bf16_raw*, void*, int64_t, \
                                                int64_t, int64_t, int64_t, int64_t, cudaStream_t, bool);
FOLDCP_WIDE_RANGES(FOLDCP_WIDE_EXTERN)
#undef FOLDCP_WIDE_EXTERN

}  // namespace wide
}  // namespace foldcp
