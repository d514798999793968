// Stage 1 of the TriMul layer: LN_in + input projections (p_in, g_in) + gates + mask, and the
// stores of a and b in the channel-major layout the triangle GEMM reads (the token -> channel
// layout change rides the epilogue's stores; under context parallelism they go straight to the
// rank that owns each channel: AbTarget). On Hopper's wgmma + TMA pipeline of pipeline.cuh.
//
// Tile = tokens (b, i, k0 .. k0 + 127) of the ProjInGeom grid; W1 ([4H][D]) chunk j = rows
// 128 j .. 128 j + 127 = hidden channels 32 j .. 32 j + 31 as (p_a, g_a, p_b, g_b) x 8 per group
// of 8 (above D = 384: rows 64 j .., channels 16 j .., in_chunk_channels). The kernel is a
// template of D (the x tile, K); the hidden width H is a kernel argument, the count of chunks.
// Per chunk each consumer warpgroup computes 64 tokens x 128 rows (K = D) into 64 fp32 registers
// per thread (64 rows into 32 above D = 384), then the gates; a and b go through an 8 KiB
// transposing buffer per warpgroup to 16-byte stores of 8 tokens of one channel (the AbTarget
// layout). A = LN_in(x): wgmma A fragments in registers (channels past 256 in shared memory).
#include <climits>
#include <cstdint>
#include <type_traits>

#include "common.cuh"
#include "pipeline.cuh"
#include "trimul_internal.h"
#include "wgmma_common.cuh"

