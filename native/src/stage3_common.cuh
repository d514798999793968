// What the stage 3 kernels share (stage3_proj_out.cu, the fused one for D, H <= 256;
// stage3_resident.cu; stage3_wide.cuh for wider pairs up to 384, stage3_split.cuh above): LN_out of a tile's z into the shared-memory A_z tile,
// and the producer's L2 prefetches of a tile's z rows and x.
#pragma once
#include <climits>
#include <cstdint>

#include "common.cuh"
#include "pipeline.cuh"
#include "trimul_internal.h"
#include "wgmma_common.cuh"

namespace foldcp {

// The sums of a token pair's two rows over the 4 quarters of their channels (lanes l, l ^ 8,
// l ^ 16, l ^ 24 hold the same pair).
__device__ __forceinline__ void sum_quarters(float& s0, float& s1) {
  s0 += __shfl_xor_sync(0xffffffffu, s0, 8);
  s1 += __shfl_xor_sync(0xffffffffu, s1, 8);
  s0 += __shfl_xor_sync(0xffffffffu, s0, 16);
  s1 += __shfl_xor_sync(0xffffffffu, s1, 16);
}

// The 16-byte chunk of A_z (tile s_az) that holds channels 32 uu + 8 q .. + 7 of tile row r:
// k-block uu / 2, chunk 4 (uu % 2) + q of the 128-byte row.
__device__ __forceinline__ uint32_t az_chunk(uint32_t s_az, int uu, int r, int q) {
  return swz128(s_az + (uint32_t)(uu >> 1) * proj::KB_BYTES, r, 4 * (uu & 1) + q);
}
__device__ __forceinline__ void st_shared_v4(uint32_t a, const uint32_t (&v)[4]) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
               : "memory");
}
__device__ __forceinline__ void ld_shared_v4(uint32_t a, uint32_t (&v)[4]) {
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]) : "r"(a)
               : "memory");
}

// The order in which a thread takes its token pair (tile rows row, row + 1; row even). The 8 lanes
// of a quarter-warp phase of a 16-byte access hold rows base + 2 l (l < 8), whose row % 8 repeats
// after 4 lanes: with every lane taking row first, two lanes of a phase hit the same swizzled
// chunk of A_z (2-way bank conflicts, ncu). Lanes 4..7 (row & 8) take row + 1 first instead, so a
// phase touches 8 rows that differ mod 8. "First" (r0) and "second" (r1) name the tokens in that
// order; each token's arithmetic is the same whichever it is, so the results do not change.
struct PairOrder {
  int r0;       // the tile row of the first token (the second's is r0 ^ 1)
  uint32_t lo;  // the __byte_perm selector that takes the first token's value from a bf16x2 word
                // (row's token in the low half, row + 1's in the high) as fp32 bits
  __device__ __forceinline__ explicit PairOrder(int row) {
    const bool swap = (row & 8) != 0;
    r0 = swap ? row + 1 : row;
    lo = swap ? 0x3244u : 0x1044u;
  }
  __device__ __forceinline__ int r1() const { return r0 ^ 1; }
  __device__ __forceinline__ float first(uint32_t w) const { return __uint_as_float(__byte_perm(w, 0u, lo)); }
  __device__ __forceinline__ float second(uint32_t w) const {
    return __uint_as_float(__byte_perm(w, 0u, lo ^ 0x2200u));
  }
};

// f(z of the first token, z of the second) for each channel 32 uu + 8 q + e of the thread's places
// in the A_z tile (token-major), in ln_out_staged's order (uu, then e).
template <int H, typename F>
__device__ __forceinline__ void each_staged_value(uint32_t s_az, const PairOrder& po, int q, F&& f) {
#pragma unroll
  for (int uu = 0; uu < H / 32; ++uu) {
    uint32_t t0[4], t1[4];
    ld_shared_v4(az_chunk(s_az, uu, po.r0, q), t0);
    ld_shared_v4(az_chunk(s_az, uu, po.r1(), q), t1);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      f((e & 1) ? bf16_hi(t0[e >> 1]) : bf16_lo(t0[e >> 1]), (e & 1) ? bf16_hi(t1[e >> 1]) : bf16_lo(t1[e >> 1]));
  }
}

