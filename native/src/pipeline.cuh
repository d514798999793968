// The pipeline that stages 1 and 3 (stage1_proj_in.cu, stage3_proj_out.cu) share: two
// projections of LayerNorm'd tokens on Hopper's asynchronous tensor-core path (wgmma.mma_async with
// TMA-fed operands, an mbarrier pipeline, warp specialization). Each kernel adds its own
// shared-memory buffers, MMAs and epilogue to the pieces here.
//
// CTA (wgcta, wgmma_common.cuh): 384 threads = 3 warpgroups, 1 CTA per SM, persistent over tiles of
// 128 consecutive tokens of one pair row (b, i, k0 .. k0 + 127): contiguous in x and out, and
// 256-byte rows of the channel-major a/b/z planes. Tiles are taken in (b, i, k) order, CTA c doing
// c, c + grid, ..., so that all CTAs stream the same weights at the same time (W1 is 512 KiB, W3
// 256 KiB at D = 256: they stay in L2).
//   warpgroup 0: producers. One thread streams the weight k-blocks (128 rows x 64 k, 16 KiB, 128B
//                swizzle) through a ring of STAGES slots, tile after tile (produce_weights);
//                another one loads the raw x of each token tile: into NXBUF whole-tile buffers,
//                up to NXBUF tiles ahead (load_x_tile: the fused stage 3, which keeps the tile for
//                its residual), or k-block by k-block into a ring of NXBUF k-block slots
//                (load_x_ring: stage 1, the wide stage 3 and the split stage 3's G kernel, which only need it
//                for LN_in).
//   warpgroups 1, 2: consumers, 64 tokens of the tile each (wgmma M = 64).
//
// Why the A operand (LayerNorm'd tokens) lives in registers: LN needs a token's whole row, so it
// cannot be a raw TMA tile. Each consumer loads its 16 rows x D of the TMA-written x tile with
// ldmatrix straight into the wgmma A-fragment layout (the mma.m16n8k16 layout per warp), computes
// the LayerNorm there (each row is spread over the 4 threads of a quad: 2 shuffles per reduction)
// and keeps the normalized bf16 fragments in registers for all output chunks of the tile
// (wgmma with A from registers; ln_in_frags). This frees the x buffer right after the LayerNorm
// (the next tile's x lands while this tile multiplies) and saves the 64 KiB shared-memory copy of
// A at D = 256, which pays for a deeper weight ring. Cost: D / 4 registers per thread (64 at
// D = 256).
//
// Each consumer warpgroup runs one accumulator set; the two warpgroups take turns issuing their
// wgmmas (ping-pong through two named barriers: turn_wait / turn_pass), so that the tensor cores
// work on one warpgroup's chunk while the other runs its epilogue (gates, sigmoids, stores). The
// weight slots are released k-block by k-block (one commit group per k-block, wgmma.wait_group N:
// issue_chunk / release_chunk), so that the ring needs about one chunk plus the look-ahead, not
// two chunks. (At D, H <= 128 the whole weight matrix fits in shared memory: the resident forms
// of stages 1 and 3 load it once, and each consumer warpgroup runs its own 64-token tiles
// without turns.)
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common.cuh"
#include "trimul_internal.h"
#include "wgmma_common.cuh"

