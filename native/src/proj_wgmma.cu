// Stages 1 and 3 (the LayerNorm'd input and output projections) on Hopper's asynchronous
// tensor-core path (issue 10): wgmma.mma_async with TMA-fed operands, an mbarrier pipeline and
// warp specialization. Same contracts as proj_kernels.cu (launch_proj_in_to, launch_proj_out_tile):
// same masks, gates, LayerNorm formula, stores (AbTarget) and in-place rules, so the two can be
// compared value by value (they differ only in the fp32 summation order).
//
// Both kernels: CTA of 384 threads = 3 warpgroups, 1 CTA per SM, persistent over tiles of 128
// consecutive tokens of one pair row (b, i, k0 .. k0 + 127): contiguous in x and out, and 256-byte
// rows of the channel-major a/b planes. Tiles are taken in (b, i, k) order, CTA c doing c, c + grid,
// ..., so that all CTAs stream the same weights at the same time (W1 is 512 KiB, W3 256 KiB at
// D = 256: they stay in L2).
//   warpgroup 0: producers. One thread streams the weight k-blocks (128 rows x 64 k, 16 KiB, 128B
//                swizzle) through a ring of STAGES slots, tile after tile; another one loads the raw
//                x tile of each token tile into NXBUF buffers (up to NXBUF tiles ahead). Stage 3's
//                x thread also prefetches each tile's z into L2 when it loads its x.
//   warpgroups 1, 2: consumers, 64 tokens of the tile each (wgmma M = 64).
//
// Why the A operand (LayerNorm'd tokens) lives in registers: LN needs a token's whole row, so it
// cannot be a raw TMA tile. Each consumer loads its 16 rows x D of the TMA-written x tile with
// ldmatrix straight into the wgmma A-fragment layout (the mma.m16n8k16 layout per warp), computes
// the LayerNorm there (each row is spread over the 4 threads of a quad: 2 shuffles per reduction)
// and keeps the normalized bf16 fragments in registers for all output chunks of the tile
// (wgmma with A from registers). This frees the x buffer right after the LayerNorm (the next tile's
// x lands while this tile multiplies) and saves the 64 KiB shared-memory copy of A at D = 256,
// which pays for a deeper weight ring. Cost: D / 4 registers per thread (64 at D = 256).
//
// Each consumer warpgroup runs one accumulator set; the two warpgroups take turns issuing their
// wgmmas (ping-pong through two named barriers), so that the tensor cores work on one warpgroup's
// chunk while the other runs its epilogue (gates, sigmoids, stores). The weight slots are released
// k-block by k-block (one commit group per k-block, wgmma.wait_group N), so that the ring needs
// about one chunk plus the look-ahead, not two chunks.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>

#include "common.cuh"
#include "trimul_internal.h"
#include "wgmma_common.cuh"

namespace foldcp {
namespace pw {
constexpr int TOK = 128;                        // tokens per tile
constexpr int CONSUMERS = 2;                    // consumer warpgroups, 64 tokens each
constexpr int THREADS = 128 * (1 + CONSUMERS);  // 384
constexpr int KB_BYTES = 128 * 128;             // one 64-wide k-block of 128 rows (128 B per row, one swizzle span)
constexpr int W_STAGE = KB_BYTES;               // a weight slot: 128 rows x 64 k bf16
constexpr int SMEM_LIMIT = 227 * 1024;          // dynamic + static shared memory per CTA on sm_90
constexpr int STATIC_SMEM = 256;                // the mbarriers (static), rounded up
// 128 * 40 + 256 * 232 = 64512 <= 65536 registers of the SM (one CTA per SM).
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
// Named barriers (0 is __syncthreads): consumer warpgroup c alone: BAR_WG + c; "consumer
// warpgroup c may issue its next chunk": BAR_TURN + c.
constexpr int BAR_WG = 1, BAR_TURN = 3;
constexpr int MAX_STAGES = 8;
}  // namespace pw

namespace {

// ------------------------------------------------------------------ wgmma shapes used here
// Accumulator operands of the wgmma wrappers below, 8 at a time.
#define ACC8(i)                                                                                    \
  "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
// d[64 x 128] (+)= A[64 x 16] (registers) * B[16 x 128] (shared memory, K-major, descriptor db).
// A fragment of thread l of warp w of the warpgroup (the mma.m16n8k16 A layout for rows
// 16 w .. 16 w + 15): a[0] = (row l/4, cols 2(l%4) + {0,1}), a[1] = row + 8, a[2] = cols + 8,
// a[3] = row + 8 and cols + 8. Accumulator d[4j + 2h + e] = (row 16 w + l/4 + 8 h, col 8 j + 2(l%4) + e).
// scale_d = 0 ignores (overwrites) d.
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n"
      "}\n"
      : ACC8(0), ACC8(8), ACC8(16), ACC8(24), ACC8(32), ACC8(40), ACC8(48), ACC8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d)
      : "memory");
}

// d[64 x 64] (+)= A[64 x 16] * B[16 x 64], both K-major in shared memory (descriptors da, db).
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : ACC8(0), ACC8(8), ACC8(16), ACC8(24)
      : "l"(da), "l"(db), "r"(scale_d)
      : "memory");
}

// d[64 x 64] (+)= A[64 x 16] (registers, layout as in wgmma_m64n128k16_rs) * B[16 x 64] (descriptor).
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n"
      "}\n"
      : ACC8(0), ACC8(8), ACC8(16), ACC8(24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d)
      : "memory");
}
#undef ACC8

// ------------------------------------------------------------------ small helpers
// Empty asm that "modifies" the accumulators: placed after the last wgmma.wait_group of a chunk,
// it keeps the compiler from hoisting the epilogue's reads of them above the wait (the wait asm
// itself names no registers). No instruction is emitted.
template <int N>
__device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) asm volatile("" : "+f"(d[k])::"memory");
}

// K-major operand with 128B swizzle (TMA's and wgmma's layout): rows of 128 B (64 bf16), 8-row
// groups of 1024 B; the 16-byte chunk c of row r sits at chunk position c ^ (r % 8).
__device__ __forceinline__ uint32_t swz128(uint32_t tile, int row, int chunk) {
  return tile + (uint32_t)row * 128u + ((uint32_t)(chunk ^ (row & 7)) << 4);
}

