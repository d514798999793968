// Stage 3 for D, H <= kResidentOutMax (128), the widths where the stage moves far more bytes than
// it multiplies (per token 2 D + 2 H bytes in, 2 D out, for 2 D (D + H) flops: it is bound by
// HBM). The same math, the same chunks and the same epilogue as proj_out_wgmma_kernel
// (stage3_proj_out.cu), bit for bit; what differs is the schedule:
//   - W3 ([2D][max(D, H)], 64 KiB at D = H = 128) is loaded once per CTA and stays in shared
//     memory: no weight ring, so the two consumer warpgroups share nothing that makes them wait
//     for each other (no turns);
//   - each consumer warpgroup runs its own tiles of 64 tokens (b, i, j0 .. j0 + 63): the CTA's
//     tiles u = cw, cw + 2, ... of its persistent list, through its own two slots, each slot
//     holding a tile's raw x and raw z (TMA, one mbarrier for both). While one warpgroup runs its
//     LayerNorms (no MMAs), the other's MMAs run, and each slot's loads are issued a tile ahead.
//     (No L2 prefetches: issued two tiles ahead, about 15 us before their TMA loads at
//     (1,2048,128) on an H100, most of them were evicted first and the stage read 5.2 GB of HBM
//     for 3.2 GB of data.)
// In the fused kernel both warpgroups start a 128-token tile together (they share each weight
// chunk) and wait for the tile's z, which can only be loaded once the previous tile's last MMA
// has read A_z: at (1,2048,128) it ran at about half of HBM's bandwidth.
// Slots: x_tile_bytes(D) + x_tile_bytes(H) bytes each, laid out as the fused kernel's 128-token
// tiles (k-blocks of 128 rows x 128 B, 128B swizzle), warpgroup cw using rows 64 cw .. 64 cw + 63
// of every k-block, so the fused kernel's LN_out, LN_in and epilogue address them unchanged.
// x may alias out: a tile's x is in shared memory before any of its outputs is written, the
// residual is read from that copy, and tiles do not overlap.
// Needs z's rows 16-byte aligned (TMA); launch_proj_out_tile takes the fused kernel otherwise.
#include <climits>
#include <cstdint>

#include "common.cuh"
#include "pipeline.cuh"
#include "stage3_common.cuh"
#include "trimul_internal.h"
#include "wgmma_common.cuh"