namespace foldcp {
namespace proj {
constexpr int TOK = 128;                         // tokens per tile
constexpr int CONSUMERS = wgcta::CONSUMERS;      // consumer warpgroups, 64 tokens each
constexpr int THREADS = wgcta::THREADS;          // 384
constexpr int KB_BYTES = 128 * 128;              // one 64-wide k-block of 128 rows (128 B per row, one swizzle span)
constexpr int WG_KB_BYTES = 64 * 128;            // a consumer warpgroup's 64 rows of such a k-block
constexpr int W_STAGE = KB_BYTES;                // a weight slot of 128 rows x 64 k bf16 (the default)
constexpr int SMEM_LIMIT = 227 * 1024;           // dynamic + static shared memory per CTA on sm_90
constexpr int STATIC_SMEM = 256;                 // the mbarriers (static), rounded up
constexpr int PRODUCER_REGS = wgcta::PRODUCER_REGS, CONSUMER_REGS = wgcta::CONSUMER_REGS;
// Named barriers (0 is __syncthreads): consumer warpgroup c alone: BAR_WG + c; "consumer
// warpgroup c may issue its next chunk": BAR_TURN + c.
constexpr int BAR_WG = 1, BAR_TURN = 3;
constexpr int MAX_STAGES = 8;
// The weight slots whose mbarriers (a full and an empty each) the static array holds beside
// `pairs` other full / empty pairs (x slots, z's per-warpgroup barriers): the cap on a ring's depth
// wherever shared memory would allow more.
constexpr int stages_beside(int pairs) { return STATIC_SMEM / 16 - pairs; }

// Bytes of one x tile: 128 tokens x D bf16 as ceil(D / 64) k-blocks.
constexpr int x_tile_bytes(int D) { return (D + 63) / 64 * KB_BYTES; }
// Bytes of LN_in(x)'s channels KR .. D - 1 kept in shared memory for a 128-token tile (the tail
// of ln_in_frags_ring_split): k-blocks of 64 channels (the last one half used at D % 64 == 32).
constexpr int tail_bytes(int D, int KR) { return (D - KR + 63) / 64 * KB_BYTES; }
}  // namespace proj

// Shared-memory plan of a projection kernel: NXBUF x buffers of XBUF bytes (whole x tiles, or
// k-block slots of an x ring: stage 1, the wide stage 3, the split G kernel), the stage's own EXTRA bytes, the
// weight ring with as many slots as fit (at most CAP, MAX_STAGES by default, or a chunk plus two
// k-blocks where that is more), and 1024 B of slack to align the buffers to 1024 B (128B swizzle).
// KW: the K of the weight matrix (stage 3's p_out and g_out share rows of max(H, D)), D by
// default. WROWS: the weight rows of a chunk (one slot holds WROWS rows x 64 k).
template <int D, int NXBUF_, int EXTRA, int KW = D, int XBUF = proj::x_tile_bytes(D), int WROWS = 128,
          int CAP = proj::MAX_STAGES>
struct ProjCfg {
  static constexpr int NKB = (D + 63) / 64;   // k-blocks of x (the last one half used when D % 64 == 32)
  static constexpr int WKB = (KW + 63) / 64;  // k-blocks of a weight chunk
  static constexpr int KS = D / 16;           // k16 steps of LN_in(x)
  static constexpr int XBYTES = XBUF;
  static constexpr int NXBUF = NXBUF_;
  static constexpr int W_SLOT = WROWS * 128;  // bytes of one weight slot
  static constexpr int FIXED = NXBUF * XBYTES + EXTRA + 1024;
  static constexpr int STAGES_FIT = (proj::SMEM_LIMIT - proj::STATIC_SMEM - FIXED) / W_SLOT;
  static constexpr int STAGES_CAP = CAP > WKB + 2 ? CAP : WKB + 2;
  static constexpr int STAGES = STAGES_FIT < STAGES_CAP ? STAGES_FIT : STAGES_CAP;
  static constexpr int SMEM = FIXED + STAGES * W_SLOT;
  static_assert(STAGES >= WKB + 1, "the weight ring must hold a chunk plus one k-block");
  static_assert(SMEM + proj::STATIC_SMEM <= proj::SMEM_LIMIT, "over the shared-memory limit");
  static_assert(XBYTES < (1 << 20), "mbarrier tx-count is 20 bits");
  static_assert((2 * NXBUF + 2 * STAGES) * 8 <= proj::STATIC_SMEM, "the mbarriers outgrow STATIC_SMEM");
};

// ------------------------------------------------------------------ CTA set-up
// The dynamic shared memory rounded up to 1024 B (TMA and wgmma/ldmatrix addressing of 128B
// swizzled tiles assume 1024-byte aligned tiles): its shared address, and *sm the generic pointer
// to it.
__device__ __forceinline__ uint32_t aligned_smem(uint8_t* smem_raw, uint8_t** sm) {
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  *sm = smem_raw + (base - raw);
  return base;
}

// The mbarriers of the x buffers and the weight ring (NXBUF and STAGES of each kind, full and
// empty, 8 bytes apart in the kernel's static array `bars`).
struct RingBars {
  uint32_t xfull0, xempty0, wfull0, wempty0;
  __device__ __forceinline__ uint32_t xfull(int k) const { return xfull0 + 8 * k; }
  __device__ __forceinline__ uint32_t xempty(int k) const { return xempty0 + 8 * k; }
  __device__ __forceinline__ uint32_t wfull(int k) const { return wfull0 + 8 * k; }
  __device__ __forceinline__ uint32_t wempty(int k) const { return wempty0 + 8 * k; }
};
template <int NXBUF, int STAGES>
__device__ __forceinline__ RingBars ring_bars(uint64_t* bars) {
  RingBars r;
  r.xfull0 = smem_u32(&bars[0]);
  r.xempty0 = r.xfull0 + 8 * NXBUF;
  r.wfull0 = r.xempty0 + 8 * NXBUF;
  r.wempty0 = r.wfull0 + 8 * STAGES;
  return r;
}
// Thread 0 initializes the barriers: a full barrier completes on the producer's arrival plus its
// TMA bytes, an empty one when all 8 consumer warps released the buffer (an x buffer: its
// x_releasers, 4 where each consumer warpgroup has x buffers of its own). Then the CTA
// synchronizes.
template <int NXBUF, int STAGES>
__device__ __forceinline__ void init_ring_bars(const RingBars& r, int x_releasers = proj::CONSUMERS * 4) {
  if (threadIdx.x == 0) {
    for (int k = 0; k < NXBUF; ++k) {
      mbar_init(r.xfull(k), 1);
      mbar_init(r.xempty(k), x_releasers);
    }
    for (int k = 0; k < STAGES; ++k) {
      mbar_init(r.wfull(k), 1);
      mbar_init(r.wempty(k), proj::CONSUMERS * 4);
    }
    fence_mbarrier_init();
  }
  __syncthreads();
}

// Token tiles of this CTA (persistent: tiles blockIdx.x, + gridDim.x, ... of `total`).
__device__ __forceinline__ int tiles_of_this_cta(int total) {
  return (int)blockIdx.x < total ? (total - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
}
// This CTA's u-th tile: tokens (b, i, 128 kt ..) of a (B, rows, tiles_k tiles) grid.
struct TokenTile {
  int kt, i, b;
};
__device__ __forceinline__ TokenTile token_tile(int u, int tiles_k, int rows) {
  const int t = (int)blockIdx.x + u * (int)gridDim.x;
  const int kt = t % tiles_k, r = t / tiles_k;
  return TokenTile{kt, r % rows, r / rows};
}

// ------------------------------------------------------------------ producers
// Streams the weight chunks jb .. je - 1 (WROWS rows x NKB k-blocks each, 2D map tmW whose box is
// 64 k x WROWS rows) into the ring once per token tile of this CTA, each k-block as soon as its
// slot is free.
template <int NKB, int STAGES, int WROWS = 128>
__device__ __forceinline__ void produce_weights(const CUtensorMap* tmW, uint32_t s_w, const RingBars& bars,
                                                int n_local, int jb, int je) {
  constexpr int SLOT = WROWS * 128;
  tma_prefetch_map(tmW);
  RingPos<STAGES> w;
  for (int u = 0; u < n_local; ++u) {
    for (int j = jb; j < je; ++j) {
#pragma unroll
      for (int kb = 0; kb < NKB; ++kb) {
        mbar_wait(bars.wempty(w.slot), w.phase ^ 1u);
        mbar_arrive_expect_tx(bars.wfull(w.slot), SLOT);
        tma_load_2d(s_w + w.slot * SLOT, tmW, kb * 64, j * WROWS, bars.wfull(w.slot));
        w.next();
      }
    }
  }
}

// The resident forms (D, H <= 128): weight chunks jb .. je - 1 (WROWS rows x NKB k-blocks each)
// once into consecutive slots from s_w, all completing on `bar` (one thread).
template <int NKB, int WROWS = 128>
__device__ __forceinline__ void load_weights_once(const CUtensorMap* tmW, uint32_t s_w, uint32_t bar, int jb, int je) {
  constexpr int SLOT = WROWS * 128;
  tma_prefetch_map(tmW);
  mbar_arrive_expect_tx(bar, (je - jb) * NKB * SLOT);
  for (int j = jb; j < je; ++j)
    for (int kb = 0; kb < NKB; ++kb) tma_load_2d(s_w + ((j - jb) * NKB + kb) * SLOT, tmW, kb * 64, j * WROWS, bar);
}

// The x ring (stage 1, the wide stage 3, the split G kernel): a tile's NKB k-blocks (64 channels x 128 tokens of the
// 4D map tmX at token `tok`, row `row`, batch `b`) into the next NKB slots of XSLOTS k-block slots,
// each as soon as the consumers have released it. Unlike whole-tile buffers, the ring holds fewer
// k-blocks than a tile at large D: the consumers take the tile's raw x into registers k-block by
// k-block and release each slot at once (ln_in_frags_ring).
template <int NKB, int XSLOTS>
__device__ __forceinline__ void load_x_ring(RingPos<XSLOTS>& xr, const CUtensorMap* tmX, uint32_t s_x,
                                            const RingBars& bars, int tok, int row, int b) {
#pragma unroll
  for (int kb = 0; kb < NKB; ++kb) {
    mbar_wait(bars.xempty(xr.slot), xr.phase ^ 1u);
    mbar_arrive_expect_tx(bars.xfull(xr.slot), proj::KB_BYTES);
    tma_load_4d(s_x + xr.slot * proj::KB_BYTES, tmX, kb * 64, tok, row, b, bars.xfull(xr.slot));
    xr.next();
  }
}

// The x producer of the x-ring stage 3 kernels (the wide kernel, the split G kernel): every tile
// of this CTA into the ring, each after before_tile(tt, j0), the L2 prefetches of what the tile's
// consumers read from global memory. (Stage 1 clamps its boxes into x: its own loop.)
template <int NKB, int XSLOTS, typename BeforeTile>
__device__ __forceinline__ void produce_x_ring(const CUtensorMap* tmX, uint32_t s_x, const RingBars& bars,
                                               int n_local, int tiles_k, int rows, BeforeTile&& before_tile) {
  tma_prefetch_map(tmX);
  RingPos<XSLOTS> xr;
  for (int v = 0; v < n_local; ++v) {
    const TokenTile tt = token_tile(v, tiles_k, rows);
    const int j0 = tt.kt * proj::TOK;
    before_tile(tt, j0);
    load_x_ring<NKB, XSLOTS>(xr, tmX, s_x, bars, j0, tt.i, tt.b);
  }
}

// The x tile of this CTA's v-th token tile into buffer v % NXBUF (NKB boxes of 64 channels x 128
// tokens of the 4D map tmX at token `tok`, row `row`, batch `b`), as soon as the consumers have
// released the tile that used the buffer before.
template <int NKB, int NXBUF, int XBYTES>
__device__ __forceinline__ void load_x_tile(int v, const CUtensorMap* tmX, uint32_t s_x, const RingBars& bars,
                                            int tok, int row, int b) {
  const int buf = v % NXBUF;
  mbar_wait(bars.xempty(buf), ((v / NXBUF) & 1) ^ 1u);
  mbar_arrive_expect_tx(bars.xfull(buf), XBYTES);
#pragma unroll
  for (int kb = 0; kb < NKB; ++kb)
    tma_load_4d(s_x + buf * XBYTES + kb * proj::KB_BYTES, tmX, kb * 64, tok, row, b, bars.xfull(buf));
}

// ------------------------------------------------------------------ consumers: LayerNorm'd A
// K-major operand with 128B swizzle (TMA's and wgmma's layout): rows of 128 B (64 bf16), 8-row
// groups of 1024 B; the 16-byte chunk c of row r sits at chunk position c ^ (r % 8).
__device__ __forceinline__ uint32_t swz128(uint32_t tile, int row, int chunk) {
  return tile + (uint32_t)row * 128u + ((uint32_t)(chunk ^ (row & 7)) << 4);
}

// LayerNorm of 16 token rows (row0 .. row0 + 15 of a TMA-written x tile: NKB k-blocks of 128 rows
// x 128 B, 128B swizzle) straight into wgmma A fragments: af[s] covers channels 16 s .. 16 s + 15.
// Two-pass fp32 statistics and y = (v - mean) * rstd * w + b, rounded to bf16.
// Thread (g = lane / 4, t = lane % 4) holds rows g and g + 8, channels 16 s + 2 t + {0, 1, 8, 9}:
// a row is spread over the 4 threads of a quad.
// load_frags: the raw rows into af (bf16, the A-fragment layout); normalize_frags: LayerNorm in place.
template <int D>
__device__ __forceinline__ void load_frags(uint32_t (&af)[D / 16][4], uint32_t xtile, int row0, int lane) {
  const int r = row0 + (lane & 15);
#pragma unroll
  for (int s = 0; s < D / 16; ++s) {
    // lanes 0-15: rows row0.., chunk 2 (s % 4); lanes 16-31: the next chunk (channels + 8)
    ldsm_x4(af[s], swz128(xtile + (uint32_t)(s >> 2) * proj::KB_BYTES, r, 2 * (s & 3) + (lane >> 4)));
  }
}
// The LayerNorm's pieces on one A fragment (channels 16 s .. 16 s + 15 of rows g and g + 8 of the
// warp's 16: a[0], a[2] row g, a[1], a[3] row g + 8): its row sums, its squared deviations from
// the row means, and the normalisation in place (c = 16 s + 2 (lane % 4): the fragment's first
// channel of this lane). The four lanes of a row (lane % 4) hold a row's fragments between them:
// quad_sum adds their partial sums.
__device__ __forceinline__ void frag_sums(const uint32_t (&a)[4], float& s0, float& s1) {
  s0 += (bf16_lo(a[0]) + bf16_hi(a[0])) + (bf16_lo(a[2]) + bf16_hi(a[2]));
  s1 += (bf16_lo(a[1]) + bf16_hi(a[1])) + (bf16_lo(a[3]) + bf16_hi(a[3]));
}
__device__ __forceinline__ void frag_sq_devs(const uint32_t (&a)[4], float m0, float m1, float& q0, float& q1) {
  float d;
  d = bf16_lo(a[0]) - m0; q0 += d * d;
  d = bf16_hi(a[0]) - m0; q0 += d * d;
  d = bf16_lo(a[2]) - m0; q0 += d * d;
  d = bf16_hi(a[2]) - m0; q0 += d * d;
  d = bf16_lo(a[1]) - m1; q1 += d * d;
  d = bf16_hi(a[1]) - m1; q1 += d * d;
  d = bf16_lo(a[3]) - m1; q1 += d * d;
  d = bf16_hi(a[3]) - m1; q1 += d * d;
}
__device__ __forceinline__ void frag_normalize(uint32_t (&a)[4], int c, float m0, float r0, float m1, float r1,
                                               const float* gw, const float* gb) {
  const float2 w0 = *reinterpret_cast<const float2*>(gw + c), b0 = *reinterpret_cast<const float2*>(gb + c);
  const float2 w1 = *reinterpret_cast<const float2*>(gw + c + 8), b1 = *reinterpret_cast<const float2*>(gb + c + 8);
  const uint32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
  a[0] = pack_bf16x2((bf16_lo(a0) - m0) * r0 * w0.x + b0.x, (bf16_hi(a0) - m0) * r0 * w0.y + b0.y);
  a[1] = pack_bf16x2((bf16_lo(a1) - m1) * r1 * w0.x + b0.x, (bf16_hi(a1) - m1) * r1 * w0.y + b0.y);
  a[2] = pack_bf16x2((bf16_lo(a2) - m0) * r0 * w1.x + b1.x, (bf16_hi(a2) - m0) * r0 * w1.y + b1.y);
  a[3] = pack_bf16x2((bf16_lo(a3) - m1) * r1 * w1.x + b1.x, (bf16_hi(a3) - m1) * r1 * w1.y + b1.y);
}
__device__ __forceinline__ void quad_sum(float& v0, float& v1) {
  v0 += __shfl_xor_sync(0xffffffffu, v0, 1);
  v1 += __shfl_xor_sync(0xffffffffu, v1, 1);
  v0 += __shfl_xor_sync(0xffffffffu, v0, 2);
  v1 += __shfl_xor_sync(0xffffffffu, v1, 2);
}

// The rest of a LayerNorm over the KS fragments of a warp's 16 rows once their row sums s0, s1
// (this lane's part) are in: the quad sums, the means, the squared deviations, the reciprocal
// standard deviations, then each fragment normalised. load(s, t) puts fragment s in t (read
// twice: for the deviations, then to normalise), store(s, t) takes it normalised. normalize_frags
// (fragments in registers) and ln_in_frags_ring_split (some of them in shared memory) are this
// with their own places, so their arithmetic and its order are the same.
template <int D, typename Load, typename Store>
__device__ __forceinline__ void ln_finish(float s0, float s1, Load&& load, Store&& store, int lane, const float* gw,
                                          const float* gb, float eps) {
  constexpr int KS = D / 16;
  quad_sum(s0, s1);
  const float m0 = s0 * (1.0f / D), m1 = s1 * (1.0f / D);
  float q0 = 0.f, q1 = 0.f;
  uint32_t t[4];
#pragma unroll
  for (int s = 0; s < KS; ++s) {
    load(s, t);
    frag_sq_devs(t, m0, m1, q0, q1);
  }
  quad_sum(q0, q1);
  const float r0 = rsqrtf(q0 * (1.0f / D) + eps), r1 = rsqrtf(q1 * (1.0f / D) + eps);
  const int t2 = 2 * (lane & 3);
#pragma unroll
  for (int s = 0; s < KS; ++s) {
    load(s, t);
    frag_normalize(t, 16 * s + t2, m0, r0, m1, r1, gw, gb);
    store(s, t);
  }
}

template <int D>
__device__ __forceinline__ void normalize_frags(uint32_t (&af)[D / 16][4], int lane, const float* gw, const float* gb,
                                                float eps) {
  float s0 = 0.f, s1 = 0.f;  // row g, row g + 8
#pragma unroll
  for (int s = 0; s < D / 16; ++s) frag_sums(af[s], s0, s1);
  ln_finish<D>(
      s0, s1,
      [&](int s, uint32_t(&t)[4]) {
#pragma unroll
        for (int e = 0; e < 4; ++e) t[e] = af[s][e];
      },
      [&](int s, const uint32_t(&t)[4]) {
#pragma unroll
        for (int e = 0; e < 4; ++e) af[s][e] = t[e];
      },
      lane, gw, gb, eps);
}

// LN_in of this warp's 16 tokens of the u-th tile (rows 64 cw + 16 warp .. of its x tile in
// buffer u % NXBUF, once the tile has landed) into the A fragments af; returns the buffer. The
// caller releases it (xempty) when it has read what it needs.
template <int D, int NXBUF, int XBYTES>
__device__ __forceinline__ int ln_in_frags(uint32_t (&af)[D / 16][4], int u, const RingBars& bars, uint32_t s_x,
                                           int cw, int warp, int lane, const float* lnw, const float* lnb,
                                           float eps) {
  const int buf = u % NXBUF;
  mbar_wait(bars.xfull(buf), (u / NXBUF) & 1);
  load_frags<D>(af, s_x + buf * XBYTES, 64 * cw + 16 * warp, lane);
  normalize_frags<D>(af, lane, lnw, lnb, eps);
  return buf;
}
// Walks this warp's rows of a tile's NKB k-blocks in the x ring: waits for each next slot (xr),
// calls take(s, addr) for every A fragment s (< D / 16) of the k-block, addr being where ldmatrix
// reads it, and releases the slot as soon as the warp has taken it (the __syncwarp also orders
// what take wrote to shared memory before the warp's later reads of it). Before the release every
// lane fences its reads of the slot against the async proxy: the producer's next TMA into the
// slot is an async-proxy write, which the mbarrier's release alone does not order after
// ldmatrix's generic-proxy reads (a write-after-read across proxies). An ldmatrix does not wait
// for its data, so without the fence the release can overtake reads still queued behind the
// epilogue's stores, and a tile's first tokens are read from the next tile's x: the cp = 4
// peer-route differences of 2026-12-06 had exactly that shape (native/NOTES-gpu.md).
template <int D, int XSLOTS, typename Take>
__device__ __forceinline__ void walk_x_ring(RingPos<XSLOTS>& xr, const RingBars& bars, uint32_t s_x, int r, int lane,
                                            Take&& take) {
#pragma unroll
  for (int kb = 0; kb < (D + 63) / 64; ++kb) {
    mbar_wait(bars.xfull(xr.slot), xr.phase);
    const uint32_t tile = s_x + (uint32_t)xr.slot * proj::KB_BYTES;
#pragma unroll
    for (int s4 = 0; s4 < 4; ++s4)
      if (4 * kb + s4 < D / 16) take(4 * kb + s4, swz128(tile, r, 2 * s4 + (lane >> 4)));
    fence_proxy_async_smem();  // this lane's reads of the slot, before the TMA that refills it
    __syncwarp();
    if (lane == 0) mbar_arrive(bars.xempty(xr.slot));
    xr.next();
  }
}
// The same from the x ring: the tile's NKB k-blocks are taken from the next NKB slots (xr), each
// slot released by this warp as soon as its rows are in registers; then the LayerNorm. lnw / lnb
// may be global or shared.
template <int D, int XSLOTS>
__device__ __forceinline__ void ln_in_frags_ring(uint32_t (&af)[D / 16][4], RingPos<XSLOTS>& xr, const RingBars& bars,
                                                 uint32_t s_x, int cw, int warp, int lane, const float* lnw,
                                                 const float* lnb, float eps) {
  walk_x_ring<D>(xr, bars, s_x, 64 * cw + 16 * warp + (lane & 15), lane,
                 [&](int s, uint32_t addr) { ldsm_x4(af[s], addr); });
  normalize_frags<D>(af, lane, lnw, lnb, eps);
}

// As ln_in_frags_ring, keeping only channels 0 .. KR - 1 in registers (af): channels KR .. D - 1
// of this warp's 16 rows go to the warpgroup's rows of `s_tail` (k-blocks of 64 channels x 128
// rows, 128B swizzle: the layout TMA gives x and wgmma reads through a descriptor), written by
// stmatrix at the addresses ldmatrix reads them from. The tail passes through a few registers at a
// time: raw into s_tail with the row sums, read back for the squared deviations, and once more
// to be normalised in place; the arithmetic and its order are normalize_frags's over all D
// channels. The caller fences (async proxy) and syncs the warpgroup before its wgmmas read the
// tail. Above D = 256 the whole LN_in(x) in registers beside the accumulators outgrows the
// consumers' 232 registers (ptxas spills, and serializes the wgmmas from D = 320); this keeps the
// chunk loop's registers those of D = 256.
template <int D, int KR, int XSLOTS>
__device__ __forceinline__ void ln_in_frags_ring_split(uint32_t (&af)[KR / 16][4], RingPos<XSLOTS>& xr,
                                                       const RingBars& bars, uint32_t s_x, uint32_t s_tail, int cw,
                                                       int warp, int lane, const float* lnw, const float* lnb,
                                                       float eps) {
  static_assert(KR % 64 == 0 && KR < D, "the register part is whole k-blocks, the tail the rest");
  constexpr int KSR = KR / 16;
  const int r = 64 * cw + 16 * warp + (lane & 15);
  // fragment s of the tail (s >= KSR): where ldmatrix reads it from an x slot, relative to the tail
  auto tail_at = [&](int s) {
    return swz128(s_tail + (uint32_t)((s - KSR) >> 2) * proj::KB_BYTES, r, 2 * ((s - KSR) & 3) + (lane >> 4));
  };
  float s0 = 0.f, s1 = 0.f;  // row g, row g + 8
  // (walk_x_ring's __syncwarp also orders the tail's stmatrix before this warp's ldmatrix of it below)
  walk_x_ring<D>(xr, bars, s_x, r, lane, [&](int s, uint32_t addr) {
    if (s < KSR) {
      ldsm_x4(af[s], addr);
      frag_sums(af[s], s0, s1);
    } else {
      uint32_t t[4];
      ldsm_x4(t, addr);
      frag_sums(t, s0, s1);
      stsm_x4(tail_at(s), t);
    }
  });
  ln_finish<D>(
      s0, s1,
      [&](int s, uint32_t(&t)[4]) {
        if (s < KSR) {
#pragma unroll
          for (int e = 0; e < 4; ++e) t[e] = af[s][e];
        } else {
          ldsm_x4(t, tail_at(s));
        }
      },
      [&](int s, const uint32_t(&t)[4]) {
        if (s < KSR) {
#pragma unroll
          for (int e = 0; e < 4; ++e) af[s][e] = t[e];
        } else {
          __syncwarp();  // every lane's rows are read before any lane overwrites them
          stsm_x4(tail_at(s), t);
        }
      },
      lane, lnw, lnb, eps);
}

// The wgmma descriptor of warpgroup cw's 64 rows of the tail (8 KiB into each of its k-blocks),
// and that of its k16 step t: a constant offset (>> 4) from the first.
__device__ __forceinline__ uint64_t tail_desc(uint32_t s_tail, int cw) {
  return smem_desc(s_tail + (uint32_t)(cw * proj::WG_KB_BYTES), 16u, 1024u);
}
__device__ __forceinline__ uint64_t tail_step(uint64_t da_tail, int t) {
  return da_tail + (uint64_t)(((t >> 2) * proj::KB_BYTES + (t & 3) * 32) >> 4);
}

// ------------------------------------------------------------------ consumers: chunks
// Ping-pong between the two consumer warpgroups: warpgroup 0 issues its n-th chunk after
// warpgroup 1 issued its (n - 1)-th, warpgroup 1 its n-th after warpgroup 0 issued its n-th. So
// their chunks reach the tensor cores alternately, and one's epilogue overlaps the other's MMAs.
// (Each barrier sees 128 arrivals from one warpgroup's turn_pass and 128 from the other's wait.)
__device__ __forceinline__ void turn_wait(int cw, int issued) {
  if (cw == 1 || issued > 0) bar_sync(proj::BAR_TURN + cw, 256);
}
__device__ __forceinline__ void turn_pass(int cw) { bar_arrive(proj::BAR_TURN + (cw ^ 1), 256); }
// Warpgroup 1's last turn_pass has no matching wait: take it, so no barrier is left half-arrived.
__device__ __forceinline__ void turn_finish(int cw, int issued) {
  if (cw == 0 && issued > 0) bar_sync(proj::BAR_TURN + 0, 256);
}

// A consumer warpgroup's place in the weight ring and the number of chunks it has issued.
template <int STAGES>
struct ChunkRing {
  RingPos<STAGES> w;
  int issued = 0;
};

// Issues the MMAs of the next weight chunk in this warpgroup's turn: for each of its NKB k-blocks,
// waits until the slot has landed, calls mma(kb, slot address) and commits one wgmma group.
// Returns the chunk's first slot, for release_chunk.
template <int NKB, int STAGES, int SLOT = proj::W_STAGE, typename Mma>
__device__ __forceinline__ int issue_chunk(int cw, ChunkRing<STAGES>& r, const RingBars& bars, uint32_t s_w,
                                           Mma&& mma) {
  turn_wait(cw, r.issued);
  // Orders the A-fragment writes (LayerNorm) and the accumulator reads (last epilogue) before the
  // wgmmas that read / overwrite them.
  wgmma_fence();
  const int ws0 = r.w.slot;
#pragma unroll
  for (int kb = 0; kb < NKB; ++kb) {
    mbar_wait(bars.wfull(r.w.slot), r.w.phase);
    mma(kb, s_w + r.w.slot * SLOT);
    wgmma_commit();
    r.w.next();
  }
  turn_pass(cw);
  ++r.issued;
  return ws0;
}

// Releases each weight slot of the chunk issued from ws0 as soon as its k-block's wgmma group is
// complete (groups complete in order); afterwards every MMA of the chunk is complete. LATER: the
// wgmma groups committed after the chunk's (a chunk issued ahead), which may stay pending.
template <int NKB, int STAGES, int LATER = 0>
__device__ __forceinline__ void release_chunk(int ws0, const RingBars& bars, int lane) {
#pragma unroll
  for (int kb = 0; kb < NKB; ++kb) {
    wgmma_wait_upto(LATER + NKB - 1 - kb);
    if (lane == 0) {
      int sl = ws0 + kb;
      if (sl >= STAGES) sl -= STAGES;
      mbar_arrive(bars.wempty(sl));
    }
  }
}

// Empty asm that "modifies" the accumulators: placed after the last wgmma.wait_group of a chunk,
// it keeps the compiler from hoisting the epilogue's reads of them above the wait (the wait asm
// itself names no registers). No instruction is emitted.
template <int N>
__device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) asm volatile("" : "+f"(d[k])::"memory");
}