// LayerNorm of 16 token rows (row0 .. row0 + 15 of a TMA-written x tile: NKB k-blocks of 128 rows
// x 128 B, 128B swizzle) straight into wgmma A fragments: af[s] covers channels 16 s .. 16 s + 15.
// Two-pass fp32 statistics and y = (v - mean) * rstd * w + b as in proj_kernels.cu, rounded to bf16.
// Thread (g = lane / 4, t = lane % 4) holds rows g and g + 8, channels 16 s + 2 t + {0, 1, 8, 9}:
// a row is spread over the 4 threads of a quad.
// load_frags: the raw rows into af (bf16, the A-fragment layout); normalize_frags: LayerNorm in place.
template <int D>
__device__ __forceinline__ void load_frags(uint32_t (&af)[D / 16][4], uint32_t xtile, int row0, int lane) {
  const int r = row0 + (lane & 15);
#pragma unroll
  for (int s = 0; s < D / 16; ++s) {
    // lanes 0-15: rows row0.., chunk 2 (s % 4); lanes 16-31: the next chunk (channels + 8)
    ldsm_x4(af[s], swz128(xtile + (uint32_t)(s >> 2) * pw::KB_BYTES, r, 2 * (s & 3) + (lane >> 4)));
  }
}
template <int D>
__device__ __forceinline__ void normalize_frags(uint32_t (&af)[D / 16][4], int lane, const float* gw, const float* gb,
                                                float eps) {
  constexpr int KS = D / 16;
  float s0 = 0.f, s1 = 0.f;  // row g, row g + 8
#pragma unroll
  for (int s = 0; s < KS; ++s) {
    s0 += (bf16_lo(af[s][0]) + bf16_hi(af[s][0])) + (bf16_lo(af[s][2]) + bf16_hi(af[s][2]));
    s1 += (bf16_lo(af[s][1]) + bf16_hi(af[s][1])) + (bf16_lo(af[s][3]) + bf16_hi(af[s][3]));
  }
  s0 += __shfl_xor_sync(0xffffffffu, s0, 1);
  s1 += __shfl_xor_sync(0xffffffffu, s1, 1);
  s0 += __shfl_xor_sync(0xffffffffu, s0, 2);
  s1 += __shfl_xor_sync(0xffffffffu, s1, 2);
  const float m0 = s0 * (1.0f / D), m1 = s1 * (1.0f / D);
  float q0 = 0.f, q1 = 0.f;
#pragma unroll
  for (int s = 0; s < KS; ++s) {
    float d;
    d = bf16_lo(af[s][0]) - m0; q0 += d * d;
    d = bf16_hi(af[s][0]) - m0; q0 += d * d;
    d = bf16_lo(af[s][2]) - m0; q0 += d * d;
    d = bf16_hi(af[s][2]) - m0; q0 += d * d;
    d = bf16_lo(af[s][1]) - m1; q1 += d * d;
    d = bf16_hi(af[s][1]) - m1; q1 += d * d;
    d = bf16_lo(af[s][3]) - m1; q1 += d * d;
    d = bf16_hi(af[s][3]) - m1; q1 += d * d;
  }
  q0 += __shfl_xor_sync(0xffffffffu, q0, 1);
  q1 += __shfl_xor_sync(0xffffffffu, q1, 1);
  q0 += __shfl_xor_sync(0xffffffffu, q0, 2);
  q1 += __shfl_xor_sync(0xffffffffu, q1, 2);
  const float r0 = rsqrtf(q0 * (1.0f / D) + eps), r1 = rsqrtf(q1 * (1.0f / D) + eps);
  const int t2 = 2 * (lane & 3);
#pragma unroll
  for (int s = 0; s < KS; ++s) {
    const int c = 16 * s + t2;
    const float2 w0 = *reinterpret_cast<const float2*>(gw + c), b0 = *reinterpret_cast<const float2*>(gb + c);
    const float2 w1 = *reinterpret_cast<const float2*>(gw + c + 8), b1 = *reinterpret_cast<const float2*>(gb + c + 8);
    const uint32_t a0 = af[s][0], a1 = af[s][1], a2 = af[s][2], a3 = af[s][3];
    af[s][0] = pack_bf16x2((bf16_lo(a0) - m0) * r0 * w0.x + b0.x, (bf16_hi(a0) - m0) * r0 * w0.y + b0.y);
    af[s][1] = pack_bf16x2((bf16_lo(a1) - m1) * r1 * w0.x + b0.x, (bf16_hi(a1) - m1) * r1 * w0.y + b0.y);
    af[s][2] = pack_bf16x2((bf16_lo(a2) - m0) * r0 * w1.x + b1.x, (bf16_hi(a2) - m0) * r0 * w1.y + b1.y);
    af[s][3] = pack_bf16x2((bf16_lo(a3) - m1) * r1 * w1.x + b1.x, (bf16_hi(a3) - m1) * r1 * w1.y + b1.y);
  }
}

// Ping-pong between the two consumer warpgroups: warpgroup 0 issues its n-th chunk after
// warpgroup 1 issued its (n - 1)-th, warpgroup 1 its n-th after warpgroup 0 issued its n-th. So
// their chunks reach the tensor cores alternately, and one's epilogue overlaps the other's MMAs.
// (Each barrier sees 128 arrivals from one warpgroup's turn_pass and 128 from the other's wait.)
__device__ __forceinline__ void turn_wait(int cw, int issued) {
  if (cw == 1 || issued > 0) bar_sync(pw::BAR_TURN + cw, 256);
}
__device__ __forceinline__ void turn_pass(int cw) { bar_arrive(pw::BAR_TURN + (cw ^ 1), 256); }

}  // namespace

// ------------------------------------------------------------------------------------------
// Stage 1. Tile = tokens (b, i, k0 .. k0 + 127) of the ProjInGeom grid; W1 chunk j = rows
// 128 j .. 128 j + 127 = channels 32 j .. 32 j + 31 as (p_a, g_a, p_b, g_b) x 8 per group of 8.
// Per chunk each consumer warpgroup computes 64 tokens x 128 rows (K = D) into 64 fp32 registers
// per thread, then the gates; a and b go through an 8 KiB transposing buffer per warpgroup to
// 16-byte stores of 8 tokens of one channel (the AbTarget layout of proj_kernels.cu).
// ------------------------------------------------------------------------------------------
template <int D>
struct InCfg {
  static constexpr int NKB = (D + 63) / 64;  // k-blocks (the last one half used when D % 64 == 32)
  static constexpr int KS = D / 16;          // k16 steps
  static constexpr int NCH = D / 32;         // W1 chunks of 128 rows
  static constexpr int XBYTES = NKB * pw::KB_BYTES;
  // x tiles in flight: enough to cover the HBM latency when tiles are short (small D).
  static constexpr int NXBUF = XBYTES <= 16384 ? 4 : XBYTES <= 32768 ? 3 : XBYTES <= 49152 ? 2 : 1;
  static constexpr int OUTS = pw::CONSUMERS * 64 * 128;  // per warpgroup: 64 channel rows (32 a, 32 b) x 64 tokens
  static constexpr int PARAMS = 6 * D * 4;               // LN weight, LN bias, float4 (bp_a, bg_a, bp_b, bg_b) / 2
  static constexpr int FIXED = NXBUF * XBYTES + OUTS + PARAMS + 1024;  // + slack to align to 1024 B
  static constexpr int STAGES_FIT = (pw::SMEM_LIMIT - pw::STATIC_SMEM - FIXED) / pw::W_STAGE;
  static constexpr int STAGES = STAGES_FIT < pw::MAX_STAGES ? STAGES_FIT : pw::MAX_STAGES;
  static constexpr int SMEM = FIXED + STAGES * pw::W_STAGE;
  static_assert(STAGES >= NKB + 1, "the weight ring must hold a chunk plus one k-block");
  static_assert(SMEM + pw::STATIC_SMEM <= pw::SMEM_LIMIT, "over the shared-memory limit");
  static_assert(XBYTES < (1 << 20), "mbarrier tx-count is 20 bits");
};