// The rest of ln_out_staged once the raw z of the thread's token pair (channels 32 uu + 8 q .. + 7)
// is in its places of the A_z tile (token-major) and summed (sum0 the first token's, sum1 the
// second's, in po's order; not yet reduced over the quarters): the variance and the normalization,
// from and into those places.
template <int H>
__device__ __forceinline__ void ln_out_staged_finish(float sum0, float sum1, const float* lnow, const float* lnob,
                                                     float eps, uint32_t s_az, const PairOrder& po, int q) {
  constexpr int UU = H / 32;
  sum_quarters(sum0, sum1);
  const float mean0 = sum0 * (1.0f / H), mean1 = sum1 * (1.0f / H);
  float sq0 = 0.f, sq1 = 0.f;
  each_staged_value<H>(s_az, po, q, [&](float z0, float z1) {
    const float d0 = z0 - mean0, d1 = z1 - mean1;
    sq0 += d0 * d0;
    sq1 += d1 * d1;
  });
  sum_quarters(sq0, sq1);
  const float rstd0 = rsqrtf(sq0 * (1.0f / H) + eps), rstd1 = rsqrtf(sq1 * (1.0f / H) + eps);
#pragma unroll
  for (int uu = 0; uu < UU; ++uu) {
    const int c0 = 32 * uu + 8 * q;
    const uint32_t a0 = az_chunk(s_az, uu, po.r0, q), a1 = az_chunk(s_az, uu, po.r1(), q);
    uint32_t t0[4], t1[4];
    ld_shared_v4(a0, t0);
    ld_shared_v4(a1, t1);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 w = *reinterpret_cast<const float2*>(lnow + c0 + 2 * e);
      const float2 bb = *reinterpret_cast<const float2*>(lnob + c0 + 2 * e);
      t0[e] = pack_bf16x2((bf16_lo(t0[e]) - mean0) * rstd0 * w.x + bb.x, (bf16_hi(t0[e]) - mean0) * rstd0 * w.y + bb.y);
      t1[e] = pack_bf16x2((bf16_lo(t1[e]) - mean1) * rstd1 * w.x + bb.x, (bf16_hi(t1[e]) - mean1) * rstd1 * w.y + bb.y);
    }
    st_shared_v4(a0, t0);
    st_shared_v4(a1, t1);
  }
}