namespace foldcp {

// The x ring's k-block slots (16 KiB each). Up to D = 256 as many as the whole-tile buffers of
// before held (4, 3, 2 or 1 tiles by tile size: enough to cover the HBM latency when tiles are
// short); above, 3 slots, so that a chunk plus one k-block of weights still fits (a tile of x no
// longer needs to: the consumers take it k-block by k-block); above D = 384, 2: the x producer
// prefetches a tile's x into L2 a tile ahead (in_x_l2_ahead), so the ring only covers L2's
// latency, and the 16 KiB go to the weight ring, which at D = 512 was too shallow for L2
// (the eleventh session's profile: 22 % of the samples on the turn barrier, 10-15 % on wfull).
constexpr int in_x_slots(int D) {
  return D > 384                                ? 2
         : D > 256                              ? 3
         : proj::x_tile_bytes(D) <= 16384 ? 4 * ((D + 63) / 64)
         : proj::x_tile_bytes(D) <= 32768 ? 3 * ((D + 63) / 64)
         : proj::x_tile_bytes(D) <= 49152 ? 2 * ((D + 63) / 64)
                                          : (D + 63) / 64;
}
// The channels of LN_in(x) the consumers keep in registers as wgmma A fragments: all of them up
// to D = 384; above, 256, and the rest (the tail) goes to shared memory and is read by wgmma from
// there, so that the chunk loop's registers stay those of D = 256. (The whole of LN_in(x) beside
// the accumulators spilled from D = 288 and had ptxas serialize the wgmmas from D = 320: 888 B of
// spills at D = 384, 2.4 KB at 512. Most of that was the watchdog's __trap() (wgmma_common.cuh),
// which held the consumers to the launch bound's 168 registers: without it D = 384 whole in
// registers spills 24 B and nothing is serialized.)
constexpr int in_reg_width(int D) { return D > 384 ? 256 : D; }
// Hidden channels per W1 chunk: 32 (128 rows: p_a, g_a, p_b, g_b of 32 channels in 8-row groups;
// an m64n128 accumulator of 64 registers) up to D = 384. Above, a tail of up to 256 channels
// (64 KiB) and a weight ring of a 128-row chunk plus one k-block (9 slots of 16 KiB) do not fit
// beside the x ring; chunks of 16 channels (64 rows, slots of 8 KiB, m64n64, 32 accumulator
// registers) do, with a ring of a chunk plus four to seven k-blocks (in_w_cap). The gates, the
// transposing buffer and the stores are the same per group of 8 channels, two groups per chunk
// instead of four.
constexpr int in_chunk_channels(int D) { return D > 384 ? 16 : 32; }

// Where the x producer prefetches each tile's x into L2 before loading it into the ring: with the
// two-slot ring above D = 384, whose consumers otherwise wait in LN_in for each k-block past the
// ring's depth to come from HBM. Not at 288-384 (three slots, the weight ring unchanged): there it
// made stage 1 8 % slower (A/B on an H100, 384/256, 2026-12-07: more L2 traffic for nothing).
constexpr bool in_x_l2_ahead(int D) { return D > 384; }
// The weight ring's cap: as many slots as fit above D = 384 (the mbarrier array holds 14 beside
// two x slots), a chunk plus two k-blocks (or MAX_STAGES) below.
constexpr int in_w_cap(int D) { return D > 384 ? proj::stages_beside(in_x_slots(D)) : proj::MAX_STAGES; }
// Besides the x ring and the weight ring: the tail (above D = 256), per warpgroup a transposing
// buffer of 64 channel rows (32 a, 32 b; rows 0..15 and 32..47 with 16-channel chunks) x 64
// tokens, then the LN weight and bias (D each) and
// float4 (bp_a, bg_a, bp_b, bg_b) / 2 per hidden channel (room for kMaxWidth: 8 KiB).
template <int D>
struct InCfg : ProjCfg<D, in_x_slots(D),
                       proj::tail_bytes(D, in_reg_width(D)) + proj::CONSUMERS * 64 * 128 +
                           (2 * D + 4 * kMaxWidth) * 4,
                       D, proj::KB_BYTES, 4 * in_chunk_channels(D), in_w_cap(D)> {
  static constexpr int KR = in_reg_width(D);               // channels of LN_in(x) in registers
  static constexpr int TAIL = proj::tail_bytes(D, KR);     // the rest, in shared memory
  static constexpr int OUTS = proj::CONSUMERS * 64 * 128;  // the transposing buffers
  static constexpr int CH = in_chunk_channels(D);          // hidden channels per W1 chunk
  static constexpr int WROWS = 4 * CH;                     // W1 rows per chunk
  static constexpr int ACC = WROWS / 2;                    // accumulator registers (m64 x WROWS / 128 threads)
  static constexpr int GROUPS = CH / 8;                    // groups of 8 channels per chunk
  static constexpr bool X_L2_AHEAD = in_x_l2_ahead(D);     // each tile's x into L2 before the ring
};

// The resident form (proj_in_wgmma_kernel<D, false, true>), for D <= 128 with H <= kResInMaxH and
// one owner of whole chunks (the single-GPU launch): at these widths a tile's MMAs (K = D) are
// short beside its LayerNorm and epilogues, and the two warpgroups' turns on a shared weight ring
// kept the tensor cores idle whenever both were in their LayerNorm. So W1 (128 KiB at H = 128) is
// loaded once per CTA and stays in shared memory, and each consumer warpgroup runs its own tiles
// of 64 tokens (the CTA's tiles cw, cw + 2, ...) through its own two x slots, without turns.
// Slots are laid out as halves of 128-token tiles (warpgroup cw's rows 64 cw .. of each k-block),
// so the LayerNorm and the epilogue address them as in the streaming form.
constexpr int kResInMaxH = 128;
constexpr int kResInSlots = 2;  // x slots per consumer warpgroup
template <int D>
struct InResCfg {
  static constexpr int NKB = (D + 63) / 64, WKB = NKB, KS = D / 16;
  static constexpr int KR = D, TAIL = 0;
  static constexpr int OUTS = proj::CONSUMERS * 64 * 128;
  static constexpr int CH = 32, WROWS = 128, ACC = 64, GROUPS = 4;
  static constexpr int W_SLOT = WROWS * 128;
  static constexpr int XBYTES = proj::x_tile_bytes(D);  // a slot of each warpgroup
  static constexpr int WBYTES = 4 * kResInMaxH / WROWS * WKB * W_SLOT;
  // the mbarriers: full and empty per warpgroup and slot (as the x ring's, NXBUF of each), W1's (a
  // wfull; STAGES = 1)
  static constexpr int NXBUF = proj::CONSUMERS * kResInSlots, STAGES = 1;
  static constexpr int SMEM = WBYTES + kResInSlots * XBYTES + OUTS + (2 * D + 4 * kMaxWidth) * 4 + 1024;
  // (named for every D by the kernel's std::conditional_t; used up to D = 128)
  static_assert(D > 128 || SMEM + proj::STATIC_SMEM <= proj::SMEM_LIMIT, "over the shared-memory limit");
  static_assert(D > 128 || WBYTES < (1 << 20), "mbarrier tx-count is 20 bits");
};
constexpr bool in_res_ok(int D) { return D <= 128; }

// What the epilogues of a tile's chunks need: set up with the tile's LayerNorm, the store
// positions advanced chunk by chunk.
struct InTile {
  bool valid[2];                 // this thread's tokens g, g + 8: inside the grid and unmasked
  bool my_store;                 // this thread's 16-byte chunk of the tile is stored
  int nchunks;                   // 16-byte chunks of the tile that are stored
  int i, b, k0;                  // the tile: row, batch, first token
  bf16_raw *pa, *pb;             // one owner: this thread's a / b rows of the next chunk
  int64_t off0;                  // PARTIAL: plane 0 of batch b at this thread's 8 tokens
  int own_rank[4], own_chan[4];  // several owners: of the 4 rows this thread stores next
};

// PARTIAL: the launch's channel group is not made of whole chunks (its own instantiation: the
// stores' plane checks cost the whole-chunk kernel 116 B of spills at D = 256 when both were one).
template <int D, bool PARTIAL, bool RES = false>
__global__ void __launch_bounds__(proj::THREADS, 1)
    proj_in_wgmma_kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
                         const uint8_t* __restrict__ mask, const float* __restrict__ lnw, const float* __restrict__ lnb,
                         const float* __restrict__ pin_b, const float* __restrict__ gin_b,
                         const __grid_constant__ ProjInGeom geo, const __grid_constant__ AbTarget tgt, float eps,
                         int H, int out_rows, int tiles_k, int total) {
  using namespace proj;
  using C = std::conditional_t<RES, InResCfg<D>, InCfg<D>>;
  static_assert(!RES || (D <= 128 && !PARTIAL), "the resident form: D <= 128, whole chunks");
  __shared__ __align__(8) uint64_t bars[2 * C::NXBUF + 2 * C::STAGES];
  extern __shared__ uint8_t smem_raw[];
  uint8_t* sm;
  const uint32_t base = aligned_smem(smem_raw, &sm);
  // NXBUF x k-block slots, STAGES weight slots; resident: kResInSlots x slots (of both
  // warpgroups), all of W1
  const uint32_t s_x = base;
  const uint32_t s_w = s_x + (RES ? kResInSlots : C::NXBUF) * C::XBYTES;
  const uint32_t s_tail = s_w + (RES ? InResCfg<D>::WBYTES : C::STAGES * C::W_SLOT);  // LN_in(x) past C::KR (D > 256)
  const uint32_t s_o = s_tail + C::TAIL;                      // transposing buffers
  bf16* const outs = reinterpret_cast<bf16*>(sm + (s_o - base));
  float* const p_lnw = reinterpret_cast<float*>(sm + (s_o - base) + C::OUTS);
  float* const p_lnb = p_lnw + D;
  float4* const p_bias = reinterpret_cast<float4*>(p_lnb + D);
  const RingBars rb = ring_bars<C::NXBUF, C::STAGES>(bars);

  for (int c = threadIdx.x; c < D; c += THREADS) {
    p_lnw[c] = lnw[c];
    p_lnb[c] = lnb[c];
  }
  for (int c = threadIdx.x; c < H; c += THREADS)  // halved for gate_half
    p_bias[c] = make_float4(0.5f * pin_b[c], 0.5f * gin_b[c], 0.5f * pin_b[H + c], 0.5f * gin_b[H + c]);
  // (resident: xfull / xempty k = c kResInSlots + s, warpgroup c's slot s, emptied by its 4 warps;
  // wfull(0): W1)
  init_ring_bars<C::NXBUF, C::STAGES>(rb, RES ? 4 : CONSUMERS * 4);

  const int wg = threadIdx.x >> 7;  // warp-uniform
  const int tid_wg = threadIdx.x & 127;
  const int n_local = tiles_of_this_cta(total);
  const int xr = (int)geo.x_rows, xc = (int)geo.x_cols;
  // W1 chunks (C::CH channels each) of this launch: all, or those holding the channel group
  // geo.chan0 .. + chans (multiples of 8). A group smaller than a chunk, or not aligned to one
  // (sub: its first channel's place in chunk jb), computes whole chunks and stores only its own
  // channels: the room of a one-GPU forward at the largest N, where a and b of 32 channels no
  // longer fit beside x and z.
  constexpr int CH = C::CH;
  const int jb = geo.chans > 0 ? geo.chan0 / CH : 0;
  const int je = geo.chans > 0 ? (geo.chan0 + geo.chans + CH - 1) / CH : H / CH;
  const int nch = geo.chans > 0 ? geo.chans : H, sub = geo.chans > 0 ? geo.chan0 % CH : 0;

  if (wg == 0) {
    // ------------------------------------------------------------ producers
    // Two independent threads, so that neither stream waits for the other's free slots:
    // warp 0 streams the weight k-blocks, warp 1 the x tiles.
    setmaxnreg_dec<PRODUCER_REGS>();
    if constexpr (RES) {
      // thread 32 c feeds consumer warpgroup c (tiles c, c + 2, ...); thread 0 first loads W1
      const int c = tid_wg >> 5;
      if ((tid_wg & 31) != 0 || c >= CONSUMERS || n_local <= c) return;
      if (c == 0) load_weights_once<C::WKB, C::WROWS>(&tmW, s_w, rb.wfull(0), jb, je);
      tma_prefetch_map(&tmX);
      for (int n = 0, v = c; v < n_local; ++n, v += CONSUMERS) {
        const TokenTile tt = token_tile(v, tiles_k, out_rows);
        const int s = n % kResInSlots, k = c * kResInSlots + s;
        mbar_wait(rb.xempty(k), ((n / kResInSlots) & 1) ^ 1u);
        mbar_arrive_expect_tx(rb.xfull(k), C::NKB * WG_KB_BYTES);
        // (clamped into x as below)
        for (int kb = 0; kb < C::NKB; ++kb)
          tma_load_4d(s_x + s * C::XBYTES + c * WG_KB_BYTES + kb * KB_BYTES, &tmX, kb * 64,
                      min(tt.kt * 64, xc - 1), min(tt.i, xr - 1), tt.b, rb.xfull(k));
      }
    } else if (tid_wg == 0 && n_local > 0) {
      produce_weights<C::WKB, C::STAGES, C::WROWS>(&tmW, s_w, rb, n_local, jb, je);
    } else if (tid_wg == 32 && n_local > 0) {
      tma_prefetch_map(&tmX);
      // The box is clamped into x (a row i >= x_rows or columns >= x_cols hold only invalid
      // tokens, whose outputs are zero whatever x is), so no box lies wholly outside the tensor;
      // the part past x_cols is zero-filled.
      RingPos<C::NXBUF> xring;
      for (int v = 0; v < n_local; ++v) {
        const TokenTile tt = token_tile(v, tiles_k, out_rows);
        const int tok = min(tt.kt * TOK, xc - 1), row = min(tt.i, xr - 1);
        // This loop reaches tile v when tile v - 1's last k-blocks have entered the ring, about a
        // tile before tile v's LayerNorm reads its k-blocks past the ring's first slots.
        if constexpr (C::X_L2_AHEAD)
          for (int kb = C::NXBUF; kb < C::NKB; ++kb) tma_prefetch_4d(&tmX, kb * 64, tok, row, tt.b);
        load_x_ring<C::NKB, C::NXBUF>(xring, &tmX, s_x, rb, tok, row, tt.b);
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
  const bool one_owner = tgt.dloc >= nch;
  const int64_t plane16 = 16 * tgt.plane[0], plane_ch = CH * tgt.plane[0];

  uint32_t af[C::KR / 16][4];
  const uint64_t da_tail = tail_desc(s_tail, cw);  // (D > 256)
  ChunkRing<C::STAGES> ring;
  RingPos<C::NXBUF> xring;

  // Tile u's set-up and LN_in(x) into af: what the epilogues of its chunks need. (Resident: the
  // warpgroup's n-th tile; its 64 tokens are rows 64 cw .. of a 128-token tile starting at k0, so
  // that the positions below are the streaming form's.)
  auto begin_tile = [&](int u, int n) {
    InTile t;
    const TokenTile tt = token_tile(u, tiles_k, out_rows);
    t.i = tt.i;
    t.b = tt.b;
    t.k0 = RES ? tt.kt * 64 - 64 * cw : tt.kt * TOK;
    // Validity of this thread's two tokens (rows g and g + 8 of its warp's 16). The mask bytes
    // are loaded here and tested after the LayerNorm, so that their latency hides behind it
    // (tested at once, they stalled every tile: ncu, 2026-12-01).
    int mbyte[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int k = t.k0 + 64 * cw + 16 * warp + g + 8 * h;
      t.valid[h] = (t.i < xr) && (k < xc) && (geo.g_row0 + t.i < geo.n_valid) && (geo.g_col0 + k < geo.n_valid);
      mbyte[h] = (t.valid[h] && mask != nullptr) ? (int)__ldg(mask + ((int64_t)t.b * xr + t.i) * xc + k) : 1;
    }
    // 16-byte chunks (8 tokens) of this tile that are stored: chunks at or past store_cols would
    // land in the next tile's columns of the destination.
    t.nchunks = (int)min((int64_t)(TOK / 8), (geo.store_cols - t.k0 + 7) / 8);
    // This thread's 16-byte chunk of the tile in the stores (the same for all its rows), and
    // whether the tile stores it.
    const int my_ch = 8 * cw + (tid_wg & 7);
    t.my_store = my_ch < t.nchunks;
    // Owner rank and local channel of the 4 channel rows this thread stores in chunk 0
    // (row (tid_wg + 128 it) / 8, channel row % 32); each epilogue advances them by CH channels.
    // (With 16-channel chunks only rows 0..15 (a) and 32..47 (b) hold channels: it = 0 and 2.)
    // With one owner (one GPU; or a CP rank that owns every channel of this launch) the rows are
    // a[0] / b[0] planes: two pointers for the chunk and one plane stride, advanced per chunk,
    // replace the per-row owner arithmetic (186 instructions per chunk and warp in ncu).
    t.pa = t.pb = nullptr;
    t.off0 = 0;
    if constexpr (PARTIAL)
      t.off0 = (int64_t)t.b * tgt.dloc * tgt.plane[0] + (tgt.row0[0] + t.i) * tgt.ld[0] + tgt.col0[0] + t.k0 + my_ch * 8;
    if (one_owner && !PARTIAL) {
      const int64_t off = ((int64_t)t.b * tgt.dloc + (tid_wg >> 3)) * tgt.plane[0] + (tgt.row0[0] + t.i) * tgt.ld[0] +
                          tgt.col0[0] + t.k0 + my_ch * 8;
      t.pa = tgt.a[0] + off;
      t.pb = tgt.b[0] + off;
    } else if (!one_owner) {
#pragma unroll
      for (int it = 0; it < 4; ++it) {
        const int c = ((tid_wg + 128 * it) >> 3) & 31;
        t.own_rank[it] = c / tgt.dloc;
        t.own_chan[it] = c - t.own_rank[it] * tgt.dloc;
      }
    }

    // (each x slot is released as soon as this warp's rows of it are in registers)
    if constexpr (RES) {
      const int k = cw * kResInSlots + n % kResInSlots;
      mbar_wait(rb.xfull(k), (n / kResInSlots) & 1);
      load_frags<D>(af, s_x + (n % kResInSlots) * C::XBYTES, 64 * cw + 16 * warp, lane);
      fence_proxy_async_smem();  // this lane's reads, before the TMA that refills the slot (walk_x_ring)
      __syncwarp();
      if (lane == 0) mbar_arrive(rb.xempty(k));
      normalize_frags<D>(af, lane, p_lnw, p_lnb, eps);
    } else if constexpr (C::TAIL > 0) {
      ln_in_frags_ring_split<D, C::KR, C::NXBUF>(af, xring, rb, s_x, s_tail, cw, warp, lane, p_lnw, p_lnb, eps);
      fence_proxy_async_smem();   // the tail's stmatrix writes, before the wgmmas read them
      bar_sync(BAR_WG + cw, 128);  // every warp's rows of the warpgroup's tail are written
    } else {
      ln_in_frags_ring<D, C::NXBUF>(af, xring, rb, s_x, cw, warp, lane, p_lnw, p_lnb, eps);
    }
    t.valid[0] = t.valid[0] && mbyte[0] != 0;
    t.valid[1] = t.valid[1] && mbyte[1] != 0;
    return t;
  };

  // The MMAs of k-block kb of a W1 chunk (A = af and the tail, B = the k-block's 128 rows at
  // `slot`) into acc.
  auto mma_kb = [&](auto& acc, int kb, uint32_t slot) {
    const uint64_t db = smem_desc(slot, 16u, 1024u);
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      const int k = 4 * kb + ks;  // compile-time after unrolling
      const uint64_t dbk = db + (uint64_t)((ks * 32) >> 4);
      if (k < C::KR / 16) {
        if constexpr (CH == 32)
          wgmma_m64n128k16_rs(acc, af[k], dbk, (kb > 0 || ks > 0) ? 1 : 0);
        else
          wgmma_m64n64k16_rs(acc, af[k], dbk, (kb > 0 || ks > 0) ? 1 : 0);
      } else if (k < C::KS) {
        if constexpr (CH == 32)
          wgmma_m64n128k16_ss(acc, tail_step(da_tail, k - C::KR / 16), dbk, 1);
        else
          wgmma_m64n64k16_ss(acc, tail_step(da_tail, k - C::KR / 16), dbk, 1);
      }
    }
  };
  // Issues the next W1 chunk's MMAs from the ring into acc in this warpgroup's turn; returns the
  // chunk's first weight slot (release_chunk).
  auto mma_chunk = [&](auto& acc) {
    return issue_chunk<C::WKB, C::STAGES, C::W_SLOT>(cw, ring, rb, s_w,
                                                     [&](int kb, uint32_t slot) { mma_kb(acc, kb, slot); });
  };

  // ---- epilogue of chunk j (its MMAs complete, acc fenced): a = sigmoid(g_a + bg_a) * (p_a + bp_a),
  // b likewise; 0 for invalid tokens. nb0 / nb1: the biases of its first 8 channels, read by the
  // caller before the MMA wait (the waits are memory clobbers: loads written before them stay
  // before them); each group gi reads the next group's before its gates, so no gate waits on
  // shared memory (the largest epilogue stall in ncu, 2026-12-01).
  // Transposing buffer of this warpgroup: row = channel (a: 0..31, b: 32..63 of this chunk),
  // 64 tokens of 2 bytes = 128 B; 16-byte chunk q of row r at position q ^ (r % 8). For each
  // group gi of 8 channels the gated values form four 8 x 8 mma fragments (a and b, tokens
  // g and g + 8), which one stmatrix.trans writes as 8-token rows of one channel: the 8 rows
  // of a matrix land in 8 different bank groups. (The 2-byte stores this replaced made the
  // epilogue issue-bound: 972 instructions per chunk and warp in ncu.)
  auto epilogue = [&](auto& acc, InTile& t, int j, float4 nb0, float4 nb1) {
    bar_sync(BAR_WG + cw, 128);  // the previous chunk's reads of the buffer are done
#pragma unroll
    for (int gi = 0; gi < C::GROUPS; ++gi) {
      const float4 bb0 = nb0, bb1 = nb1;
      if (gi + 1 < C::GROUPS) {
        nb0 = p_bias[CH * j + 8 * (gi + 1) + 2 * t4];
        nb1 = p_bias[CH * j + 8 * (gi + 1) + 2 * t4 + 1];
      }
      uint32_t pk[4];  // matrices (a, tokens g), (a, g + 8), (b, g), (b, g + 8)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int ia = 4 * (4 * gi) + 2 * h;  // p_a of channel 2 t4; +4: g_a, +8: p_b, +12: g_b; +1: channel 2 t4 + 1
        float va0 = gate_half(acc[ia + 4], bb0.y, acc[ia], bb0.x);
        float va1 = gate_half(acc[ia + 5], bb1.y, acc[ia + 1], bb1.x);
        float vb0 = gate_half(acc[ia + 12], bb0.w, acc[ia + 8], bb0.z);
        float vb1 = gate_half(acc[ia + 13], bb1.w, acc[ia + 9], bb1.z);
        if (!t.valid[h]) va0 = va1 = vb0 = vb1 = 0.f;
        pk[h] = pack_bf16x2(va0, va1);
        pk[2 + h] = pack_bf16x2(vb0, vb1);
      }
      stsm_x4_t(stsm_base + (uint32_t)gi * (8 * 128), pk);
    }
    bar_sync(BAR_WG + cw, 128);
    if (one_owner) {
      // rows (tid_wg >> 3) + 16 it: it 0, 1 are a rows (channel + 0, + 16), it 2, 3 b rows (with
      // 16-channel chunks it 0 and 2 only).
#pragma unroll
      for (int it = 0; it < 4; ++it) {
        if (CH == 16 && (it & 1)) continue;  // (compile-time) no channel 16 + in a 16-channel chunk
        const int row = (tid_wg >> 3) + 16 * it, cc = tid_wg & 7;
        if (t.my_store) {
          const uint4 v = *reinterpret_cast<const uint4*>(my_outs + row * 64 + ((cc ^ (row & 7)) << 3));
          if constexpr (!PARTIAL) {
            *reinterpret_cast<uint4*>((it < 2 ? t.pa : t.pb) + ((it & 1) ? plane16 : 0)) = v;
          } else {
            // the plane of this row's channel in the group; channels outside it are not stored
            const int p = CH * (j - jb) + (tid_wg >> 3) + 16 * (it & 1) - sub;
            if (p >= 0 && p < nch)
              *reinterpret_cast<uint4*>((it < 2 ? tgt.a[0] : tgt.b[0]) + t.off0 + (int64_t)p * tgt.plane[0]) = v;
          }
        }
      }
      if constexpr (!PARTIAL) {
        t.pa += plane_ch;
        t.pb += plane_ch;
      }
      return;
    }
#pragma unroll
    for (int it = 0; it < 4; ++it) {
      if (CH == 16 && (it & 1)) continue;  // (compile-time) as above
      const int q = tid_wg + 128 * it;
      const int row = q >> 3, cc = q & 7;
      const int ch = 8 * cw + cc;  // 16-byte chunk of the 128-token tile
      if (ch < t.nchunks) {
        const uint4 v = *reinterpret_cast<const uint4*>(my_outs + row * 64 + ((cc ^ (row & 7)) << 3));
        const int qr = t.own_rank[it], cl = t.own_chan[it];
        bf16_raw* const dst = (row < 32 ? tgt.a[qr] : tgt.b[qr]) + ((int64_t)t.b * tgt.dloc + cl) * tgt.plane[qr] +
                              (tgt.row0[qr] + t.i) * tgt.ld[qr] + tgt.col0[qr] + t.k0 + ch * 8;
        *reinterpret_cast<uint4*>(dst) = v;
      }
      // The same row of the next chunk is channel c + CH: advance (rank, channel) without a division.
      int cl = t.own_chan[it] + CH, qr = t.own_rank[it];
      while (cl >= tgt.dloc) {
        cl -= tgt.dloc;
        ++qr;
      }
      t.own_chan[it] = cl;
      t.own_rank[it] = qr;
    }
  };

  // One accumulator set: a chunk's MMAs, then its epilogue (the other warpgroup's MMAs run meanwhile).
  float acc[C::ACC];
#pragma unroll
  for (int k = 0; k < C::ACC; ++k) acc[k] = 0.f;
  if constexpr (RES) {
    // Chunk j of W1 sits at (j - jb) WKB slots; no turns: each warpgroup's chunks reach the
    // tensor cores as they come, between the other's.
    if (cw < n_local) mbar_wait(rb.wfull(0), 0);
    for (int n = 0, u = cw; u < n_local; ++n, u += CONSUMERS) {
      InTile t = begin_tile(u, n);
      for (int j = jb; j < je; ++j) {
        wgmma_fence();  // the LayerNorm's A fragments and the last epilogue's reads of acc, first
#pragma unroll
        for (int kb = 0; kb < C::WKB; ++kb) mma_kb(acc, kb, s_w + ((j - jb) * C::WKB + kb) * C::W_SLOT);
        wgmma_commit();
        const float4 nb0 = p_bias[CH * j + 2 * t4], nb1 = p_bias[CH * j + 2 * t4 + 1];
        wgmma_wait<0>();
        fence_regs(acc);
        epilogue(acc, t, j, nb0, nb1);
      }
    }
  } else {
    for (int u = 0; u < n_local; ++u) {
      InTile t = begin_tile(u, 0);
      for (int j = jb; j < je; ++j) {
        const int ws0 = mma_chunk(acc);
        // the biases of the chunk's first 8 channels (the epilogue's nb0, nb1)
        const float4 nb0 = p_bias[CH * j + 2 * t4], nb1 = p_bias[CH * j + 2 * t4 + 1];
        release_chunk<C::WKB, C::STAGES>(ws0, rb, lane);
        fence_regs(acc);
        epilogue(acc, t, j, nb0, nb1);
      }
    }
    turn_finish(cw, ring.issued);
  }
}

// ------------------------------------------------------------------ host side
namespace {

template <int D>
cudaError_t launch_in_t(const DevLayer& L, const void* x, const uint8_t* mask, const ProjInGeom& g, const AbTarget& t,
                        int64_t B, cudaStream_t s) {
  using C = InCfg<D>;
  const int H = L.hidden;
  const bool group = g.chans != 0 && g.chans != H;
  // The resident form: all chunks (W1's room holds kResInMaxH channels from channel 0), one owner.
  const bool res = in_res_ok(D) && (g.chans == 0 || (g.chans == H && g.chan0 == 0)) && H <= kResInMaxH && t.dloc >= H;
  const int tok = res ? 64 : proj::TOK;  // tokens per tile
  const int64_t tiles_k = (g.out_cols + tok - 1) / tok;
  const int64_t total = B * g.out_rows * tiles_k;
  if (H < 32 || H > kMaxWidth || H % 32 != 0 ||
      (group && (g.chan0 < 0 || g.chans < 0 || g.chan0 % 8 != 0 || g.chans % 8 != 0 || g.chan0 + g.chans > H)))
    return cudaErrorInvalidValue;
  // What TMA and the int tile arithmetic need (trimul_internal.h says why no caller passes
  // anything else).
  if (B <= 0 || g.out_rows <= 0 || g.out_cols <= 0 || g.x_rows <= 0 || g.x_cols <= 0 || total > INT_MAX ||
      g.x_rows > INT_MAX || g.x_cols > INT_MAX || B > INT_MAX || (reinterpret_cast<uintptr_t>(x) & 15) != 0 ||
      (reinterpret_cast<uintptr_t>(L.w_in) & 15) != 0)
    return cudaErrorInvalidValue;

  CUtensorMap mx, mw;
  cudaError_t e = encode_tokens(&mx, x, D, g.x_cols, g.x_rows, B, tok);  // x: (B, x_rows, x_cols, D)
  if (e != cudaSuccess) return e;
  e = encode_weights(&mw, L.w_in, D, 4 * H, C::WROWS);  // W1: [4H][D], boxes of one chunk's rows
  if (e != cudaSuccess) return e;
  if (group && (g.chan0 % C::CH != 0 || g.chans % C::CH != 0)) {
    if (t.dloc < g.chans) return cudaErrorInvalidValue;  // a partial group has one destination (one GPU)
    return launch_persistent<proj_in_wgmma_kernel<D, true>>(C::SMEM, total, s, mx, mw, mask, L.ln_in_w, L.ln_in_b,
                                                            L.p_in_b, L.g_in_b, g, t, L.eps, H, (int)g.out_rows,
                                                            (int)tiles_k, (int)total);
  }
  if constexpr (in_res_ok(D)) {
    if (res)
      return launch_persistent<proj_in_wgmma_kernel<D, false, true>>(
          InResCfg<D>::SMEM, total, s, mx, mw, mask, L.ln_in_w, L.ln_in_b, L.p_in_b, L.g_in_b, g, t, L.eps, H,
          (int)g.out_rows, (int)tiles_k, (int)total);
  }
  return launch_persistent<proj_in_wgmma_kernel<D, false>>(C::SMEM, total, s, mx, mw, mask, L.ln_in_w, L.ln_in_b,
                                                           L.p_in_b, L.g_in_b, g, t, L.eps, H, (int)g.out_rows,
                                                           (int)tiles_k, (int)total);
}

}  // namespace

cudaError_t launch_proj_in_to(const DevLayer& L, const void* x, const uint8_t* mask, const ProjInGeom& g,
                              const AbTarget& t, int64_t B, cudaStream_t s) {
  return with_dim(L.dim, [&](auto d) { return launch_in_t<decltype(d)::value>(L, x, mask, g, t, B, s); });
}

// One GPU: the whole padded Np x Np grid is written (zeros outside N), into this GPU's workspace.
cudaError_t launch_proj_in(const DevLayer& L, const void* x, const uint8_t* mask, void* a_ws, void* b_ws, int64_t B,
                           int64_t N, int64_t sab, int chan0, int chans, cudaStream_t s) {
  const int64_t np = padded_n(N);
  ProjInGeom g{N, N, np, np, np, 0, 0, N};
  if (chans != L.hidden) {
    g.chan0 = chan0;
    g.chans = chans;
  }
  AbTarget t{};
  t.a[0] = static_cast<bf16_raw*>(a_ws);
  t.b[0] = static_cast<bf16_raw*>(b_ws);
  t.ld[0] = np;
  t.plane[0] = sab;
  t.dloc = chans;
  return launch_proj_in_to(L, x, mask, g, t, B, s);
}

cudaError_t prepare_proj_in(int dim) {
  return with_dim(dim, [](auto d) {
    constexpr int D = decltype(d)::value;
    cudaError_t e = prepare_on_current_device<proj_in_wgmma_kernel<D, false>>(InCfg<D>::SMEM);
    if (e == cudaSuccess) e = prepare_on_current_device<proj_in_wgmma_kernel<D, true>>(InCfg<D>::SMEM);
    if constexpr (in_res_ok(D))
      if (e == cudaSuccess) e = prepare_on_current_device<proj_in_wgmma_kernel<D, false, true>>(InResCfg<D>::SMEM);
    return e;
  });
}

}  // namespace foldcp