template <int D>
__global__ void __launch_bounds__(pw::THREADS, 1)
    proj_in_wgmma_kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
                         const uint8_t* __restrict__ mask, const float* __restrict__ lnw, const float* __restrict__ lnb,
                         const float* __restrict__ pin_b, const float* __restrict__ gin_b,
                         const __grid_constant__ ProjInGeom geo, const __grid_constant__ AbTarget tgt, float eps,
                         int out_rows, int tiles_k, int total) {
  using namespace pw;
  using C = InCfg<D>;
  __shared__ __align__(8) uint64_t bars[2 * C::NXBUF + 2 * C::STAGES];
  extern __shared__ uint8_t smem_raw[];
  // 128B swizzle: TMA and wgmma/ldmatrix addressing assume 1024-byte aligned tiles.
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  uint8_t* const sm = smem_raw + (base - raw);  // generic pointer to `base`
  const uint32_t s_x = base;                                  // NXBUF x tiles
  const uint32_t s_w = s_x + C::NXBUF * C::XBYTES;            // STAGES weight slots
  const uint32_t s_o = s_w + C::STAGES * W_STAGE;             // transposing buffers
  bf16* const outs = reinterpret_cast<bf16*>(sm + (s_o - base));
  float* const p_lnw = reinterpret_cast<float*>(sm + (s_o - base) + C::OUTS);
  float* const p_lnb = p_lnw + D;
  float4* const p_bias = reinterpret_cast<float4*>(p_lnb + D);
  const uint32_t xfull0 = smem_u32(&bars[0]);
  const uint32_t xempty0 = xfull0 + 8 * C::NXBUF;
  const uint32_t wfull0 = xempty0 + 8 * C::NXBUF;
  const uint32_t wempty0 = wfull0 + 8 * C::STAGES;

  for (int c = threadIdx.x; c < D; c += THREADS) {
    p_lnw[c] = lnw[c];
    p_lnb[c] = lnb[c];
    // halved for gate_half
    p_bias[c] = make_float4(0.5f * pin_b[c], 0.5f * gin_b[c], 0.5f * pin_b[D + c], 0.5f * gin_b[D + c]);
  }
  if (threadIdx.x == 0) {
    for (int k = 0; k < C::NXBUF; ++k) {
      mbar_init(xfull0 + 8 * k, 1);
      mbar_init(xempty0 + 8 * k, CONSUMERS * 4);
    }
    for (int k = 0; k < C::STAGES; ++k) {
      mbar_init(wfull0 + 8 * k, 1);
      mbar_init(wempty0 + 8 * k, CONSUMERS * 4);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  __syncthreads();

  const int wg = threadIdx.x >> 7;  // warp-uniform
  const int tid_wg = threadIdx.x & 127;
  const int n_local = (int)blockIdx.x < total ? (total - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
  const int xr = (int)geo.x_rows, xc = (int)geo.x_cols;
  // W1 chunks (32 channels each) of this launch: all, or the channel group of geo.chan0 / chans.
  const int jb = geo.chans > 0 ? geo.chan0 / 32 : 0;
  const int je = geo.chans > 0 ? jb + geo.chans / 32 : C::NCH;

  if (wg == 0) {
    // ------------------------------------------------------------ producers
    // Two independent threads, so that neither stream waits for the other's free slots:
    // warp 0 streams the weight k-blocks, warp 1 the x tiles.
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid_wg == 0 && n_local > 0) {
      tma_prefetch_map(&tmW);
      int ws = 0;
      uint32_t wph = 0;
      for (int u = 0; u < n_local; ++u) {
        for (int j = jb; j < je; ++j) {
#pragma unroll
          for (int kb = 0; kb < C::NKB; ++kb) {
            mbar_wait(wempty0 + 8 * ws, wph ^ 1u);
            mbar_arrive_expect_tx(wfull0 + 8 * ws, W_STAGE);
            tma_load_2d(s_w + ws * W_STAGE, &tmW, kb * 64, j * 128, wfull0 + 8 * ws);
            if (++ws == C::STAGES) {
              ws = 0;
              wph ^= 1u;
            }
          }
        }
      }
    } else if (tid_wg == 32 && n_local > 0) {
      tma_prefetch_map(&tmX);
      // x tile of this CTA's v-th token tile into buffer v % NXBUF, as soon as the consumers have
      // LayerNorm'd the tile that used it before. The box is clamped into x (a row i >= x_rows or
      // columns >= x_cols hold only invalid tokens, whose outputs are zero whatever x is), so no
      // box lies wholly outside the tensor; the part past x_cols is zero-filled.
      for (int v = 0; v < n_local; ++v) {
        const int t = (int)blockIdx.x + v * (int)gridDim.x;
        const int kt = t % tiles_k, r = t / tiles_k;
        const int i = r % out_rows, b = r / out_rows;
        const int buf = v % C::NXBUF;
        mbar_wait(xempty0 + 8 * buf, ((v / C::NXBUF) & 1) ^ 1u);
        mbar_arrive_expect_tx(xfull0 + 8 * buf, C::XBYTES);
        const int ix = min(i, xr - 1), kx = min(kt * TOK, xc - 1);
#pragma unroll
        for (int kb = 0; kb < C::NKB; ++kb)
          tma_load_4d(s_x + buf * C::XBYTES + kb * KB_BYTES, &tmX, kb * 64, kx, ix, b, xfull0 + 8 * buf);
      }
    }
    return;
  }

  // -------------------------------------------------------------- consumers
  setmaxnreg_inc<CONSUMER_REGS>();
  const int cw = wg - 1;  // tokens 64 cw .. 64 cw + 63 of the tile
  const int lane = tid_wg & 31, warp = tid_wg >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  bf16* const my_outs = outs + cw * 64 * 64;
  // This lane's stmatrix row for channel group 0: lanes 8 k .. 8 k + 7 address matrix k's 8
  // channel rows (a for k < 2, b above), tokens 16 warp + 8 (k % 2) .. + 7 (16-byte chunk 2 warp + k % 2).
  const uint32_t stsm_base = [&] {
    const int k = lane >> 3, r = (k >> 1) * 32 + (lane & 7), q = 2 * warp + (k & 1);
    return smem_u32(my_outs) + (uint32_t)(r * 128 + ((q ^ (r & 7)) << 4));
  }();

  // Every channel of this launch goes to rank 0 (see the stores).
  const bool one_owner = tgt.dloc >= (je - jb) * 32;
  const int64_t plane16 = 16 * tgt.plane[0], plane32 = 32 * tgt.plane[0];

  float acc[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) acc[k] = 0.f;
  uint32_t af[C::KS][4];
  int ws = 0;
  uint32_t wph = 0;
  int issued = 0;

  for (int u = 0; u < n_local; ++u) {
    const int t = (int)blockIdx.x + u * (int)gridDim.x;
    const int kt = t % tiles_k, r = t / tiles_k;
    const int i = r % out_rows, b = r / out_rows;
    const int k0 = kt * TOK;
    // Validity of this thread's two tokens (rows g and g + 8 of its warp's 16). The mask bytes
    // are loaded here and tested after the LayerNorm, so that their latency hides behind it
    // (tested at once, they stalled every tile: ncu, 2026-12-01).
    bool valid[2];
    int mbyte[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int k = k0 + 64 * cw + 16 * warp + g + 8 * h;
      valid[h] = (i < xr) && (k < xc) && (geo.g_row0 + i < geo.n_valid) && (geo.g_col0 + k < geo.n_valid);
      mbyte[h] = (valid[h] && mask != nullptr) ? (int)__ldg(mask + ((int64_t)b * xr + i) * xc + k) : 1;
    }
    // 16-byte chunks (8 tokens) of this tile that are stored (see proj_kernels.cu).
    const int nchunks = (int)min((int64_t)(TOK / 8), (geo.store_cols - k0 + 7) / 8);

    // This thread's 16-byte chunk of the tile in the stores below (the same for all its rows), and
    // whether the tile stores it.
    const int my_ch = 8 * cw + (tid_wg & 7);
    const bool my_store = my_ch < nchunks;
    // Owner rank and local channel of the 4 channel rows this thread stores in chunk 0
    // (row (tid_wg + 128 it) / 8, channel row % 32); the chunk loop advances them by 32 channels.
    // With one owner (one GPU; or a CP rank that owns every channel of this launch) the rows are
    // a[0] / b[0] planes: two pointers for the chunk and one plane stride, advanced per chunk,
    // replace the per-row owner arithmetic (186 instructions per chunk and warp in ncu).
    int own_rank[4], own_chan[4];
    bf16_raw *pa = nullptr, *pb = nullptr;
    if (one_owner) {
      const int64_t off = ((int64_t)b * tgt.dloc + (tid_wg >> 3)) * tgt.plane[0] + (tgt.row0[0] + i) * tgt.ld[0] +
                          tgt.col0[0] + k0 + my_ch * 8;
      pa = tgt.a[0] + off;
      pb = tgt.b[0] + off;
    } else {
#pragma unroll
      for (int it = 0; it < 4; ++it) {
        const int c = ((tid_wg + 128 * it) >> 3) & 31;
        own_rank[it] = c / tgt.dloc;
        own_chan[it] = c - own_rank[it] * tgt.dloc;
      }
    }

    const int buf = u % C::NXBUF;
    mbar_wait(xfull0 + 8 * buf, (u / C::NXBUF) & 1);
    load_frags<D>(af, s_x + buf * C::XBYTES, 64 * cw + 16 * warp, lane);
    normalize_frags<D>(af, lane, p_lnw, p_lnb, eps);
    __syncwarp();
    if (lane == 0) mbar_arrive(xempty0 + 8 * buf);  // this warp's rows of x are in registers
    valid[0] = valid[0] && mbyte[0] != 0;
    valid[1] = valid[1] && mbyte[1] != 0;

    for (int j = jb; j < je; ++j) {
      turn_wait(cw, issued);
      // Orders the fragment writes (LayerNorm) and the accumulator reads (last epilogue) before
      // the wgmmas that read / overwrite them.
      wgmma_fence();
      const int ws0 = ws;
#pragma unroll
      for (int kb = 0; kb < C::NKB; ++kb) {
        mbar_wait(wfull0 + 8 * ws, wph);
        const uint64_t db = smem_desc(s_w + ws * W_STAGE, 16u, 1024u);
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {
          if (4 * kb + ks < C::KS)  // compile-time after unrolling
            wgmma_m64n128k16_rs(acc, af[4 * kb + ks], db + (uint64_t)((ks * 32) >> 4), (kb > 0 || ks > 0) ? 1 : 0);
        }
        wgmma_commit();
        if (++ws == C::STAGES) {
          ws = 0;
          wph ^= 1u;
        }
      }
      turn_pass(cw);
      ++issued;
      // Biases of the first 8 channels, read while the MMAs run (the waits below are memory
      // clobbers: loads written before them stay before them); each group gi reads the next
      // group's before its gates, so no gate waits on shared memory (the largest epilogue stall
      // in ncu, 2026-12-01).
      float4 nb0 = p_bias[32 * j + 2 * t4], nb1 = p_bias[32 * j + 2 * t4 + 1];
      // Release each weight slot as soon as its k-block group is complete (groups complete in order).
#pragma unroll
      for (int kb = 0; kb < C::NKB; ++kb) {
        wgmma_wait_upto(C::NKB - 1 - kb);
        if (lane == 0) {
          int sl = ws0 + kb;
          if (sl >= C::STAGES) sl -= C::STAGES;
          mbar_arrive(wempty0 + 8 * sl);
        }
      }
      fence_regs(acc);

      // ---- epilogue: a = sigmoid(g_a + bg_a) * (p_a + bp_a), b likewise; 0 for invalid tokens ----
      // Transposing buffer of this warpgroup: row = channel (a: 0..31, b: 32..63 of this chunk),
      // 64 tokens of 2 bytes = 128 B; 16-byte chunk q of row r at position q ^ (r % 8). For each
      // group gi of 8 channels the gated values form four 8 x 8 mma fragments (a and b, tokens
      // g and g + 8), which one stmatrix.trans writes as 8-token rows of one channel: the 8 rows
      // of a matrix land in 8 different bank groups. (The 2-byte stores this replaced made the
      // epilogue issue-bound: 972 instructions per chunk and warp in ncu.)
      bar_sync(BAR_WG + cw, 128);  // the previous chunk's reads of the buffer are done
#pragma unroll
      for (int gi = 0; gi < 4; ++gi) {
        const float4 bb0 = nb0, bb1 = nb1;
        if (gi < 3) {
          nb0 = p_bias[32 * j + 8 * (gi + 1) + 2 * t4];
          nb1 = p_bias[32 * j + 8 * (gi + 1) + 2 * t4 + 1];
        }
        uint32_t pk[4];  // matrices (a, tokens g), (a, g + 8), (b, g), (b, g + 8)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int ia = 4 * (4 * gi) + 2 * h;  // p_a of channel 2 t4; +4: g_a, +8: p_b, +12: g_b; +1: channel 2 t4 + 1
          float va0 = gate_half(acc[ia + 4], bb0.y, acc[ia], bb0.x);
          float va1 = gate_half(acc[ia + 5], bb1.y, acc[ia + 1], bb1.x);
          float vb0 = gate_half(acc[ia + 12], bb0.w, acc[ia + 8], bb0.z);
          float vb1 = gate_half(acc[ia + 13], bb1.w, acc[ia + 9], bb1.z);
          if (!valid[h]) va0 = va1 = vb0 = vb1 = 0.f;
          pk[h] = pack_bf16x2(va0, va1);
          pk[2 + h] = pack_bf16x2(vb0, vb1);
        }
        stsm_x4_t(stsm_base + (uint32_t)gi * (8 * 128), pk);
      }
      bar_sync(BAR_WG + cw, 128);
      if (one_owner) {
        // rows (tid_wg >> 3) + 16 it: it 0, 1 are a rows (channel + 0, + 16), it 2, 3 b rows.
#pragma unroll
        for (int it = 0; it < 4; ++it) {
          const int row = (tid_wg >> 3) + 16 * it, cc = tid_wg & 7;
          if (my_store) {
            const uint4 v = *reinterpret_cast<const uint4*>(my_outs + row * 64 + ((cc ^ (row & 7)) << 3));
            *reinterpret_cast<uint4*>((it < 2 ? pa : pb) + ((it & 1) ? plane16 : 0)) = v;
          }
        }
        pa += plane32;
        pb += plane32;
        continue;
      }
#pragma unroll
      for (int it = 0; it < 4; ++it) {
        const int q = tid_wg + 128 * it;
        const int row = q >> 3, cc = q & 7;
        const int ch = 8 * cw + cc;  // 16-byte chunk of the 128-token tile
        if (ch < nchunks) {
          const uint4 v = *reinterpret_cast<const uint4*>(my_outs + row * 64 + ((cc ^ (row & 7)) << 3));
          const int qr = own_rank[it], cl = own_chan[it];
          bf16_raw* const dst = (row < 32 ? tgt.a[qr] : tgt.b[qr]) + ((int64_t)b * tgt.dloc + cl) * tgt.plane[qr] +
                                (tgt.row0[qr] + i) * tgt.ld[qr] + tgt.col0[qr] + k0 + ch * 8;
          *reinterpret_cast<uint4*>(dst) = v;
        }
        // The same row of the next chunk is channel c + 32: advance (rank, channel) without a division.
        int cl = own_chan[it] + 32, qr = own_rank[it];
        while (cl >= tgt.dloc) {
          cl -= tgt.dloc;
          ++qr;
        }
        own_chan[it] = cl;
        own_rank[it] = qr;
      }
    }
  }
  // Warpgroup 1's last turn_pass has no matching wait: take it, so no barrier is left half-arrived.
  if (cw == 0 && issued > 0) bar_sync(BAR_TURN + 0, 256);
}

// ------------------------------------------------------------------------------------------
// Stage 3. Tile = tokens (b, i, j0 .. j0 + 127) of (B, rows, cols); tokens j >= cols are not
// stored. out = sigmoid(LN_in(x) g_out^T + bg) * (LN_out(z) p_out^T + bp) (+ x).
// W3 chunk j = rows 128 j .. 128 j + 127 = channels 64 j .. 64 j + 63, 8-row groups alternating
// p_out, g_out: two wgmma B views of the same slot (descriptor stride 2048 B between 8-row groups,
// the g view starting 1024 B in), so p and g of a channel land in the same thread's registers.
//   p: A = LN_out(z) from shared memory (written by the consumers: z is channel-major bf16,
//      its LayerNorm needs a transpose), m64n64k16 SS;
//   g: A = LN_in(x) fragments in registers, m64n64k16 RS.
// LN_out reads z straight from global memory (thread = token pair x quarter of the channels, D/4
// registers), from L2: the x producer prefetches each tile's z rows
// (cp.async.bulk.prefetch.L2) when it loads the tile's x, up to NXBUF tiles ahead.
// x may alias out: the tile's x reaches shared memory by TMA before any of the tile's outputs is
// written, and the residual is read from that copy (the buffer is held until the tile's last
// chunk); tiles do not overlap.
// ------------------------------------------------------------------------------------------
template <int D>
struct OutCfg {
  static constexpr int NKB = (D + 63) / 64;
  static constexpr int KS = D / 16;
  static constexpr int NCH = NKB;  // W3 chunks of 128 rows (64 channels; the last one half used when D % 64 == 32)
  static constexpr int XBYTES = NKB * pw::KB_BYTES;
  static constexpr int AZBYTES = NKB * pw::KB_BYTES;  // LN_out(z) of the tile, 128B-swizzled K-major
  // x tiles in flight. A buffer frees after its tile's last chunk (the residual is read from it);
  // with one buffer (D > 128) the next tile's x comes from L2 (prefetched a tile ahead) while the
  // consumers run its LN_out. Short tiles (small D) get more buffers.
  static constexpr int NXBUF = XBYTES <= 16384 ? 4 : XBYTES <= 32768 ? 2 : 1;
  static constexpr int PARAMS = 6 * D * 4;  // LN_in w, b, LN_out w, b, bp, bg
  static constexpr int FIXED = NXBUF * XBYTES + AZBYTES + PARAMS + 1024;
  static constexpr int STAGES_FIT = (pw::SMEM_LIMIT - pw::STATIC_SMEM - FIXED) / pw::W_STAGE;
  static constexpr int STAGES = STAGES_FIT < pw::MAX_STAGES ? STAGES_FIT : pw::MAX_STAGES;
  static constexpr int SMEM = FIXED + STAGES * pw::W_STAGE;
  static_assert(STAGES >= NKB + 1, "the weight ring must hold a chunk plus one k-block");
  static_assert(SMEM + pw::STATIC_SMEM <= pw::SMEM_LIMIT, "over the shared-memory limit");
};

template <int D>
__global__ void __launch_bounds__(pw::THREADS, 1)
    proj_out_wgmma_kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
                          const __grid_constant__ CUtensorMap tmO, const bf16* x, const bf16_raw* __restrict__ z,
                          const float* __restrict__ lniw,
                          const float* __restrict__ lnib, const float* __restrict__ lnow,
                          const float* __restrict__ lnob, const float* __restrict__ pout_b,
                          const float* __restrict__ gout_b, int rows, int cols, long long ldz, long long sz, float eps,
                          int residual, int z_prefetch, int tiles_k, int total) {
  using namespace pw;
  using C = OutCfg<D>;
  __shared__ __align__(8) uint64_t bars[2 * C::NXBUF + 2 * C::STAGES];
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  uint8_t* const sm = smem_raw + (base - raw);
  const uint32_t s_x = base;                         // NXBUF x tiles
  const uint32_t s_az = s_x + C::NXBUF * C::XBYTES;  // LN_out(z) tile
  const uint32_t s_w = s_az + C::AZBYTES;            // STAGES weight slots
  float* const p_lniw = reinterpret_cast<float*>(sm + (s_w - base) + C::STAGES * W_STAGE);
  float* const p_lnib = p_lniw + D;
  float* const p_lnow = p_lnib + D;
  float* const p_lnob = p_lnow + D;
  float* const p_bp = p_lnob + D;
  float* const p_bg = p_bp + D;
  const uint32_t xfull0 = smem_u32(&bars[0]);
  const uint32_t xempty0 = xfull0 + 8 * C::NXBUF;
  const uint32_t wfull0 = xempty0 + 8 * C::NXBUF;
  const uint32_t wempty0 = wfull0 + 8 * C::STAGES;

  for (int c = threadIdx.x; c < D; c += THREADS) {
    p_lniw[c] = lniw[c];
    p_lnib[c] = lnib[c];
    p_lnow[c] = lnow[c];
    p_lnob[c] = lnob[c];
    p_bp[c] = 0.5f * pout_b[c];  // halved for gate_half
    p_bg[c] = 0.5f * gout_b[c];
  }
  if (threadIdx.x == 0) {
    for (int k = 0; k < C::NXBUF; ++k) {
      mbar_init(xfull0 + 8 * k, 1);
      mbar_init(xempty0 + 8 * k, CONSUMERS * 4);
    }
    for (int k = 0; k < C::STAGES; ++k) {
      mbar_init(wfull0 + 8 * k, 1);
      mbar_init(wempty0 + 8 * k, CONSUMERS * 4);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  __syncthreads();

  const int wg = threadIdx.x >> 7;
  const int tid_wg = threadIdx.x & 127;
  const int n_local = (int)blockIdx.x < total ? (total - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;

  if (wg == 0) {
    // ------------------------------------------------------------ producers (as in stage 1)
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid_wg == 0 && n_local > 0) {
      tma_prefetch_map(&tmW);
      int ws = 0;
      uint32_t wph = 0;
      for (int u = 0; u < n_local; ++u) {
        for (int j = 0; j < C::NCH; ++j) {
#pragma unroll
          for (int kb = 0; kb < C::NKB; ++kb) {
            mbar_wait(wempty0 + 8 * ws, wph ^ 1u);
            mbar_arrive_expect_tx(wfull0 + 8 * ws, W_STAGE);
            tma_load_2d(s_w + ws * W_STAGE, &tmW, kb * 64, j * 128, wfull0 + 8 * ws);
            if (++ws == C::STAGES) {
              ws = 0;
              wph ^= 1u;
            }
          }
        }
      }
    } else if (tid_wg == 32 && n_local > 0) {
      tma_prefetch_map(&tmX);
      for (int v = 0; v < n_local; ++v) {
        const int t = (int)blockIdx.x + v * (int)gridDim.x;
        const int kt = t % tiles_k, r = t / tiles_k;
        const int i = r % rows, b = r / rows;
        const int j0 = kt * TOK;
        if (z_prefetch) {
          // The tile's z rows (one per channel, 128 tokens = 256 B, 16-byte aligned: checked on
          // the host) into L2 for the consumers' LN_out; the tail under 16 B is left out.
          const uint32_t bytes = (uint32_t)(min(TOK, cols - j0) * 2) & ~15u;
          if (bytes > 0) {
            const bf16_raw* zr = z + (int64_t)b * D * sz + (int64_t)i * ldz + j0;
            for (int c = 0; c < D; ++c) bulk_prefetch_l2(zr + (int64_t)c * sz, bytes);
          }
        }
        // The tile's x (contiguous: 128 tokens x D) into L2 as well: its buffer frees only when the
        // previous tile's last chunk has read its residual, so the TMA load below then finds L2.
        bulk_prefetch_l2(x + (((int64_t)b * rows + i) * cols + j0) * D, (uint32_t)(min(TOK, cols - j0) * D * 2));
        const int buf = v % C::NXBUF;
        mbar_wait(xempty0 + 8 * buf, ((v / C::NXBUF) & 1) ^ 1u);
        mbar_arrive_expect_tx(xfull0 + 8 * buf, C::XBYTES);
#pragma unroll
        for (int kb = 0; kb < C::NKB; ++kb)
          tma_load_4d(s_x + buf * C::XBYTES + kb * KB_BYTES, &tmX, kb * 64, j0, i, b, xfull0 + 8 * buf);
      }
    }
    return;
  }

  // -------------------------------------------------------------- consumers
  setmaxnreg_inc<CONSUMER_REGS>();
  const int cw = wg - 1;  // tokens 64 cw .. 64 cw + 63 of the tile
  const int lane = tid_wg & 31, warp = tid_wg >> 5;
  const int g = lane >> 2, t4 = lane & 3;

  uint32_t ax[C::KS][4];
  int ws = 0;
  uint32_t wph = 0;
  int issued = 0;

  for (int u = 0; u < n_local; ++u) {
    const int t = (int)blockIdx.x + u * (int)gridDim.x;
    const int kt = t % tiles_k, r = t / tiles_k;
    const int i = r % rows, b = r / rows;
    const int j0 = kt * TOK;
    const int jvalid = min(TOK, cols - j0);

    // ---- LN_out(z) -> this warpgroup's 64 rows of the A_z tile (its previous wgmmas are complete).
    // Thread = (token pair 64 cw + 16 warp + 2 (lane % 8) + {0, 1}, quarter q = lane / 8) holds
    // channels 32 uu + 8 q + e (e < 8) of both tokens: one 4-byte load per channel brings the pair
    // (z is bf16, channel-major), so one load instruction reads 16 consecutive tokens (one 32-byte
    // sector) of 4 channels, and all D / 4 loads are issued before any is reduced (the LN_out
    // loads were the largest stall of this kernel in ncu, 2026-12-01). D / 4 registers.
    {
      const int row = 64 * cw + 16 * warp + 2 * (lane & 7);
      const int q = lane >> 3;
      // The pair is read whole even when only its first token is valid (odd cols): the second
      // is then a padding column of the same z row (ldz >= cols + 1, checked on the host) and is
      // zeroed below, as are pairs past the tile's valid tokens.
      const bool valid0 = row < jvalid, valid1 = row + 1 < jvalid;
      // One pointer walked channel by channel: a 64-bit add per load, where computing each of the
      // D / 4 addresses from the plane stride took about 8 instructions (ncu, 2026-12-01).
      const bf16_raw* zp = z + (int64_t)b * D * sz + (int64_t)i * ldz + j0 + (valid0 ? row : 0) + (int64_t)(8 * q) * sz;
      uint32_t v[D / 32][8];
#pragma unroll
      for (int uu = 0; uu < D / 32; ++uu) {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          v[uu][e] = __ldcs(reinterpret_cast<const unsigned int*>(zp));
          zp += sz;
        }
        zp += 24 * sz;
      }
      const uint32_t keep = valid1 ? 0xffffffffu : valid0 ? 0x0000ffffu : 0u;
#pragma unroll
      for (int uu = 0; uu < D / 32; ++uu)
#pragma unroll
        for (int e = 0; e < 8; ++e) v[uu][e] &= keep;
      float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
      for (int uu = 0; uu < D / 32; ++uu)
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          sum0 += bf16_lo(v[uu][e]);
          sum1 += bf16_hi(v[uu][e]);
        }
      sum0 += __shfl_xor_sync(0xffffffffu, sum0, 8);
      sum1 += __shfl_xor_sync(0xffffffffu, sum1, 8);
      sum0 += __shfl_xor_sync(0xffffffffu, sum0, 16);
      sum1 += __shfl_xor_sync(0xffffffffu, sum1, 16);
      const float mean0 = sum0 * (1.0f / D), mean1 = sum1 * (1.0f / D);
      float sq0 = 0.f, sq1 = 0.f;
#pragma unroll
      for (int uu = 0; uu < D / 32; ++uu)
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const float d0 = bf16_lo(v[uu][e]) - mean0, d1 = bf16_hi(v[uu][e]) - mean1;
          sq0 += d0 * d0;
          sq1 += d1 * d1;
        }
      sq0 += __shfl_xor_sync(0xffffffffu, sq0, 8);
      sq1 += __shfl_xor_sync(0xffffffffu, sq1, 8);
      sq0 += __shfl_xor_sync(0xffffffffu, sq0, 16);
      sq1 += __shfl_xor_sync(0xffffffffu, sq1, 16);
      const float rstd0 = rsqrtf(sq0 * (1.0f / D) + eps), rstd1 = rsqrtf(sq1 * (1.0f / D) + eps);
#pragma unroll
      for (int uu = 0; uu < D / 32; ++uu) {
        const int c0 = 32 * uu + 8 * q;
        const float4 w0 = *reinterpret_cast<const float4*>(p_lnow + c0);
        const float4 w1 = *reinterpret_cast<const float4*>(p_lnow + c0 + 4);
        const float4 b0 = *reinterpret_cast<const float4*>(p_lnob + c0);
        const float4 b1 = *reinterpret_cast<const float4*>(p_lnob + c0 + 4);
        const float w[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
        const float bb[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
        uint32_t pk0[4], pk1[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          pk0[e] = pack_bf16x2((bf16_lo(v[uu][2 * e]) - mean0) * rstd0 * w[2 * e] + bb[2 * e],
                               (bf16_lo(v[uu][2 * e + 1]) - mean0) * rstd0 * w[2 * e + 1] + bb[2 * e + 1]);
          pk1[e] = pack_bf16x2((bf16_hi(v[uu][2 * e]) - mean1) * rstd1 * w[2 * e] + bb[2 * e],
                               (bf16_hi(v[uu][2 * e + 1]) - mean1) * rstd1 * w[2 * e + 1] + bb[2 * e + 1]);
        }
        // channels c0 .. c0 + 7 = k-block uu / 2, 16-byte chunk 4 (uu % 2) + q of the 128-byte rows
        const uint32_t kb = s_az + (uint32_t)(uu >> 1) * KB_BYTES;
        const uint32_t dst0 = swz128(kb, row, 4 * (uu & 1) + q), dst1 = swz128(kb, row + 1, 4 * (uu & 1) + q);
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst0), "r"(pk0[0]), "r"(pk0[1]), "r"(pk0[2]),
                     "r"(pk0[3])
                     : "memory");
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst1), "r"(pk1[0]), "r"(pk1[1]), "r"(pk1[2]),
                     "r"(pk1[3])
                     : "memory");
      }
    }
    fence_proxy_async_smem();  // these writes are read by wgmma (async proxy)

    // ---- LN_in(x) -> A fragments in registers (as stage 1)
    const int buf = u % C::NXBUF;
    mbar_wait(xfull0 + 8 * buf, (u / C::NXBUF) & 1);
    load_frags<D>(ax, s_x + buf * C::XBYTES, 64 * cw + 16 * warp, lane);
    normalize_frags<D>(ax, lane, p_lniw, p_lnib, eps);
    bar_sync(BAR_WG + cw, 128);  // all 4 warps' A_z rows are written before the wgmmas read them

    float accp[32], accg[32];
