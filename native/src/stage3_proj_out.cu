// Stage 3 of the TriMul layer: LN_out(z) + output projection p_out, gate g_out on LN_in(x),
// biases and the residual: out = sigmoid(LN_in(x) g_out^T + bg) * (LN_out(z) p_out^T + bp) (+ x).
// z arrives channel-major (the triangle GEMM's layout); LN_out reads it per token, so the channel
// -> token layout change happens on this kernel's loads. On Hopper's wgmma + TMA pipeline of
// pipeline.cuh.
//
// A template of the pair width D (x, out: the output channels, g_out's K) and the hidden width H
// (z: p_out's K). At D, H <= kResidentOutMax with z's rows 16-byte aligned launch_proj_out_tile
// takes the resident kernel instead (stage3_resident.cu: the same chunks and epilogue, W3 kept
// in shared memory, no turns); above kFusedOutMax the wide kernel (stage3_wide.cuh), and above
// kWideOutMax two kernels with p between them in HBM (stage3_split.cuh).
// Tile = tokens (b, i, j0 .. j0 + 127) of (B, rows, cols); tokens j >= cols are not stored.
// W3 ([2D][max(D, H)], the layout of the pairs up to kWideOutMax) chunk j = rows 128 j .. 128 j + 127 =
// output channels 64 j .. 64 j + 63,
// 8-row groups alternating p_out, g_out: two wgmma B views of the same slot (descriptor stride
// 2048 B between 8-row groups, the g view starting 1024 B in), so p and g of a channel land in the
// same thread's registers. Each view is multiplied only over its own K (the rows are zero past it).
//   p: A = LN_out(z) (H channels) from shared memory (written by the consumers: z is channel-major
//      bf16, its LayerNorm needs a transpose), m64n64k16 SS;
//   g: A = LN_in(x) (D channels) fragments in registers, m64n64k16 RS.
// z reaches LN_out by TMA (z_tma: its rows 16-byte aligned, the workspace's always are): a third
// producer thread loads each consumer warpgroup's raw z of a tile (64 tokens x H channels,
// channel-major) into that warpgroup's own rows of the A_z tile as soon as its last MMA of the
// previous tile has read them, so the load runs during that tile's last epilogue; the warpgroup
// takes it into registers (thread = token pair x quarter of the channels, H / 4 registers) and
// LN_out writes the normalized rows over it. (Loaded from global memory by the consumers, LN_out
// was a third of their time at D = H = 256 in ncu's source-level samples.) Otherwise the
// consumers load z from global memory themselves, from L2: the x producer prefetches each tile's
// z rows (cp.async.bulk.prefetch.L2) when it loads the tile's x, up to NXBUF tiles ahead.
// x may alias out: the tile's x reaches shared memory by TMA before any of the tile's outputs is
// written, and the residual is read from that copy (the buffer is held until the tile's last
// chunk); tiles do not overlap.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "common.cuh"
#include "pipeline.cuh"
#include "stage3_common.cuh"
#include "stage3_split.cuh"
#include "stage3_wide.cuh"
#include "trimul_internal.h"
#include "wgmma_common.cuh"