// ------------------------------------------------------------------ host side
// 4D map over tokens (B, rows, cols, D) bf16: boxes of 64 channels x box_tokens tokens.
inline cudaError_t encode_tokens(CUtensorMap* m, const void* base, int D, int64_t cols, int64_t rows, int64_t B,
                                 uint32_t box_tokens) {
  const cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)cols, (cuuint64_t)rows, (cuuint64_t)B};
  const cuuint64_t strides[3] = {(cuuint64_t)D * 2, (cuuint64_t)cols * D * 2, (cuuint64_t)rows * cols * D * 2};
  const cuuint32_t box[4] = {64, box_tokens, 1, 1};
  return encode_bf16(m, base, 4, dims, strides, box);
}
// 2D map over a weight matrix [rows][D] bf16: boxes of 64 k x box_rows rows (one ring slot; rows
// past the matrix are zero-filled).
inline cudaError_t encode_weights(CUtensorMap* m, const void* w, int D, int rows, uint32_t box_rows = 128) {
  const cuuint64_t dims[2] = {(cuuint64_t)D, (cuuint64_t)rows};
  const cuuint64_t strides[1] = {(cuuint64_t)D * 2};
  const cuuint32_t box[2] = {64, box_rows};
  return encode_bf16(m, w, 2, dims, strides, box);
}