#pragma unroll
    for (int k = 0; k < 32; ++k) accp[k] = accg[k] = 0.f;
    for (int j = 0; j < C::NCH; ++j) {
      // Residual x of this thread's outputs (tokens 64 cw + 16 warp + g + 8 h, channels
      // 64 j + 8 jj + 2 t4 + {0, 1}) from the tile's x in shared memory (k-block j, 16-byte chunk
      // jj: the 8 rows of one load fall in 8 bank groups), read before the turn wait. The tile's x
      // buffer is therefore held until the tile's last chunk. (Read again from global memory, 4
      // bytes over 8 rows per load instruction, it was the largest epilogue stall and half of the
      // L1 wavefronts in ncu.)
      const uint32_t xj = s_x + buf * C::XBYTES + (uint32_t)j * KB_BYTES;  // k-block j of the tile's x
      const int wrow = 64 * cw + 16 * warp;                                 // the warp's 16 tokens
      auto xres_addr = [&](int jj, int h) { return swz128(xj, wrow + g + 8 * h, jj) + 4u * (uint32_t)t4; };
      uint32_t xres[8][2];
#pragma unroll
      for (int jj = 0; jj < 8; ++jj)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          xres[jj][h] = 0u;
          if (residual) asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(xres[jj][h]) : "r"(xres_addr(jj, h)));
        }
      turn_wait(cw, issued);
      wgmma_fence();
      const int ws0 = ws;
