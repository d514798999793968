// Internal interface between the host code (the C API: trimul_api.cu, trimul_layer.cu; the CP
// library: cp/) and the three stage files, plus the workspace layout, which the tests also use to
// check each stage on its own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <cuda_runtime.h>

namespace foldcp {

// bf16 storage without cuda_bf16.h (this header is also read by plain C++ files).
using bf16_raw = unsigned short;

// Tokens are padded to a multiple of this (masked, zero-valued) inside the workspace only.
constexpr int64_t kPad = 128;
inline int64_t padded_n(int64_t n) { return (n + kPad - 1) / kPad * kPad; }

// Every a/b plane stride, and the one-GPU z plane stride, holds 128 elements (256 bytes) more
// than the plane, so that the B * H planes do not sit at power-of-two distances (DRAM partition
// camping). native/NOTES-gpu.md measured no difference either way (2026-11-29); the padded
// layout is the one the tests and the CP buffers were built with, and the only one.
constexpr int64_t kPlanePad = 128;
inline int64_t ab_plane_stride(int64_t np) { return np * np + kPlanePad; }

// Buffers inside a workspace or a CP plan start 256-byte aligned.
constexpr size_t kBufAlign = 256;
inline size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The a, b and z sections of one buffer (a and b of ab_bytes each, then z of z_bytes), each
// 256-byte aligned: the one-GPU workspace and the CP plan's receive buffers.
struct AbzSections {
  size_t a_off, b_off, z_off, total;
};
inline AbzSections abz_sections(size_t ab_bytes, size_t z_bytes) {
  const size_t ab = align_up(ab_bytes, kBufAlign);
  return AbzSections{0, ab, 2 * ab, 2 * ab + align_up(z_bytes, kBufAlign)};
}

// Workspace (C = the layer's hidden width H, the channels of the triangle product): a and b
// (bf16, [B][C] planes of Np x Np, a_ws[b][c][row][col] = a[b,row,col,c] for
// both directions; rows/cols >= N are zero), then z (bf16, channel-major [B][C] planes of N x Np:
// z[b][c][i][j], columns >= N unused). z is bf16 since issue 10: the triangle GEMM accumulates in
// fp32 and rounds once on the store, which halves stage 2's stores and stage 3's reads (34 GB ->
// 17 GB at (1,4096,256)) for about 15 % more error against float64 (still about half the 1e-2
// contract at the largest shapes; native/NOTES-gpu.md). Plane strides sab / sz (elements) are
// padded by kPlanePad.
struct WsLayout {
  int64_t np;
  int64_t sab;  // elements between channel planes of a / b
  int64_t sz;   // elements (bf16) between channel planes of z
  size_t a_off, b_off, z_off, total;
};
// `group` channels of a and b at a time (a channel group: stages 1 and 2 run once per group;
// z always holds all C channels, since LN_out in stage 3 needs them); group = C is the whole.
inline WsLayout ws_layout(int64_t B, int64_t N, int64_t C, int64_t group) {
  WsLayout l{};
  l.np = padded_n(N);
  l.sab = ab_plane_stride(l.np);
  l.sz = N * l.np + kPlanePad;
  const AbzSections s = abz_sections((size_t)B * group * l.sab * 2, (size_t)B * C * l.sz * 2);
  l.a_off = s.a_off;
  l.b_off = s.b_off;
  l.z_off = s.z_off;
  l.total = s.total;
  return l;
}
inline WsLayout ws_layout(int64_t B, int64_t N, int64_t C) { return ws_layout(B, N, C, C); }

// The pair width D (x, out) and the hidden width H (a, b, z) of the kernels: multiples of 32 in
// [32, kMaxWidth] each. The limit: the split stage 3's P kernel keeps the tile's LN_out(z) in shared
// memory (128 KiB at H = 512, beside a weight ring of a chunk plus three k-blocks). Stages 1 and 3 keep a
// token's D values of LN_in(x) in registers (D / 4 per thread) beside the accumulators, within the
// 232 registers the consumers get after setmaxnreg (ptxas allocates for that budget, not for the
// launch bound's 168, as long as nothing in the consumers' code is a noreturn exit: the mbarrier
// watchdog's former __trap() held them to the launch bound, wgmma_common.cuh). Stage 1 does so up to
// D = 384 (24 B of spills there) and above keeps channels 256 .. D - 1 in shared memory (with W1 in
// chunks of 16 channels: stage1_proj_in.cu, in_reg_width, in_chunk_channels), as does the split
// stage 3's G kernel (stage3_split.cuh: g_reg_width). The wide stage 3 (up to D = 384) keeps all
// of them in registers (0-8 B of spills).
constexpr int kMaxWidth = 512;
// Stage 3 at widths up to this (both D and H) is the fused kernel (x tile in shared memory for
// the residual and the output's TMA stores); a wider pair runs the wide kernel (stage3_wide.cuh)
// up to kWideOutMax, two kernels above (stage3_split.cuh).
constexpr int kFusedOutMax = 256;
// The widest pair (both D and H) of the one wide kernel, which needs both A operands of a tile at
// once; above, stage 3 runs as two kernels with p in HBM between them (proj_out_split). Where the
// line lies, measured (H100, ee814a8 against de02bd2, N = 2048, stage 3 of one forward): 384/256
// wide 8.9 ms, split 11.9; 384/384 wide 11.3, split 12.4; 512/512 wide 39.8 (the kernel spills
// above D = 384), split 15.9. The split's extra bytes (p written and read, 4 B per token and
// channel) cost more than they save until the wide kernel spills.
constexpr int kWideOutMax = 384;

struct DevLayer {
  int dim;     // D
  int hidden;  // H
  int direction;  // 0 outgoing, 1 incoming
  int residual;
  float eps;
  const void* w_in;   // bf16 [4H][D]: per group of 8 hidden channels: p_a, g_a, p_b, g_b rows
  // bf16 [2D][max(D, H)]: per group of 8 output channels 8 p_out rows (K = H) and 8 g_out rows
  // (K = D), each zero past its K; for a split pair (proj_out_split) p_out [D][H] then g_out [D][D]
  // as torch lays them out (row = output channel)
  const void* w_out;
  const float* ln_in_w;
  const float* ln_in_b;
  const float* ln_out_w;
  const float* ln_out_b;
  const float* p_in_b;   // 2H (zeros when absent)
  const float* g_in_b;   // 2H
  const float* p_out_b;  // D
  const float* g_out_b;  // D
};

// ---- Store targets: where the epilogues of stages 1 and 2 write. On one GPU there is one
// destination (this GPU's workspace); under context parallelism (cp/cp_plan.cu) there is one per
// rank, and the same kernels write each value straight into the buffer of the rank that owns it:
// the two all-to-all reshards ride the epilogues' stores (docs/design.md section 2). A destination
// pointer is a peer pointer (nvshmem_ptr) or a local staging area that puts forward afterwards.
constexpr int kMaxRanks = 16;

// Stage 1 output: channel c (of H) of batch b goes to rank q = c / dloc as plane
// (b * dloc + c % dloc) of that rank's a/b buffers; token (i, k) of this tile lands at row
// row0[q] + i, column col0[q] + k of the plane (row stride ld[q], plane stride plane[q]).
struct AbTarget {
  bf16_raw* a[kMaxRanks];
  bf16_raw* b[kMaxRanks];
  int64_t row0[kMaxRanks];
  int64_t col0[kMaxRanks];
  int64_t ld[kMaxRanks];
  int64_t plane[kMaxRanks];
  int dloc;
};

// Which tokens stage 1 reads and writes. x and mask are (B, x_rows, x_cols[, D]); the kernel
// visits out_rows x out_cols tokens (out_cols rounded up to its tile: 128 tokens, 64 in the
// resident form) and stores the columns < store_cols (<= out_cols: every caller's); a token is valid (else a = b = 0) when it lies inside x, its global position
// (g_row0 + i, g_col0 + k) lies inside the N x N grid (n_valid), and its mask is nonzero.
// Channels: chans = 0 computes all H; otherwise channels chan0 .. chan0 + chans - 1 (both
// multiples of 8: a channel group, see foldcp_forward_options.group; one destination), stored as
// if they were the first chans channels (AbTarget channel c - chan0). The kernel computes whole
// chunks of 32 channels: a group that is not made of whole chunks wastes the rest of its chunks.
struct ProjInGeom {
  int64_t x_rows, x_cols;
  int64_t out_rows, out_cols, store_cols;
  int64_t g_row0, g_col0, n_valid;
  int chan0 = 0, chans = 0;
};

// Stage 2 output: the triangle GEMM of local plane p = b * dloc + cl (global channel
// chan_base + cl) computes z for every token (i, j) < n_store of the whole grid; token (i, j)
// belongs to rank o = (i / tile_rows) * grid_cols + j / tile_cols, which receives it as plane
// (b * chans[o] + chan0[o] + cl) at row i % tile_rows, column j % tile_cols (bf16, rounded once
// from the fp32 accumulators).
struct ZTarget {
  bf16_raw* z[kMaxRanks];
  int64_t ld[kMaxRanks];
  int64_t plane[kMaxRanks];
  int chans[kMaxRanks];
  int chan0[kMaxRanks];
  int tile_rows, tile_cols, grid_cols;
  int dloc;
  int n_store;
};

}  // namespace foldcp
struct foldcp_trimul_layer;
namespace foldcp {
// The kernels' view of a layer made by foldcp_trimul_create (and the device it lives on).
const DevLayer* dev_layer(const foldcp_trimul_layer* layer, int* device);

// The per-thread message behind foldcp_last_error(), for the other host files (CP team).
int set_error(int status, const std::string& message);
void clear_error();

// ---- The three stages, one kernel file each. Every launcher returns the launch error
// (cudaGetLastError) of its kernel, or cudaErrorInvalidValue for an input its kernel cannot take:
// TMA needs 16-byte aligned x, out, a/b planes and z rows, and the tile indices are ints. The C
// API (trimul_api.cu) and the CP plan (cp/cp_plan.cu, cp/cp_forward.cu) check alignment, D and
// the shape limits first, so that a real input never meets that answer (the int limits lie
// beyond any workspace a GPU holds).
//
// Stage 1 (stage1_proj_in.cu): LN_in + input projections + gates + mask, a and b stored
// channel-major through an AbTarget. The general form takes the ProjInGeom of a CP tile or the
// whole grid; launch_proj_in is one GPU's: the channels chan0 .. chan0 + chans - 1 (a channel
// group; all H when chans = H) into this workspace's a and b (chans planes each).
cudaError_t launch_proj_in_to(const DevLayer& L, const void* x, const uint8_t* mask, const ProjInGeom& g,
                              const AbTarget& t, int64_t B, cudaStream_t s);
cudaError_t launch_proj_in(const DevLayer& L, const void* x, const uint8_t* mask, void* a_ws, void* b_ws,
                           int64_t B, int64_t N, int64_t sab, int chan0, int chans, cudaStream_t s);
// Stage 2 (stage2_tri_gemm.cu): the triangle GEMM of B * t.dloc planes of a/b (np x np each,
// plane stride sab), z stored through a ZTarget. Needs np % 128 == 0, 16-byte aligned a_ws/b_ws
// and an even sab, and z rows that start 16-byte aligned (z[o], ld[o] and plane[o] multiples of
// 8 elements; tile_cols too when there is more than one destination: the epilogue stores 8
// columns at a time). The _ctas form caps the persistent grid at max_ctas CTAs (> 0; tests use
// it to run many tiles per CTA). launch_tri_gemm is one GPU's: the group's planes into this
// workspace's z planes chan0 .. (of all H).
cudaError_t launch_tri_gemm_to(const DevLayer& L, const void* a_ws, const void* b_ws, int64_t np, int64_t sab,
                               const ZTarget& t, int64_t B, cudaStream_t s);
cudaError_t launch_tri_gemm_ctas(const DevLayer& L, const void* a_ws, const void* b_ws, int64_t np, int64_t sab,
                                 const ZTarget& t, int64_t B, cudaStream_t s, int max_ctas);
cudaError_t launch_tri_gemm(const DevLayer& L, const void* a_ws, const void* b_ws, bf16_raw* z, int64_t B,
                            int64_t N, int64_t sab, int64_t sz, int chan0, int chans, cudaStream_t s);
// Stage 3 (stage3_proj_out.cu): LN_out + output projection + gate + residual. The tile form reads
// z as (B, H) planes of rows x ldz (plane stride sz) and x/out as (B, rows, cols, D). A pair
// with D or H above kFusedOutMax runs the wide kernel (stage3_wide.cuh) up to kWideOutMax; a split
// pair (proj_out_split: D or H above kWideOutMax) runs as two kernels with p between them
// (stage3_split.cuh): pbuf, bf16 (B, rows, cols, D) (proj_out_pbuf_bytes), must not overlap x or z,
// and may be out itself where out != x; other pairs pass nullptr. launch_proj_out is one GPU's:
// the workspace's z for (B, N, N); a split pair's p goes to out where out != x, else to `spare` (workspace room
// free after stage 2: a and b) where it fits, else stage 3 runs in slabs of rows of one complex at
// a time, each slab's p in `spare`.
constexpr bool proj_out_split(int dim, int hidden) { return dim > kWideOutMax || hidden > kWideOutMax; }
// Stage 3 past the fused kernel: the wide kernel, or the split pair's two kernels.
constexpr bool proj_out_past_fused(int dim, int hidden) { return dim > kFusedOutMax || hidden > kFusedOutMax; }
inline size_t proj_out_pbuf_bytes(int dim, int64_t B, int64_t rows, int64_t cols) {
  return (size_t)B * (size_t)rows * (size_t)cols * (size_t)dim * 2;
}
cudaError_t launch_proj_out_tile(const DevLayer& L, const void* x, const bf16_raw* z, void* out, void* pbuf,
                                 int64_t B, int64_t rows, int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s);
cudaError_t launch_proj_out(const DevLayer& L, const void* x, const bf16_raw* z, void* out, void* spare,
                            size_t spare_bytes, int64_t B, int64_t N, int64_t sz, cudaStream_t s);
// The stage 3 kernel of D, H <= kResidentOutMax (stage3_resident.cu: W3 resident in shared
// memory, each consumer warpgroup on its own tiles), which launch_proj_out_tile takes where z's
// rows are 16-byte aligned (its z comes by TMA); the fused kernel otherwise.
constexpr int kResidentOutMax = 128;
bool proj_out_resident_takes(int dim, int hidden, const bf16_raw* z, int64_t ldz, int64_t sz);
cudaError_t launch_proj_out_resident(const DevLayer& L, const void* x, const bf16_raw* z, void* out, int64_t B,
                                     int64_t rows, int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s);
cudaError_t prepare_proj_out_resident(int dim, int hidden);
// Raise the dynamic shared-memory limits of the stage 1 / stage 3 kernels of (D, H) on the
// current device (once per process and device; their launchers do it too). foldcp_trimul_create
// calls them, so that a layer is only made where its kernels load.
cudaError_t prepare_proj_in(int dim);
cudaError_t prepare_proj_out(int dim, int hidden);

}  // namespace foldcp

// For tests: where a forward of B complexes of N tokens through a layer of hidden width C leaves
// its intermediates in `workspace`.
extern "C" int foldcp_trimul_debug_workspace(int64_t B, int64_t N, int64_t C, void* workspace, void** a_ws,
                                             void** b_ws, foldcp::bf16_raw** z_ws, int64_t* np, int64_t* sab, int64_t* sz);