// Launches the persistent kernel K on min(total, SM count) CTAs of proj::THREADS threads with
// `smem` bytes of dynamic shared memory, after raising its limit (once per device).
template <auto K, typename... Args>
cudaError_t launch_persistent(int smem, int64_t total, cudaStream_t s, const Args&... args) {
  int dev = 0, sms = 0;
  cudaError_t e = sm_count(&dev, &sms);
  if (e != cudaSuccess) return e;
  e = raise_smem_once<K>(smem, dev);
  if (e != cudaSuccess) return e;
  const int grid = (int)(total < sms ? total : sms);
  K<<<grid, proj::THREADS, smem, s>>>(args...);
  return cudaGetLastError();
}
// Raises K's shared-memory limit on the current device (what launch_persistent does first).
template <auto K>
cudaError_t prepare_on_current_device(int smem) {
  int dev = 0;
  const cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  return raise_smem_once<K>(smem, dev);
}

// Calls f(std::integral_constant<int, D>{}) for D = dim, one of the widths the projection kernels
// are instantiated for (the multiples of 32 in [32, MAX]; MAX = kMaxWidth, as the C API allows);
// any other width gets cudaErrorInvalidValue.
template <int MAX = kMaxWidth, int W = 32, typename F>
cudaError_t with_dim(int dim, F&& f) {
  static_assert(MAX <= kMaxWidth && MAX % 32 == 0, "widths are multiples of 32 up to kMaxWidth");
  if constexpr (W > MAX) {
    return cudaErrorInvalidValue;
  } else {
    if (dim == W) return f(std::integral_constant<int, W>{});
    return with_dim<MAX, W + 32>(dim, f);
  }
}
// f(D, H) as integral constants: every pair of widths up to MAX (stage 3 is a template of both).
template <int MAX = kMaxWidth, typename F>
cudaError_t with_dims(int dim, int hidden, F&& f) {
  return with_dim<MAX>(dim, [&](auto d) { return with_dim<MAX>(hidden, [&](auto h) { return f(d, h); }); });
}

}  // namespace foldcp