#pragma unroll
      for (int kb = 0; kb < C::NKB; ++kb) {
        mbar_wait(wfull0 + 8 * ws, wph);
        const uint32_t slot = s_w + ws * W_STAGE;
        const uint64_t dp = smem_desc(slot, 16u, 2048u);           // p_out rows: 8-row groups 0, 2, 4, ...
        const uint64_t dg = smem_desc(slot + 1024u, 16u, 2048u);   // g_out rows: 8-row groups 1, 3, 5, ...
        const uint64_t da = smem_desc(s_az + kb * KB_BYTES + cw * (64 * 128), 16u, 1024u);
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {
          if (4 * kb + ks < C::KS) {
            const uint64_t step = (uint64_t)((ks * 32) >> 4);
            const int acc_on = (kb > 0 || ks > 0) ? 1 : 0;
            wgmma_m64n64k16_ss(accp, da + step, dp + step, acc_on);
            wgmma_m64n64k16_rs(accg, ax[4 * kb + ks], dg + step, acc_on);
          }
        }
        wgmma_commit();
        if (++ws == C::STAGES) {
          ws = 0;
          wph ^= 1u;
        }
      }
      turn_pass(cw);
      ++issued;
      // Biases of the epilogue's first channel pair, read while the MMAs run; each jj below reads
      // the next pair's before its gates (they waited on shared memory: ncu, 2026-12-01).
      float2 nbp = make_float2(0.f, 0.f), nbg = make_float2(0.f, 0.f);
      if (D % 64 == 0 || 64 * j + 2 * t4 < D) {
        nbp = *reinterpret_cast<const float2*>(p_bp + 64 * j + 2 * t4);
        nbg = *reinterpret_cast<const float2*>(p_bg + 64 * j + 2 * t4);
      }