// LN_out for H above kFusedOutMax, where a token pair's H / 4 values no longer fit in registers
// beside the rest of the kernel (the wide kernel, the split P kernel): the raw z goes into the thread's own places of the A_z tile
// 256 channels at a time (64 registers) while it is summed, and the variance and the normalization
// read it back from there (each thread only its own chunks: no synchronization). The arithmetic
// is that of ln_out_to_tile, in the same order.
template <int H>
__device__ __forceinline__ void ln_out_staged(const bf16_raw* zp, long long sz, bool valid0, bool valid1,
                                              const float* lnow, const float* lnob, float eps, uint32_t s_az,
                                              int row, int q) {
  constexpr int UU = H / 32, PU = 8;
  const PairOrder po(row);
  const uint32_t keep = valid1 ? 0xffffffffu : valid0 ? 0x0000ffffu : 0u;
  float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
  for (int p = 0; p < (UU + PU - 1) / PU; ++p) {
    uint32_t v[PU][8];
#pragma unroll
    for (int ul = 0; ul < PU; ++ul)
      if (p * PU + ul < UU) {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          v[ul][e] = __ldcs(reinterpret_cast<const unsigned int*>(zp));
          zp += sz;
        }
        zp += 24 * sz;
      }
#pragma unroll
    for (int ul = 0; ul < PU; ++ul) {
      const int uu = p * PU + ul;
      if (uu >= UU) continue;
      uint32_t t0[4], t1[4];  // the first and the second token: channel pairs (2e, 2e + 1)
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        v[ul][e] &= keep;
        sum0 += po.first(v[ul][e]);
        sum1 += po.second(v[ul][e]);
      }
      // (the low halves of two words are row's token: 0x5410; the high halves row + 1's: 0x7632)
      const uint32_t sel0 = po.r0 == row ? 0x5410u : 0x7632u, sel1 = sel0 ^ 0x2222u;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        t0[e] = __byte_perm(v[ul][2 * e], v[ul][2 * e + 1], sel0);
        t1[e] = __byte_perm(v[ul][2 * e], v[ul][2 * e + 1], sel1);
      }
      st_shared_v4(az_chunk(s_az, uu, po.r0, q), t0);
      st_shared_v4(az_chunk(s_az, uu, po.r1(), q), t1);
    }
  }
  ln_out_staged_finish<H>(sum0, sum1, lnow, lnob, eps, s_az, po, q);
}
// LN_out(z) -> this warpgroup's 64 rows of the A_z tile (its previous wgmmas must be complete).
// Thread = (token pair 64 cw + 16 warp + 2 (lane % 8) + {0, 1}, quarter q = lane / 8) holds
// channels 32 uu + 8 q + e (e < 8) of both tokens: one 4-byte load per channel brings the pair
// (z is bf16, channel-major), so one load instruction reads 16 consecutive tokens (one 32-byte
// sector) of 4 channels, and all H / 4 loads are issued before any is reduced (the LN_out
// loads were the largest stall of this kernel in ncu). H / 4 registers.
// z: the (B, H) planes (plane stride sz, row stride ldz) of tile (b, i, j0 ..), jvalid of its 128
// tokens valid; lnow / lnob (H floats) may be shared or global; s_az: the A_z tile (128 rows,
// k-blocks of 64 channels, 128B swizzle). The caller fences (async proxy) and synchronizes the
// warpgroup before wgmma reads the tile.
// In two halves up to kFusedOutMax: ln_out_load issues the loads into a ZPair, ln_out_store reduces
// and writes it, so that a caller can load the next tile's z while this tile's MMAs run.
template <int H>
struct ZPair {
  uint32_t v[H / 32][8];  // channel pairs of the thread's two tokens
  uint32_t keep;          // the tokens' validity as a mask of each pair's halves
};
__device__ __forceinline__ int ln_out_row(int cw, int warp, int lane) { return 64 * cw + 16 * warp + 2 * (lane & 7); }
// A thread's token pair of the tile and where its z starts (both forms of LN_out read it so).
struct ZThread {
  int row, q;           // the pair's first tile row, the quarter of the channels
  bool valid0, valid1;  // the pair's tokens lie inside the tile's valid ones
  const bf16_raw* zp;   // channel 8 q of the first token (of row 0 when neither is valid)
};
template <int H>
__device__ __forceinline__ ZThread ln_out_thread(const bf16_raw* __restrict__ z, int b, int i, int j0, int jvalid,
                                                 long long ldz, long long sz, int cw, int warp, int lane) {
  ZThread t;
  t.row = ln_out_row(cw, warp, lane);
  t.q = lane >> 3;
  // The pair is read whole even when only its first token is valid (odd cols): the second
  // is then a padding column of the same z row (ldz >= cols + 1, checked on the host) and is
  // zeroed after the loads, as are pairs past the tile's valid tokens.
  t.valid0 = t.row < jvalid;
  t.valid1 = t.row + 1 < jvalid;
  // One pointer walked channel by channel: a 64-bit add per load, where computing each of the
  // H / 4 addresses from the plane stride took about 8 instructions (ncu).
  t.zp = z + (int64_t)b * H * sz + (int64_t)i * ldz + j0 + (t.valid0 ? t.row : 0) + (int64_t)(8 * t.q) * sz;
  return t;
}
template <int H>
__device__ __forceinline__ void ln_out_load(ZPair<H>& zr, const bf16_raw* __restrict__ z, int b, int i, int j0,
                                            int jvalid, long long ldz, long long sz, int cw, int warp, int lane) {
  const ZThread th = ln_out_thread<H>(z, b, i, j0, jvalid, ldz, sz, cw, warp, lane);
  const bool valid0 = th.valid0, valid1 = th.valid1;
  const bf16_raw* zp = th.zp;
#pragma unroll
  for (int uu = 0; uu < H / 32; ++uu) {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      zr.v[uu][e] = __ldcs(reinterpret_cast<const unsigned int*>(zp));
      zp += sz;
    }
    zp += 24 * sz;
  }
  zr.keep = valid1 ? 0xffffffffu : valid0 ? 0x0000ffffu : 0u;
}
// As ln_out_load, from the raw z that the producer's TMA put in this warpgroup's rows of the A_z
// tile (the z thread of proj_out_wgmma_kernel: per k-block kb, channels 64 kb .. 64 kb + 63 as
// 128-byte rows of the warpgroup's 64 tokens, 128B swizzle, at kb's block + cw WG_KB_BYTES).
// Tokens past cols arrive zero-filled, as the masks of ln_out_load make them, except in a
// warpgroup whose tokens all lie past cols: its box starts earlier (the last 16-byte aligned
// token before cols) and its rows hold real z, which no stored output reads. The caller
// synchronizes the warpgroup before ln_out_store overwrites these rows with LN_out(z).
template <int H>
__device__ __forceinline__ void ln_out_load_smem(ZPair<H>& zr, uint32_t s_az, int cw, int warp, int lane) {
  const int t = 16 * warp + 2 * (lane & 7);  // the pair's first token of the warpgroup's 64
  const int q = lane >> 3;
  // Load e of a 32-channel group reads channel 8 q + (e + 2 q) % 8, not 8 q + e: the four quarters
  // then read rows 2 apart mod 8, which the 128B swizzle puts in four different chunk pairs of the
  // 128-byte row, so a warp's load is one wavefront (in channel order: four, all quarters in the
  // same chunks; ncu). The rotation is undone in registers below.
  const uint32_t base = s_az + (uint32_t)(cw * proj::WG_KB_BYTES) + (uint32_t)((2 * t) & 15) + (uint32_t)(8 * q) * 128u;
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const int er = (e + 2 * q) & 7;
    const uint32_t off = swz128(base, er, t >> 3);
#pragma unroll
    for (int uu = 0; uu < H / 32; ++uu) {
      const uint32_t a = off + (uint32_t)(uu >> 1) * proj::KB_BYTES + (uint32_t)(32 * (uu & 1)) * 128u;
      asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(zr.v[uu][e]) : "r"(a));
    }
  }
  // Back to channel order (v[uu][e] = channel 32 uu + 8 q + e, as ln_out_load leaves it): a rotation
  // by 2 q places, done as one by 2 where q is odd and one by 4 where q & 2, one group at a time.
  const bool r2 = (q & 1) != 0, r4 = (q & 2) != 0;