namespace foldcp {

// x tiles in flight. A buffer frees after its tile's last chunk (the residual is read from it);
// with one buffer (D > 128) the next tile's x comes from L2 (prefetched a tile ahead) while the
// consumers run its LN_out. Short tiles (small D) get more buffers.
constexpr int out_x_buffers(int D) {
  return proj::x_tile_bytes(D) <= 16384 ? 4 : proj::x_tile_bytes(D) <= 32768 ? 2 : 1;
}
// Besides the x tiles and the weight ring: the tile's LN_out(z) (128B-swizzled K-major, as an x
// tile of H channels), then LN_in w, b (D), LN_out w, b (H), bp, bg (D).
template <int D, int H>
struct OutCfg : ProjCfg<D, out_x_buffers(D), proj::x_tile_bytes(H) + (4 * D + 2 * H) * 4, (D > H ? D : H)> {
  static constexpr int KW = D > H ? D : H;  // the columns of W3
  // W3 chunks of 128 rows (64 output channels; the last one half used when D % 64 == 32)
  static constexpr int NCH = (D + 63) / 64;
  static constexpr int AZBYTES = proj::x_tile_bytes(H);  // LN_out(z) of the tile
  static constexpr int KS_H = H / 16;                    // k16 steps of p_out (those of g_out: KS)
  static constexpr int NKB_H = (H + 63) / 64;            // k-blocks of A_z (z's TMA boxes per warpgroup)
};

template <int D, int H>
__global__ void __launch_bounds__(proj::THREADS, 1)
    proj_out_wgmma_kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
                          const __grid_constant__ CUtensorMap tmO, const __grid_constant__ CUtensorMap tmZ,
                          const bf16* x, const bf16_raw* __restrict__ z,
                          const float* __restrict__ lniw,
                          const float* __restrict__ lnib, const float* __restrict__ lnow,
                          const float* __restrict__ lnob, const float* __restrict__ pout_b,
                          const float* __restrict__ gout_b, int rows, int cols, long long ldz, long long sz, float eps,
                          int residual, int z_prefetch, int z_tma, int tiles_k, int total) {
  using namespace proj;
  using C = OutCfg<D, H>;
  // the x buffers' and the weight ring's barriers, then z's: full and empty per warpgroup
  constexpr int RINGBARS = 2 * C::NXBUF + 2 * C::STAGES;
  static_assert((RINGBARS + 2 * CONSUMERS) * 8 <= STATIC_SMEM, "the mbarriers outgrow STATIC_SMEM");
  __shared__ __align__(8) uint64_t bars[RINGBARS + 2 * CONSUMERS];
  extern __shared__ uint8_t smem_raw[];
  uint8_t* sm;
  const uint32_t base = aligned_smem(smem_raw, &sm);
  const uint32_t s_x = base;                         // NXBUF x tiles
  const uint32_t s_az = s_x + C::NXBUF * C::XBYTES;  // LN_out(z) tile
  const uint32_t s_w = s_az + C::AZBYTES;            // STAGES weight slots
  const OutVecs vec = load_out_vecs<D, H>(reinterpret_cast<float*>(sm + (s_w - base) + C::STAGES * W_STAGE), lniw,
                                          lnib, lnow, lnob, pout_b, gout_b);
  const RingBars rb = ring_bars<C::NXBUF, C::STAGES>(bars);
  const ZBars zb = z_bars(&bars[RINGBARS]);
  zb.init();
  init_ring_bars<C::NXBUF, C::STAGES>(rb);

  const int wg = threadIdx.x >> 7;
  const int tid_wg = threadIdx.x & 127;
  const int n_local = tiles_of_this_cta(total);

  if (wg == 0) {
    // ------------------------------------------------------------ producers
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid_wg == 0 && n_local > 0) {
      produce_weights<C::WKB, C::STAGES>(&tmW, s_w, rb, n_local, 0, C::NCH);
    } else if (tid_wg == 32 && n_local > 0) {
      tma_prefetch_map(&tmX);
      for (int v = 0; v < n_local; ++v) {
        const TokenTile tt = token_tile(v, tiles_k, rows);
        const int i = tt.i, b = tt.b;
        const int j0 = tt.kt * TOK;
        // (the x buffer frees only when the previous tile's last chunk has read its residual, so
        // the TMA load below then finds L2)
        prefetch_out_tile<D, H>(x, z, b, i, j0, rows, cols, ldz, sz, z_prefetch);
        load_x_tile<C::NKB, C::NXBUF, C::XBYTES>(v, &tmX, s_x, rb, j0, i, b);
      }
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

  for (int u = 0; u < n_local; ++u) {
    const TokenTile tt = token_tile(u, tiles_k, rows);
    const int i = tt.i, b = tt.b;
    const int j0 = tt.kt * TOK;
    const int jvalid = min(TOK, cols - j0);

    // ---- LN_out(z) -> this warpgroup's 64 rows of the A_z tile (its previous wgmmas are complete:
    // by program order on the path from global memory, through zempty / zfull on the TMA path).
    {
      ZPair<H> zr;
      if (z_tma) {
        mbar_wait(zb.full(cw), u & 1);
        ln_out_load_smem<H>(zr, s_az, cw, warp, lane);
        bar_sync(BAR_WG + cw, 128);  // every raw row is read before LN_out overwrites them
      } else {
        ln_out_load<H>(zr, z, b, i, j0, jvalid, ldz, sz, cw, warp, lane);
      }
      ln_out_store<H>(zr, vec.lnow, vec.lnob, eps, s_az, cw, warp, lane);
    }
    fence_proxy_async_smem();  // these writes are read by wgmma (async proxy)

    // ---- LN_in(x) -> A fragments in registers
    const int buf = ln_in_frags<D, C::NXBUF, C::XBYTES>(ax, u, rb, s_x, cw, warp, lane, vec.lniw, vec.lnib, eps);
    bar_sync(BAR_WG + cw, 128);  // all 4 warps' A_z rows are written before the wgmmas read them

    float accp[32], accg[32];
#pragma unroll
    for (int k = 0; k < 32; ++k) accp[k] = accg[k] = 0.f;
    for (int j = 0; j < C::NCH; ++j) {
      // (the residual is read from the tile's x buffer, which is therefore held until the tile's
      // last chunk, and the outputs written over it: OutChunk)
      const OutChunk<D> oc{s_x + buf * C::XBYTES + (uint32_t)j * KB_BYTES, 64 * cw + 16 * warp, g, t4, j};
      uint32_t xres[8][2];
      oc.load_residual(xres, residual);
      const int ws0 = issue_chunk<C::WKB>(cw, ring, rb, s_w, [&](int kb, uint32_t slot) {
        out_kblock_mmas<C::KS_H, C::KS>(accp, accg, ax, s_az + cw * WG_KB_BYTES, slot, kb);
      });
      float2 nbp, nbg;
      oc.first_biases(vec.bp, vec.bg, nbp, nbg);
      release_chunk<C::WKB, C::STAGES>(ws0, rb, lane);
      // the tile's last MMAs are complete: A_z may take the next tile's z
      if (z_tma && j == C::NCH - 1) zb.release(cw, lane);
      fence_regs(accp);
      fence_regs(accg);
      oc.gate(accp, accg, xres, nbp, nbg, vec.bp, vec.bg, residual);
      oc.store(&tmO, lane, j0 + oc.wrow, i, b);
    }
    // The x buffer is rewritten by the next tile's load: the stores must have read it first.
    if (lane == 0) bulk_wait_read<0>();
    __syncwarp();
    if (lane == 0) mbar_arrive(rb.xempty(buf));  // this warp's reads of the x tile are done
  }
  if (lane == 0) bulk_wait_all();
  turn_finish(cw, ring.issued);
}

// ------------------------------------------------------------------ host side
namespace {

template <int D, int H>
cudaError_t launch_out_t(const DevLayer& L, const void* x, const bf16_raw* z, void* out, int64_t B, int64_t rows,
                         int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s) {
  using C = OutCfg<D, H>;
  const int64_t tiles_k = (cols + proj::TOK - 1) / proj::TOK;
  const int64_t total = B * rows * tiles_k;
  if (!out_args_ok(L, x, z, out, B, rows, cols, ldz, sz, total)) return cudaErrorInvalidValue;

  // x and out: (B, rows, cols, D) bf16; x loaded in boxes of 64 channels x 128 tokens, out
  // stored in boxes of 64 channels x 16 tokens (one consumer warp's rows of a chunk).
  CUtensorMap mx, mw, mo, mz{};
  cudaError_t e = encode_tokens(&mx, x, D, cols, rows, B, proj::TOK);
  if (e != cudaSuccess) return e;
  e = encode_tokens(&mo, out, D, cols, rows, B, 16);
  if (e != cudaSuccess) return e;
  // W3: [2D][max(D, H)] (rows past 2D zero-filled when D % 64 == 32, columns past it when its K % 64 == 32)
  e = encode_weights(&mw, L.w_out, C::KW, 2 * D);
  if (e != cudaSuccess) return e;
  // z by TMA where its rows are 16-byte aligned; else LN_out loads it from global memory.
  const int z_prefetch = z_rows_aligned(z, ldz, sz);
  const int z_tma = encode_z_rows(&mz, z, H, B, rows, cols, ldz, sz);
  return launch_persistent<proj_out_wgmma_kernel<D, H>>(
      C::SMEM, total, s, mx, mw, mo, mz, static_cast<const bf16*>(x), z, L.ln_in_w, L.ln_in_b, L.ln_out_w, L.ln_out_b,
      L.p_out_b, L.g_out_b, (int)rows, (int)cols, (long long)ldz, (long long)sz, L.eps, L.residual, z_prefetch,
      z_tma, (int)tiles_k, (int)total);
}

// The wide kernels (stage3_wide.cuh) by range of D (the ranges of FOLDCP_WIDE_RANGES, one
// translation unit each): launched, or prepared (prepare = true).
cudaError_t wide_out(const DevLayer& L, const void* x, const bf16_raw* z, void* out, int64_t B, int64_t rows,
                     int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s, bool prepare) {
#define FOLDCP_WIDE_CALL(lo, hi) \
  if (L.dim <= hi) return wide::out_range<lo, hi>(L, x, z, out, B, rows, cols, ldz, sz, s, prepare);
  FOLDCP_WIDE_RANGES(FOLDCP_WIDE_CALL)
#undef FOLDCP_WIDE_CALL
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_proj_out_tile(const DevLayer& L, const void* x, const bf16_raw* z, void* out, void* pbuf,
                                 int64_t B, int64_t rows, int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s) {
  if (proj_out_split(L.dim, L.hidden)) {
    // Checked before P runs, so that a call G would refuse leaves out untouched (pbuf may be out):
    // G's own checks, and p's bytes clear of x's, of z's planes and (unless out itself) of out's.
    if (B <= 0 || rows <= 0 || cols <= 0 || pbuf == nullptr || !split_g_args_ok(L, x, pbuf, out))
      return cudaErrorInvalidValue;
    const size_t tile_bytes = proj_out_pbuf_bytes(L.dim, B, rows, cols);  // (x's and out's too)
    auto overlaps = [&](const void* a, size_t bytes) {
      const uintptr_t p0 = reinterpret_cast<uintptr_t>(pbuf), a0 = reinterpret_cast<uintptr_t>(a);
      return p0 < a0 + bytes && a0 < p0 + tile_bytes;
    };
    if (overlaps(x, tile_bytes) || overlaps(z, (size_t)B * L.hidden * (size_t)sz * 2) ||
        (pbuf != out && overlaps(out, tile_bytes)))
      return cudaErrorInvalidValue;
    const cudaError_t e = launch_split_p(L, z, pbuf, B, rows, cols, ldz, sz, s);
    if (e != cudaSuccess) return e;
    return launch_split_g(L, x, pbuf, out, B, rows, cols, s);
  }
  if (proj_out_past_fused(L.dim, L.hidden)) return wide_out(L, x, z, out, B, rows, cols, ldz, sz, s, false);
  if (proj_out_resident_takes(L.dim, L.hidden, z, ldz, sz)) {
    const cudaError_t e = launch_proj_out_resident(L, x, z, out, B, rows, cols, ldz, sz, s);
    if (e != cudaErrorNotSupported) return e;  // (z's map refused: the fused kernel loads it itself)
  }
  return with_dims<kFusedOutMax>(L.dim, L.hidden, [&](auto d, auto h) {
    return launch_out_t<decltype(d)::value, decltype(h)::value>(L, x, z, out, B, rows, cols, ldz, sz, s);
  });
}

// One GPU: the workspace's z (N rows of Np per channel plane) for the (B, N, N) tokens; a split
// pair's p in out (out != x: the workspace's a and b stay as stage 1 left them, which the tests
// read), else in `spare` where it fits, else slab by slab (trimul_internal.h).
cudaError_t launch_proj_out(const DevLayer& L, const void* x, const bf16_raw* z, void* out, void* spare,
                            size_t spare_bytes, int64_t B, int64_t N, int64_t sz, cudaStream_t s) {
  const int64_t np = padded_n(N);
  if (!proj_out_split(L.dim, L.hidden)) return launch_proj_out_tile(L, x, z, out, nullptr, B, N, N, np, sz, s);
  if (out != x) return launch_proj_out_tile(L, x, z, out, out, B, N, N, np, sz, s);
  if (proj_out_pbuf_bytes(L.dim, B, N, N) <= spare_bytes)
    return launch_proj_out_tile(L, x, z, out, spare, B, N, N, np, sz, s);
  // In place, p of the whole grid larger than the spare room (D > 2 x the channel group): rows
  // i0 .. i0 + slab - 1 of complex b at a time, as a (1, slab, N) tile (z's planes of b, from row i0).
  const size_t row_bytes = proj_out_pbuf_bytes(L.dim, 1, 1, N);
  const int64_t slab = std::min<int64_t>(N, (int64_t)(spare_bytes / row_bytes));
  if (slab < 1) return cudaErrorInvalidValue;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i0 = 0; i0 < N; i0 += slab) {
      const int64_t r = std::min(slab, N - i0);
      const size_t off = (size_t)(b * N + i0) * row_bytes;
      const cudaError_t e =
          launch_proj_out_tile(L, static_cast<const char*>(x) + off, z + (b * L.hidden * sz + i0 * np),
                               static_cast<char*>(out) + off, spare, 1, r, N, np, sz, s);
      if (e != cudaSuccess) return e;
    }
  return cudaSuccess;
}

cudaError_t prepare_proj_out(int dim, int hidden) {
  if (proj_out_split(dim, hidden)) return prepare_split(dim, hidden);
  if (proj_out_past_fused(dim, hidden)) {
    DevLayer l{};
    l.dim = dim;
    l.hidden = hidden;
    return wide_out(l, nullptr, nullptr, nullptr, 0, 0, 0, 0, 0, nullptr, true);
  }
  if (dim <= kResidentOutMax && hidden <= kResidentOutMax) {
    const cudaError_t e = prepare_proj_out_resident(dim, hidden);
    if (e != cudaSuccess) return e;
  }
  return with_dims<kFusedOutMax>(dim, hidden, [](auto d, auto h) {
    constexpr int D = decltype(d)::value, H = decltype(h)::value;
    return prepare_on_current_device<proj_out_wgmma_kernel<D, H>>(OutCfg<D, H>::SMEM);
  });
}

}  // namespace foldcp