#pragma unroll
      for (int kb = 0; kb < C::NKB; ++kb) {
        wgmma_wait_upto(C::NKB - 1 - kb);
        if (lane == 0) {
          int sl = ws0 + kb;
          if (sl >= C::STAGES) sl -= C::STAGES;
          mbar_arrive(wempty0 + 8 * sl);
        }
      }
      fence_regs(accp);
      fence_regs(accg);

      // ---- epilogue: out = sigmoid(g + bg) * (p + bp) (+ x), bf16 pairs straight from registers.
      // Thread outputs: tokens 64 cw + 16 warp + g (+ 8 h), channels 64 j + 8 jj + 2 t4 (+ 1).
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
            // over the residual it was computed from, in the tile's x buffer (see below)
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(xres_addr(jj, h)), "r"(pack_bf16x2(v0, v1)) : "memory");
          }
        }
      }
      // The warp's 16 tokens x 64 channels of this chunk now sit in the x buffer in out's layout:
      // one TMA store writes them (tokens past cols and channels past D lie outside the map), where
      // 16 four-byte stores per thread over 8 rows each went before.
      fence_proxy_async_smem();
      __syncwarp();
      if (lane == 0) {
        tma_store_4d(&tmO, xj + (uint32_t)wrow * 128u, 64 * j, j0 + wrow, i, b);
        bulk_commit();
      }
    }
    // The x buffer is rewritten by the next tile's load: the stores must have read it first.
    if (lane == 0) bulk_wait_read<0>();
    __syncwarp();
    if (lane == 0) mbar_arrive(xempty0 + 8 * buf);  // this warp's reads of the x tile are done
  }
  if (lane == 0) bulk_wait_all();
  if (cw == 0 && issued > 0) bar_sync(BAR_TURN + 0, 256);
}