#pragma unroll
  for (int uu = 0; uu < H / 32; ++uu) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {  // by 4: swap e and e + 4
      const uint32_t a = zr.v[uu][e], b = zr.v[uu][e + 4];
      zr.v[uu][e] = r4 ? b : a;
      zr.v[uu][e + 4] = r4 ? a : b;
    }
    uint32_t w[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) w[e] = r2 ? zr.v[uu][(e + 6) & 7] : zr.v[uu][e];
#pragma unroll
    for (int e = 0; e < 8; ++e) zr.v[uu][e] = w[e];
  }
  zr.keep = 0xffffffffu;
}
template <int H>
__device__ __forceinline__ void ln_out_store(ZPair<H>& zr, const float* lnow, const float* lnob, float eps,
                                             uint32_t s_az, int cw, int warp, int lane) {
  const PairOrder po(ln_out_row(cw, warp, lane));
  const int q = lane >> 3;
  auto& v = zr.v;
#pragma unroll
  for (int uu = 0; uu < H / 32; ++uu)
#pragma unroll
    for (int e = 0; e < 8; ++e) v[uu][e] &= zr.keep;
  float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
  for (int uu = 0; uu < H / 32; ++uu)
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      sum0 += po.first(v[uu][e]);
      sum1 += po.second(v[uu][e]);
    }
  sum_quarters(sum0, sum1);
  const float mean0 = sum0 * (1.0f / H), mean1 = sum1 * (1.0f / H);
  float sq0 = 0.f, sq1 = 0.f;
#pragma unroll
  for (int uu = 0; uu < H / 32; ++uu)
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const float d0 = po.first(v[uu][e]) - mean0, d1 = po.second(v[uu][e]) - mean1;
      sq0 += d0 * d0;
      sq1 += d1 * d1;
    }
  sum_quarters(sq0, sq1);
  const float rstd0 = rsqrtf(sq0 * (1.0f / H) + eps), rstd1 = rsqrtf(sq1 * (1.0f / H) + eps);