namespace foldcp {
namespace {

constexpr int kResTok = 64;  // tokens per tile (one consumer warpgroup's)
constexpr int kResSlots = 2;  // slots per consumer warpgroup

template <int D, int H>
struct ResCfg {
  static constexpr int KW = D > H ? D : H;       // the columns of W3
  static constexpr int NCH = (D + 63) / 64;      // W3 chunks of 128 rows (64 output channels)
  static constexpr int WKB = (KW + 63) / 64;     // k-blocks per chunk
  static constexpr int NKB = (D + 63) / 64;      // k-blocks of x
  static constexpr int NKB_H = (H + 63) / 64;    // k-blocks of z
  static constexpr int KS = D / 16, KS_H = H / 16;
  static constexpr int WBYTES = NCH * WKB * proj::W_STAGE;
  static constexpr int XBYTES = proj::x_tile_bytes(D), ZBYTES = proj::x_tile_bytes(H);
  static constexpr int SLOT = XBYTES + ZBYTES;  // a slot pair: both warpgroups' halves
  // what one warpgroup's slot receives: NKB + NKB_H boxes of 64 tokens x 64 channels
  static constexpr int SLOT_TX = (NKB + NKB_H) * proj::WG_KB_BYTES;
  static constexpr int PARAMS = (4 * D + 2 * H) * 4;
  static constexpr int SMEM = WBYTES + kResSlots * SLOT + PARAMS + 1024;
  static_assert(SMEM + proj::STATIC_SMEM <= proj::SMEM_LIMIT, "over the shared-memory limit");
  static_assert(WBYTES < (1 << 20) && SLOT_TX < (1 << 20), "mbarrier tx-count is 20 bits");
};

// The mbarriers (RingBars): xfull / xempty(c kResSlots + s) of consumer warpgroup c's slot s (the
// producer's arrival plus the TMA bytes of x and z; the warpgroup's 4 warps once the tile's
// outputs have left the slot), wfull(0) for W3.
constexpr int kResBufs = proj::CONSUMERS * kResSlots;
__device__ __forceinline__ int res_buf(int c, int s) { return c * kResSlots + s; }

// This warpgroup's n-th tile (the CTA's local tile u = cw + 2 n): tokens (b, i, 64 kt ..).
__device__ __forceinline__ TokenTile res_tile(int n, int cw, int tiles_k, int rows) {
  return token_tile(cw + proj::CONSUMERS * n, tiles_k, rows);
}
__device__ __forceinline__ int res_tiles_of(int n_local, int cw) {
  return n_local > cw ? (n_local - 1 - cw) / proj::CONSUMERS + 1 : 0;
}

template <int D, int H>
__global__ void __launch_bounds__(proj::THREADS, 1)
    proj_out_resident_kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
                             const __grid_constant__ CUtensorMap tmO, const __grid_constant__ CUtensorMap tmZ,
                             const float* __restrict__ lniw,
                             const float* __restrict__ lnib, const float* __restrict__ lnow,
                             const float* __restrict__ lnob, const float* __restrict__ pout_b,
                             const float* __restrict__ gout_b, int rows, float eps, int residual, int tiles_k,
                             int total) {
  using namespace proj;
  using C = ResCfg<D, H>;
  __shared__ __align__(8) uint64_t bars[2 * kResBufs + 2];
  extern __shared__ uint8_t smem_raw[];
  uint8_t* sm;
  const uint32_t base = aligned_smem(smem_raw, &sm);
  const uint32_t s_w = base;                  // W3: chunk j, k-block kb at (j WKB + kb) W_STAGE
  const uint32_t s_slot = s_w + C::WBYTES;    // slot s: x tile, then z tile, at s SLOT
  const OutVecs vec = load_out_vecs<D, H>(reinterpret_cast<float*>(sm + C::WBYTES + kResSlots * C::SLOT), lniw, lnib,
                                          lnow, lnob, pout_b, gout_b);
  const RingBars rb = ring_bars<kResBufs, 1>(bars);
  init_ring_bars<kResBufs, 1>(rb, 4);  // (its __syncthreads also publishes the vectors)

  const int wg = threadIdx.x >> 7;
  const int tid_wg = threadIdx.x & 127;
  const int n_local = tiles_of_this_cta(total);

  if (wg == 0) {
    // ------------------------------------------------------------ producers
    // Thread 32 c feeds consumer warpgroup c; thread 0 first loads W3.
    setmaxnreg_dec<PRODUCER_REGS>();
    const int c = tid_wg >> 5;
    if ((tid_wg & 31) != 0 || c >= CONSUMERS || n_local <= c) return;
    if (c == 0) load_weights_once<C::WKB>(&tmW, s_w, rb.wfull(0), 0, C::NCH);
    tma_prefetch_map(&tmX);
    tma_prefetch_map(&tmZ);
    const int n_mine = res_tiles_of(n_local, c);
    for (int n = 0; n < n_mine; ++n) {
      const int s = n % kResSlots;
      const TokenTile tt = res_tile(n, c, tiles_k, rows);
      const int j0 = tt.kt * kResTok;
      mbar_wait(rb.xempty(res_buf(c, s)), ((n / kResSlots) & 1) ^ 1u);
      mbar_arrive_expect_tx(rb.xfull(res_buf(c, s)), C::SLOT_TX);
      const uint32_t sx = s_slot + s * C::SLOT + c * WG_KB_BYTES, sz_ = sx + C::XBYTES;
#pragma unroll
      for (int kb = 0; kb < C::NKB; ++kb)
        tma_load_4d(sx + kb * KB_BYTES, &tmX, kb * 64, j0, tt.i, tt.b, rb.xfull(res_buf(c, s)));
#pragma unroll
      for (int kb = 0; kb < C::NKB_H; ++kb)
        tma_load_4d(sz_ + kb * KB_BYTES, &tmZ, j0, tt.i, 64 * kb, tt.b, rb.xfull(res_buf(c, s)));
    }
    return;
  }

  // -------------------------------------------------------------- consumers
  setmaxnreg_inc<CONSUMER_REGS>();
  const int cw = wg - 1;  // rows 64 cw .. 64 cw + 63 of each slot's k-blocks
  const int lane = tid_wg & 31, warp = tid_wg >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int n_mine = res_tiles_of(n_local, cw);

  uint32_t ax[C::KS][4];
  float accp[32], accg[32];
#pragma unroll
  for (int k = 0; k < 32; ++k) accp[k] = accg[k] = 0.f;
  if (n_mine > 0) mbar_wait(rb.wfull(0), 0);
  for (int n = 0; n < n_mine; ++n) {
    const int s = n % kResSlots;
    const TokenTile tt = res_tile(n, cw, tiles_k, rows);
    const int i = tt.i, b = tt.b, j0 = tt.kt * kResTok;
    const uint32_t sx = s_slot + s * C::SLOT, saz = sx + C::XBYTES;
    mbar_wait(rb.xfull(res_buf(cw, s)), (n / kResSlots) & 1);

    // ---- LN_out(z) over the raw z in this warpgroup's rows of the slot's A_z tile (tokens past
    // cols arrive zero-filled; their outputs are not stored)
    {
      ZPair<H> zr;
      ln_out_load_smem<H>(zr, saz, cw, warp, lane);
      bar_sync(BAR_WG + cw, 128);  // every raw row is read before LN_out overwrites them
      ln_out_store<H>(zr, vec.lnow, vec.lnob, eps, saz, cw, warp, lane);
    }
    fence_proxy_async_smem();  // these writes are read by wgmma (async proxy)
    // ---- LN_in(x) -> A fragments in registers
    load_frags<D>(ax, sx, 64 * cw + 16 * warp, lane);
    normalize_frags<D>(ax, lane, vec.lniw, vec.lnib, eps);
    bar_sync(BAR_WG + cw, 128);  // all 4 warps' A_z rows are written before the wgmmas read them

    for (int j = 0; j < C::NCH; ++j) {
      const OutChunk<D> oc{sx + (uint32_t)j * KB_BYTES, 64 * cw + 16 * warp, g, t4, j};
      uint32_t xres[8][2];
      oc.load_residual(xres, residual);
      // Orders the A-fragment writes (LayerNorm) and the accumulator reads (last epilogue) before
      // the wgmmas that read / overwrite them.
      wgmma_fence();
#pragma unroll
      for (int kb = 0; kb < C::WKB; ++kb)
        out_kblock_mmas<C::KS_H, C::KS>(accp, accg, ax, saz + cw * WG_KB_BYTES, s_w + (j * C::WKB + kb) * W_STAGE, kb);
      wgmma_commit();
      float2 nbp, nbg;
      oc.first_biases(vec.bp, vec.bg, nbp, nbg);
      wgmma_wait<0>();
      fence_regs(accp);
      fence_regs(accg);
      oc.gate(accp, accg, xres, nbp, nbg, vec.bp, vec.bg, residual);
      oc.store(&tmO, lane, j0 + 16 * warp, i, b);
    }
    // The slot is rewritten by a later tile's loads: the stores must have read it first.
    if (lane == 0) bulk_wait_read<0>();
    __syncwarp();
    if (lane == 0) mbar_arrive(rb.xempty(res_buf(cw, s)));
  }
  if (lane == 0) bulk_wait_all();
}

template <int D, int H>
cudaError_t launch_resident_t(const DevLayer& L, const void* x, const bf16_raw* z, void* out, int64_t B, int64_t rows,
                              int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s) {
  using C = ResCfg<D, H>;
  const int64_t tiles_k = (cols + kResTok - 1) / kResTok;
  const int64_t total = B * rows * tiles_k;
  if (!out_args_ok(L, x, z, out, B, rows, cols, ldz, sz, total)) return cudaErrorInvalidValue;
  // x: boxes of 64 channels x 64 tokens; out: 64 channels x 16 tokens (one consumer warp's rows of
  // a chunk); W3: [2D][max(D, H)] in boxes of 64 k x 128 rows (rows past 2D zero-filled); z: as
  // the fused kernel's (encode_z_rows: 16-byte aligned rows, which proj_out_resident_takes checked;
  // a layout the encoder refuses anyway returns cudaErrorNotSupported, for the fused kernel).
  CUtensorMap mx, mw, mo, mz{};
  cudaError_t e = encode_tokens(&mx, x, D, cols, rows, B, kResTok);
  if (e != cudaSuccess) return e;
  e = encode_tokens(&mo, out, D, cols, rows, B, 16);
  if (e != cudaSuccess) return e;
  e = encode_weights(&mw, L.w_out, C::KW, 2 * D);
  if (e != cudaSuccess) return e;
  if (!encode_z_rows(&mz, z, H, B, rows, cols, ldz, sz)) return cudaErrorNotSupported;
  return launch_persistent<proj_out_resident_kernel<D, H>>(
      C::SMEM, total, s, mx, mw, mo, mz, L.ln_in_w, L.ln_in_b, L.ln_out_w, L.ln_out_b, L.p_out_b, L.g_out_b,
      (int)rows, L.eps, L.residual, (int)tiles_k, (int)total);
}

}  // namespace

bool proj_out_resident_takes(int dim, int hidden, const bf16_raw* z, int64_t ldz, int64_t sz) {
  return dim <= kResidentOutMax && hidden <= kResidentOutMax && z_rows_aligned(z, ldz, sz);
}

cudaError_t launch_proj_out_resident(const DevLayer& L, const void* x, const bf16_raw* z, void* out, int64_t B,
                                     int64_t rows, int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s) {
  return with_dims<kResidentOutMax>(L.dim, L.hidden, [&](auto d, auto h) {
    return launch_resident_t<decltype(d)::value, decltype(h)::value>(L, x, z, out, B, rows, cols, ldz, sz, s);
  });
}

cudaError_t prepare_proj_out_resident(int dim, int hidden) {
  return with_dims<kResidentOutMax>(dim, hidden, [](auto d, auto h) {
    constexpr int D = decltype(d)::value, H = decltype(h)::value;
    return prepare_on_current_device<proj_out_resident_kernel<D, H>>(ResCfg<D, H>::SMEM);
  });
}

}  // namespace foldcp