// ------------------------------------------------------------------ host side
namespace {

// Raises a kernel's dynamic shared-memory limit once per device (bit per device < 64).
template <typename K>
cudaError_t raise_smem_once(K kernel, int smem, std::atomic<uint64_t>& done, int dev) {
  const uint64_t bit = dev < 64 ? (1ull << dev) : 0;
  if (bit != 0 && (done.load(std::memory_order_acquire) & bit)) return cudaSuccess;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e == cudaSuccess && bit != 0) done.fetch_or(bit, std::memory_order_acq_rel);
  return e;
}

cudaError_t sm_count(int* dev, int* sms) {
  cudaError_t e = cudaGetDevice(dev);
  if (e != cudaSuccess) return e;
  return cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, *dev);
}

template <int D>
cudaError_t launch_in_wgmma_t(const DevLayer& L, const void* x, const uint8_t* mask, const ProjInGeom& g,
                              const AbTarget& t, int64_t B, cudaStream_t s) {
  using C = InCfg<D>;
  // What TMA and the int tile arithmetic need; anything else (degenerate or odd inputs) takes
  // the mma.sync kernel, which has the same contract.
  const int64_t tiles_k = (g.out_cols + pw::TOK - 1) / pw::TOK;
  const int64_t total = B * g.out_rows * tiles_k;
  const bool group = g.chans != 0 && g.chans != D;
  if (group && (g.chan0 < 0 || g.chans < 0 || g.chan0 % 32 != 0 || g.chans % 32 != 0 || g.chan0 + g.chans > D))
    return cudaErrorInvalidValue;
  if (B <= 0 || g.out_rows <= 0 || g.out_cols <= 0 || g.x_rows <= 0 || g.x_cols <= 0 || total > INT_MAX ||
      g.x_rows > INT_MAX || g.x_cols > INT_MAX || B > INT_MAX || (reinterpret_cast<uintptr_t>(x) & 15) != 0 ||
      (reinterpret_cast<uintptr_t>(L.w_in) & 15) != 0)
    return group ? cudaErrorInvalidValue : launch_proj_in_to(L, x, mask, g, t, B, s);  // v1 has no channel groups

  CUtensorMap mx, mw;
  {
    // x: (B, x_rows, x_cols, D) bf16; box 64 channels x 128 tokens.
    const cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)g.x_cols, (cuuint64_t)g.x_rows, (cuuint64_t)B};
    const cuuint64_t strides[3] = {(cuuint64_t)D * 2, (cuuint64_t)g.x_cols * D * 2,
                                   (cuuint64_t)g.x_rows * g.x_cols * D * 2};
    const cuuint32_t box[4] = {64, pw::TOK, 1, 1};
    cudaError_t e = encode_bf16(&mx, x, 4, dims, strides, box);
    if (e != cudaSuccess) return e;
  }
  {
    // W1: [4D][D] bf16; box 64 k x 128 rows.
    const cuuint64_t dims[2] = {(cuuint64_t)D, (cuuint64_t)(4 * D)};
    const cuuint64_t strides[1] = {(cuuint64_t)D * 2};
    const cuuint32_t box[2] = {64, 128};
    cudaError_t e = encode_bf16(&mw, L.w_in, 2, dims, strides, box);
    if (e != cudaSuccess) return e;
  }
  int dev = 0, sms = 0;
  cudaError_t e = sm_count(&dev, &sms);
  if (e != cudaSuccess) return e;
  static std::atomic<uint64_t> prepared{0};
  e = raise_smem_once(proj_in_wgmma_kernel<D>, C::SMEM, prepared, dev);
  if (e != cudaSuccess) return e;
  const int grid = (int)std::min<int64_t>(total, sms);
  proj_in_wgmma_kernel<D><<<grid, pw::THREADS, C::SMEM, s>>>(mx, mw, mask, L.ln_in_w, L.ln_in_b, L.p_in_b, L.g_in_b, g,
                                                              t, L.eps, (int)g.out_rows, (int)tiles_k, (int)total);
  return cudaGetLastError();
}