#pragma unroll
  for (int uu = 0; uu < H / 32; ++uu) {
    const int c0 = 32 * uu + 8 * q;
    const float4 w0 = *reinterpret_cast<const float4*>(lnow + c0);
    const float4 w1 = *reinterpret_cast<const float4*>(lnow + c0 + 4);
    const float4 b0 = *reinterpret_cast<const float4*>(lnob + c0);
    const float4 b1 = *reinterpret_cast<const float4*>(lnob + c0 + 4);
    const float w[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
    const float bb[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
    uint32_t pk0[4], pk1[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      pk0[e] = pack_bf16x2((po.first(v[uu][2 * e]) - mean0) * rstd0 * w[2 * e] + bb[2 * e],
                           (po.first(v[uu][2 * e + 1]) - mean0) * rstd0 * w[2 * e + 1] + bb[2 * e + 1]);
      pk1[e] = pack_bf16x2((po.second(v[uu][2 * e]) - mean1) * rstd1 * w[2 * e] + bb[2 * e],
                           (po.second(v[uu][2 * e + 1]) - mean1) * rstd1 * w[2 * e + 1] + bb[2 * e + 1]);
    }
    // channels c0 .. c0 + 7 of both tokens
    st_shared_v4(az_chunk(s_az, uu, po.r0, q), pk0);
    st_shared_v4(az_chunk(s_az, uu, po.r1(), q), pk1);
  }
}
template <int H>
__device__ __forceinline__ void ln_out_to_tile(const bf16_raw* __restrict__ z, int b, int i, int j0, int jvalid,
                                               long long ldz, long long sz, const float* lnow, const float* lnob,
                                               float eps, uint32_t s_az, int cw, int warp, int lane) {
  if constexpr (H > kFusedOutMax) {
    const ZThread th = ln_out_thread<H>(z, b, i, j0, jvalid, ldz, sz, cw, warp, lane);
    ln_out_staged<H>(th.zp, sz, th.valid0, th.valid1, lnow, lnob, eps, s_az, th.row, th.q);
  } else {
    ZPair<H> zr;
    ln_out_load<H>(zr, z, b, i, j0, jvalid, ldz, sz, cw, warp, lane);
    ln_out_store<H>(zr, lnow, lnob, eps, s_az, cw, warp, lane);
  }
}

// As ln_out_staged, from the raw z that the producer's TMA put in this warpgroup's rows of the A_z
// tile (produce_z: per k-block kb, channels 64 kb .. 64 kb + 63 as 128-byte rows of the
// warpgroup's 64 tokens, channel-major, 128B swizzle; tokens past cols zero-filled): each 8 KiB
// block is first turned token-major in place, 8 x 8 matrices at a time (ldmatrix.trans of 8
// channel rows, stmatrix of the 8 token rows: the raw layout ln_out_staged stages), then summed in
// ln_out_staged's order, so the result is its bit for bit. Warp w moves channels 16 w .. 16 w +
// 15 of each block; the warpgroup synchronizes between a block's reads and its writes, and once
// more before the sums read rows other warps wrote.
template <int H>
__device__ __forceinline__ void ln_out_from_tma(const float* lnow, const float* lnob, float eps, uint32_t s_az,
                                                int cw, int warp, int lane) {
  constexpr int NKB = (H + 63) / 64;
  const int m = lane >> 3, r8 = lane & 7;
#pragma unroll 1
  for (int kb = 0; kb < NKB; ++kb) {
    const uint32_t blk = s_az + (uint32_t)kb * proj::KB_BYTES + (uint32_t)(cw * proj::WG_KB_BYTES);
    const bool half = 64 * kb + 16 * warp >= H;  // (H % 64 == 32: the last block's upper 32 channels)
    uint32_t v[4][4];
    // call k: matrices (channels 16 warp + 8 (k / 2) .., tokens 8 (4 (k % 2) + m) ..)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (!half) ldsm_x4_t(v[k], swz128(blk, 16 * warp + 8 * (k >> 1) + r8, 4 * (k & 1) + m));
    bar_sync(proj::BAR_WG + cw, 128);  // every warp's reads of the block are done
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (!half) stsm_x4(swz128(blk, 8 * (4 * (k & 1) + m) + r8, 2 * warp + (k >> 1)), v[k]);
  }
  bar_sync(proj::BAR_WG + cw, 128);  // the token-major rows are written before others read them
  const PairOrder po(ln_out_row(cw, warp, lane));
  const int q = lane >> 3;
  float sum0 = 0.f, sum1 = 0.f;
  each_staged_value<H>(s_az, po, q, [&](float z0, float z1) {
    sum0 += z0;
    sum1 += z1;
  });
  ln_out_staged_finish<H>(sum0, sum1, lnow, lnob, eps, s_az, po, q);
}

// The mbarriers of z by TMA, per consumer warpgroup c: full(c), the producer's arrival plus its TMA
// bytes; empty(c), the warpgroup's 4 warps once its last MMA of a tile has read A_z (release).
// They follow the rings' barriers in the kernel's static array (2 CONSUMERS more entries).
struct ZBars {
  uint32_t full0, empty0;
  __device__ __forceinline__ uint32_t full(int c) const { return full0 + 8 * c; }
  __device__ __forceinline__ uint32_t empty(int c) const { return empty0 + 8 * c; }
  // (one thread; init_ring_bars' fence and __syncthreads publish them with the rings')
  __device__ __forceinline__ void init() const {
    if (threadIdx.x == 0)
      for (int c = 0; c < proj::CONSUMERS; ++c) {
        mbar_init(full(c), 1);
        mbar_init(empty(c), 4);
      }
  }
  // Called by every lane of warpgroup cw after the tile's last release_chunk.
  __device__ __forceinline__ void release(int cw, int lane) const {
    if (lane == 0) mbar_arrive(empty(cw));
  }
};
__device__ __forceinline__ ZBars z_bars(uint64_t* first) {
  const uint32_t f = smem_u32(first);
  return ZBars{f, f + 8 * proj::CONSUMERS};
}

// The z producer (one thread): z of tile v into each consumer warpgroup's rows of A_z, once its
// last MMA of tile v - 1 has read them (zb.empty of the warpgroup, 4 arrivals: its warps after the
// tile's last release_chunk); zb.full gets the bytes. A warpgroup whose 64 tokens all lie past cols
// loads from the last 16-byte aligned token before cols (no box wholly outside z; those rows'
// outputs are not stored). A box's first token must be 16-byte aligned: one at cols - 1 stopped
// the thread with an illegal instruction (N = 8 and N = 130 on an H100).
template <int NKB_H>
__device__ __forceinline__ void produce_z(const CUtensorMap* tmZ, uint32_t s_az, const ZBars& zb, int n_local,
                                          int tiles_k, int rows, int cols) {
  tma_prefetch_map(tmZ);
  for (int v = 0; v < n_local; ++v) {
    const TokenTile tt = token_tile(v, tiles_k, rows);
    const int j0 = tt.kt * proj::TOK;
#pragma unroll
    for (int c = 0; c < proj::CONSUMERS; ++c) {
      mbar_wait(zb.empty(c), (v & 1) ^ 1u);
      mbar_arrive_expect_tx(zb.full(c), NKB_H * proj::WG_KB_BYTES);
#pragma unroll
      for (int kb = 0; kb < NKB_H; ++kb)
        tma_load_4d(s_az + kb * proj::KB_BYTES + c * proj::WG_KB_BYTES, tmZ, min(j0 + 64 * c, (cols - 1) & ~7), tt.i,
                    64 * kb, tt.b, zb.full(c));
    }
  }
}

// The stage 3 kernels' vectors in shared memory, from `first` on: LN_in w, b (D each), LN_out
// w, b (H each), then the epilogue's biases bp, bg (D each, halved for gate_half). Copied by the
// whole CTA; the caller's next __syncthreads publishes them.
struct OutVecs {
  float *lniw, *lnib, *lnow, *lnob, *bp, *bg;
};
template <int D, int H>
__device__ __forceinline__ OutVecs load_out_vecs(float* first, const float* __restrict__ lniw,
                                                 const float* __restrict__ lnib, const float* __restrict__ lnow,
                                                 const float* __restrict__ lnob, const float* __restrict__ pout_b,
                                                 const float* __restrict__ gout_b) {
  OutVecs v;
  v.lniw = first;
  v.lnib = v.lniw + D;
  v.lnow = v.lnib + D;
  v.lnob = v.lnow + H;
  v.bp = v.lnob + H;
  v.bg = v.bp + D;
  for (int c = threadIdx.x; c < D; c += proj::THREADS) {
    v.lniw[c] = lniw[c];
    v.lnib[c] = lnib[c];
    v.bp[c] = 0.5f * pout_b[c];
    v.bg[c] = 0.5f * gout_b[c];
  }
  for (int c = threadIdx.x; c < H; c += proj::THREADS) {
    v.lnow[c] = lnow[c];
    v.lnob[c] = lnob[c];
  }
  return v;
}

// ---- the k-block MMAs of a W3 chunk of 128 rows (64 output channels: proj_out_wgmma_kernel,
// proj_out_resident_kernel, the wide kernel where it fits) or 64 rows (32 output channels: the
// wide kernel elsewhere), 8-row groups alternating p_out, g_out; NACC = the rows / 4, each view's
// accumulators per thread (m64n64 or m64n32).
// p_out and g_out of k-block kb of a W3 chunk (its rows x 64 k at `slot`): two wgmma B views
// of the slot (descriptor stride 2048 B between 8-row groups, the g view starting 1024 B in), so
// p and g of a channel land in the same thread's registers; p over A_z (the warpgroup's rows:
// az_wg = the A_z tile + cw WG_KB_BYTES) by SS, g over LN_in(x)'s fragments by RS. Each view only
// over its own K (the rows are zero past it).
template <int KS_H, int KS, int NACC>
__device__ __forceinline__ void out_kblock_mmas(float (&accp)[NACC], float (&accg)[NACC], const uint32_t (&ax)[KS][4],
                                                uint32_t az_wg, uint32_t slot, int kb) {
  static_assert(NACC == 32 || NACC == 16, "W3 chunks of 128 or 64 rows");
  const uint64_t dp = smem_desc(slot, 16u, 2048u);          // p_out rows: 8-row groups 0, 2, 4, ...
  const uint64_t dg = smem_desc(slot + 1024u, 16u, 2048u);  // g_out rows: 8-row groups 1, 3, 5, ...
  const uint64_t da = smem_desc(az_wg + kb * proj::KB_BYTES, 16u, 1024u);
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {  // the conditions are compile-time after unrolling
    const uint64_t step = (uint64_t)((ks * 32) >> 4);
    const int acc_on = (kb > 0 || ks > 0) ? 1 : 0;
    if constexpr (NACC == 32) {
      if (4 * kb + ks < KS_H) wgmma_m64n64k16_ss(accp, da + step, dp + step, acc_on);
      if (4 * kb + ks < KS) wgmma_m64n64k16_rs(accg, ax[4 * kb + ks], dg + step, acc_on);
    } else {
      if (4 * kb + ks < KS_H) wgmma_m64n32k16_ss(accp, da + step, dp + step, acc_on);
      if (4 * kb + ks < KS) wgmma_m64n32k16_rs(accg, ax[4 * kb + ks], dg + step, acc_on);
    }
  }
}

// A consumer thread's outputs of chunk j: tokens wrow + g (+ 8 h) of the tile buffer (wrow = the
// warp's first row), channels 64 j + 8 jj + 2 t4 (+ 1). The residual comes from the tile's x in
// shared memory (k-block j of the buffer, xj; 16-byte chunk jj: the 8 rows of one load fall in 8
// bank groups), read before the chunk's MMAs are waited for; the gated outputs go over it, in
// out's layout, for one TMA store per warp. (Read again from global memory, 4 bytes over 8 rows
// per load instruction, the residual was the largest epilogue stall and half of the L1 wavefronts
// in ncu.)
template <int D>
struct OutChunk {
  uint32_t xj;
  int wrow, g, t4, j;
  __device__ __forceinline__ uint32_t addr(int jj, int h) const {
    return swz128(xj, wrow + g + 8 * h, jj) + 4u * (uint32_t)t4;
  }
  __device__ __forceinline__ void load_residual(uint32_t (&xres)[8][2], int residual) const {
#pragma unroll
    for (int jj = 0; jj < 8; ++jj)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        xres[jj][h] = 0u;
        if (residual) asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(xres[jj][h]) : "r"(addr(jj, h)));
      }
  }
  // The biases (halved, in shared memory) of the chunk's first channel pair, read while the MMAs run.
  __device__ __forceinline__ void first_biases(const float* p_bp, const float* p_bg, float2& nbp, float2& nbg) const {
    nbp = nbg = make_float2(0.f, 0.f);
    if (D % 64 == 0 || 64 * j + 2 * t4 < D) {
      nbp = *reinterpret_cast<const float2*>(p_bp + 64 * j + 2 * t4);
      nbg = *reinterpret_cast<const float2*>(p_bg + 64 * j + 2 * t4);
    }
  }
  // out = sigmoid(g + bg) * (p + bp) (+ x) as bf16 pairs over the residual; each jj reads the next
  // pair's biases before its gates (they waited on shared memory: ncu, 2026-12-01).
  __device__ __forceinline__ void gate(const float (&accp)[32], const float (&accg)[32], const uint32_t (&xres)[8][2],
                                       float2 nbp, float2 nbg, const float* p_bp, const float* p_bg,
                                       int residual) const {
#pragma unroll
    for (int jj = 0; jj < 8; ++jj) {
      const int c = 64 * j + 8 * jj + 2 * t4;
      const float2 bp = nbp, bg = nbg;
      if (jj < 7 && (D % 64 == 0 || c + 8 < D)) {
        nbp = *reinterpret_cast<const float2*>(p_bp + c + 8);
        nbg = *reinterpret_cast<const float2*>(p_bg + c + 8);
      }
      if (D % 64 == 0 || c < D) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float v0 = gate_half(accg[4 * jj + 2 * h], bg.x, accp[4 * jj + 2 * h], bp.x);
          float v1 = gate_half(accg[4 * jj + 2 * h + 1], bg.y, accp[4 * jj + 2 * h + 1], bp.y);
          if (residual) {
            v0 += bf16_lo(xres[jj][h]);
            v1 += bf16_hi(xres[jj][h]);
          }
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr(jj, h)), "r"(pack_bf16x2(v0, v1)) : "memory");
        }
      }
    }
  }
  // The warp's 16 tokens x 64 channels now sit in the buffer in out's layout: one TMA store of
  // them (tokens past cols and channels past D lie outside the map) at token `tok` of row i, batch b.
  __device__ __forceinline__ void store(const CUtensorMap* tmO, int lane, int tok, int i, int b) const {
    fence_proxy_async_smem();
    __syncwarp();
    if (lane == 0) {
      tma_store_4d(tmO, xj + (uint32_t)wrow * 128u, 64 * j, tok, i, b);
      bulk_commit();
    }
  }
};

// The producer's L2 prefetches for tile (b, i, j0 ..) of (B, rows, cols): the tile's z rows (one
// per channel, 128 tokens = 256 B, 16-byte aligned where z_prefetch: checked on the host; the tail
// under 16 B is left out) for the consumers' LN_out, and the tile's x (contiguous: 128 tokens x
// D), so that its TMA load (or the residual's loads) find L2.
template <int D, int H>
__device__ __forceinline__ void prefetch_out_tile(const bf16* x, const bf16_raw* z, int b, int i, int j0, int rows,
                                                  int cols, long long ldz, long long sz, int z_prefetch) {
  if (z_prefetch) {
    const uint32_t bytes = (uint32_t)(min(proj::TOK, cols - j0) * 2) & ~15u;
    if (bytes > 0) {
      const bf16_raw* zr = z + (int64_t)b * H * sz + (int64_t)i * ldz + j0;
      for (int c = 0; c < H; ++c) bulk_prefetch_l2(zr + (int64_t)c * sz, bytes);
    }
  }
  bulk_prefetch_l2(x + (((int64_t)b * rows + i) * cols + j0) * D, (uint32_t)(min(proj::TOK, cols - j0) * D * 2));
}

// ---- host side
// What TMA and the int tile arithmetic need of a stage 3 launch (trimul_internal.h says why no
// caller passes anything else).
inline bool out_args_ok(const DevLayer& L, const void* x, const bf16_raw* z, const void* out, int64_t B, int64_t rows,
                        int64_t cols, int64_t ldz, int64_t sz, int64_t total) {
  return !(B <= 0 || rows <= 0 || cols <= 0 || total > INT_MAX || rows > INT_MAX || cols > INT_MAX ||
           (reinterpret_cast<uintptr_t>(x) & 15) != 0 || (reinterpret_cast<uintptr_t>(out) & 15) != 0 ||
           (reinterpret_cast<uintptr_t>(L.w_out) & 15) != 0 ||
           // LN_out reads z a token pair per 4-byte load: pairs must be aligned, and an odd row's
           // last pair must end inside the row's padding.
           (reinterpret_cast<uintptr_t>(z) & 3) != 0 || ldz % 2 != 0 || sz % 2 != 0 || (cols % 2 != 0 && ldz <= cols));
}
// 1 where the z rows can be bulk-prefetched: every row start 16-byte aligned.
inline int z_rows_aligned(const bf16_raw* z, int64_t ldz, int64_t sz) {
  return (reinterpret_cast<uintptr_t>(z) % 16 == 0 && sz % 8 == 0 && ldz % 8 == 0) ? 1 : 0;
}
// z: (B, H, rows, ldz) bf16 (plane stride sz) as a TMA map of boxes of 64 tokens x 64 channels of
// one row (produce_z), where its rows are 16-byte aligned (TMA's stride rule): returns 1 then, 0
// where LN_out must load z from global memory (also for a layout the encoder refuses, overlapping
// planes say).
inline int encode_z_rows(CUtensorMap* mz, const bf16_raw* z, int H, int64_t B, int64_t rows, int64_t cols,
                         int64_t ldz, int64_t sz) {
  if (!z_rows_aligned(z, ldz, sz)) return 0;
  const cuuint64_t dims[4] = {(cuuint64_t)cols, (cuuint64_t)rows, (cuuint64_t)H, (cuuint64_t)B};
  const cuuint64_t strides[3] = {(cuuint64_t)ldz * 2, (cuuint64_t)sz * 2, (cuuint64_t)H * sz * 2};
  const cuuint32_t box[4] = {64, 1, 64, 1};
  return encode_bf16(mz, z, 4, dims, strides, box) == cudaSuccess ? 1 : 0;
}

}  // namespace foldcp