template <int D>
cudaError_t launch_out_wgmma_t(const DevLayer& L, const void* x, const bf16_raw* z, void* out, int64_t B,
                               int64_t rows, int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s) {
  using C = OutCfg<D>;
  const int64_t tiles_k = (cols + pw::TOK - 1) / pw::TOK;
  const int64_t total = B * rows * tiles_k;
  if (B <= 0 || rows <= 0 || cols <= 0 || total > INT_MAX || rows > INT_MAX || cols > INT_MAX ||
      (reinterpret_cast<uintptr_t>(x) & 15) != 0 || (reinterpret_cast<uintptr_t>(out) & 15) != 0 ||
      (reinterpret_cast<uintptr_t>(L.w_out) & 15) != 0 ||
      // LN_out reads z a token pair per 4-byte load: pairs must be aligned, and an odd row's
      // last pair must end inside the row's padding.
      (reinterpret_cast<uintptr_t>(z) & 3) != 0 || ldz % 2 != 0 || sz % 2 != 0 || (cols % 2 != 0 && ldz <= cols))
    return launch_proj_out_tile(L, x, z, out, B, rows, cols, ldz, sz, s);

  CUtensorMap mx, mw, mo;
  {
    // x and out: (B, rows, cols, D) bf16; x loaded in boxes of 64 channels x 128 tokens, out
    // stored in boxes of 64 channels x 16 tokens (one consumer warp's rows of a chunk).
    const cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)cols, (cuuint64_t)rows, (cuuint64_t)B};
    const cuuint64_t strides[3] = {(cuuint64_t)D * 2, (cuuint64_t)cols * D * 2, (cuuint64_t)rows * cols * D * 2};
    const cuuint32_t box[4] = {64, pw::TOK, 1, 1};
    cudaError_t e = encode_bf16(&mx, x, 4, dims, strides, box);
    if (e != cudaSuccess) return e;
    const cuuint32_t obox[4] = {64, 16, 1, 1};
    e = encode_bf16(&mo, out, 4, dims, strides, obox);
    if (e != cudaSuccess) return e;
  }
  {
    // W3: [2D][D] bf16; box 64 k x 128 rows (rows past 2D zero-filled when D % 64 == 32).
    const cuuint64_t dims[2] = {(cuuint64_t)D, (cuuint64_t)(2 * D)};
    const cuuint64_t strides[1] = {(cuuint64_t)D * 2};
    const cuuint32_t box[2] = {64, 128};
    cudaError_t e = encode_bf16(&mw, L.w_out, 2, dims, strides, box);
    if (e != cudaSuccess) return e;
  }
  // The z rows can be bulk-prefetched when every row start is 16-byte aligned.
  const int z_prefetch = (reinterpret_cast<uintptr_t>(z) % 16 == 0 && sz % 8 == 0 && ldz % 8 == 0) ? 1 : 0;
  int dev = 0, sms = 0;
  cudaError_t e = sm_count(&dev, &sms);
  if (e != cudaSuccess) return e;
  static std::atomic<uint64_t> prepared{0};
  e = raise_smem_once(proj_out_wgmma_kernel<D>, C::SMEM, prepared, dev);
  if (e != cudaSuccess) return e;
  const int grid = (int)std::min<int64_t>(total, sms);
  proj_out_wgmma_kernel<D><<<grid, pw::THREADS, C::SMEM, s>>>(
      mx, mw, mo, static_cast<const bf16*>(x), z, L.ln_in_w, L.ln_in_b, L.ln_out_w, L.ln_out_b,
      L.p_out_b, L.g_out_b, (int)rows, (int)cols, (long long)ldz, (long long)sz, L.eps, L.residual, z_prefetch,
      (int)tiles_k, (int)total);
  return cudaGetLastError();
}

}  // namespace

#define FOLDCP_WGMMA_FOR_EACH_D(X) X(32) X(64) X(96) X(128) X(160) X(192) X(224) X(256)


cudaError_t launch_proj_in_wgmma_to(const DevLayer& L, const void* x, const uint8_t* mask, const ProjInGeom& g,
                                    const AbTarget& t, int64_t B, cudaStream_t s) {
  switch (L.dim) {
#define CASE(d) \
  case d:       \
    return launch_in_wgmma_t<d>(L, x, mask, g, t, B, s);
    FOLDCP_WGMMA_FOR_EACH_D(CASE)
#undef CASE
    default:
      return launch_proj_in_to(L, x, mask, g, t, B, s);  // not a wgmma size: the mma.sync kernel
  }
}

cudaError_t launch_proj_out_wgmma_tile(const DevLayer& L, const void* x, const bf16_raw* z, void* out, int64_t B,
                                       int64_t rows, int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s) {
  switch (L.dim) {
#define CASE(d) \
  case d:       \
    return launch_out_wgmma_t<d>(L, x, z, out, B, rows, cols, ldz, sz, s);
    FOLDCP_WGMMA_FOR_EACH_D(CASE)
#undef CASE
    default:
      return launch_proj_out_tile(L, x, z, out, B, rows, cols, ldz, sz, s);
  }
}

}  // namespace foldcp
