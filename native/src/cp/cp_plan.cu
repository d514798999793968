// Making a CP plan (include/foldcp_cp.h): the configuration's checks, the agreement of the ranks,
// the symmetric buffers of one (B, N, D, H, grid) on the team and the store targets of the two fused
// reshards (peer pointers or staging + puts, chosen once at creation); and its destruction.
// cp_forward.cu runs it.
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cp_plan.cuh"

namespace foldcp {
namespace cp {
namespace {

// The configuration with its hidden width made explicit (0 means H = D): what the rest reads.
foldcp_cp_config with_hidden(const foldcp_cp_config& in) {
  foldcp_cp_config c = in;
  if (c.hidden == 0) c.hidden = c.dim;
  return c;
}

// c normalized: the channels of a, b and z are its H.
Layout layout_of(const foldcp_cp_config& c, int route) {
  Layout l;
  l.cp = c.grid_rows * c.grid_cols;
  l.dloc = (int)(c.hidden / l.cp);
  l.nt = c.grid_rows * c.tile_rows;
  l.np = padded_n(l.nt);
  l.sab = ab_plane_stride(l.np);
  l.szt = c.tile_rows * c.tile_cols;
  // The receive buffers: a and b of this rank's channels over the whole grid, z of all channels
  // over this rank's tile (its z planes are not padded).
  const AbzSections ab = abz_sections((size_t)c.batch * l.dloc * l.sab * 2, (size_t)c.batch * c.hidden * l.szt * 2);
  l.a_off = ab.a_off;
  l.b_off = ab.b_off;
  l.z_off = ab.z_off;
  l.total = ab.total;
  if (route == FOLDCP_CP_PUT || c.reshard == FOLDCP_CP_UNFUSED) {  // the local stores' staging
    l.stage_ab_rank = (int64_t)c.batch * l.dloc * l.szt;
    l.stage_z_rank = (int64_t)c.batch * l.dloc * l.szt;
    const size_t sab_bytes = align_up((size_t)l.cp * l.stage_ab_rank * 2, kBufAlign);
    l.stage_ab_off = l.total;
    l.stage_z_off = l.total + 2 * sab_bytes;
    l.total += 2 * sab_bytes + align_up((size_t)l.cp * l.stage_z_rank * 2, kBufAlign);
  }
  if (proj_out_split((int)c.dim, (int)c.hidden)) {
    // (not the receive buffers: a peer may store the next layer's a and b there while this rank's
    // stage 3 still runs)
    l.p_off = l.total;
    l.total += align_up(proj_out_pbuf_bytes((int)c.dim, c.batch, c.tile_rows, c.tile_cols), kBufAlign);
  }
  return l;
}

// What ranks compare before allocating anything (must fit kRecordBytes).
struct Record {
  int64_t batch, n, dim, hidden, tile_rows, tile_cols;
  int32_t grid_rows, grid_cols, route, nlayers, reach_all, device, reshard;
  uint8_t digest[FOLDCP_CP_DIGEST_BYTES];
};
static_assert(sizeof(Record) <= kRecordBytes, "record fits its slot");

std::string hex(const uint8_t* d, int n) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += k[d[i] >> 4];
    s += k[d[i] & 15];
  }
  return s;
}

std::string shape_text(const foldcp_cp_config& c) {
  return "(B, N, D, H) = (" + std::to_string(c.batch) + ", " + std::to_string(c.n) + ", " + std::to_string(c.dim) +
         ", " + std::to_string(c.hidden) + "), grid " + std::to_string(c.grid_rows) + "x" + std::to_string(c.grid_cols) + ", tiles " +
         std::to_string(c.tile_rows) + "x" + std::to_string(c.tile_cols);
}

int check_config(const foldcp_cp_config& c) {
  auto bad = [](const std::string& m) { return set_error(FOLDCP_ERR_INVALID_ARGUMENT, m); };
  if (c.grid_rows < 1 || c.grid_cols < 1 || c.grid_rows * c.grid_cols > kMaxRanks)
    return bad("CP grid " + std::to_string(c.grid_rows) + "x" + std::to_string(c.grid_cols) +
               ": each side must be >= 1 and cp = cp0 * cp1 at most " + std::to_string(kMaxRanks));
  const int cp = c.grid_rows * c.grid_cols;
  if (int st = foldcp_trimul_check_shape(c.batch, c.n, c.dim)) return st;
  if (int st = foldcp_trimul_check_dims(c.dim, c.hidden)) return st;
  if (c.hidden % cp != 0)
    return bad("H = " + std::to_string(c.hidden) + " is not divisible by cp = " + std::to_string(cp) + " (grid " +
               std::to_string(c.grid_rows) + "x" + std::to_string(c.grid_cols) +
               "): each rank owns H / cp channels of the triangle product (H: the hidden width, D when the layers "
               "have none of their own)");
  if (c.tile_rows < 8 || c.tile_cols < 8 || c.tile_rows % 8 != 0 || c.tile_cols % 8 != 0)
    return bad("tile " + std::to_string(c.tile_rows) + "x" + std::to_string(c.tile_cols) +
               ": tile sides must be positive multiples of 8 (16-byte stores of bf16 channel rows)");
  const int64_t nt = c.grid_rows * c.tile_rows;
  if (c.grid_cols * c.tile_cols != nt || nt < c.n)
    return bad("tiles " + std::to_string(c.tile_rows) + "x" + std::to_string(c.tile_cols) + " on grid " +
               std::to_string(c.grid_rows) + "x" + std::to_string(c.grid_cols) +
               " do not cover one square grid of at least N = " + std::to_string(c.n) +
               " tokens: cp0 * tile_rows must equal cp1 * tile_cols and be >= N");
  if (c.route != FOLDCP_CP_AUTO && c.route != FOLDCP_CP_PEER && c.route != FOLDCP_CP_PUT)
    return bad("route = " + std::to_string(c.route) + ": must be 0 (auto), 1 (peer) or 2 (put)");
  if (c.reshard != FOLDCP_CP_FUSED && c.reshard != FOLDCP_CP_UNFUSED)
    return bad("reshard = " + std::to_string(c.reshard) + ": must be 0 (fused) or 1 (unfused)");
  if (c.batch * c.hidden / cp > 65535)
    return bad("B * H / cp = " + std::to_string(c.batch * c.hidden / cp) + ": the triangle GEMM grid needs <= 65535");
  return FOLDCP_OK;
}

const char* route_name(int r) { return r == FOLDCP_CP_PEER ? "peer" : r == FOLDCP_CP_PUT ? "put" : "auto"; }

}  // namespace
}  // namespace cp
}  // namespace foldcp

using namespace foldcp;
using namespace foldcp::cp;

extern "C" {

int foldcp_cp_plan_bytes(const foldcp_cp_config* cfg, int route, size_t* bytes) {
  clear_error();
  if (cfg == nullptr || bytes == nullptr) return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "cfg and bytes must not be NULL");
  const foldcp_cp_config c = with_hidden(*cfg);
  if (int st = check_config(c)) return st;
  *bytes = layout_of(c, route).total;
  return FOLDCP_OK;
}

int foldcp_cp_plan_create(const foldcp_cp_config* cfg, foldcp_trimul_layer* const* layers, int nlayers,
                          foldcp_cp_plan** out) {
  clear_error();
  if (cfg == nullptr || out == nullptr) return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "cfg and plan must not be NULL");
  *out = nullptr;
  if (int st = require_team("creating a CP plan")) return st;
  Team& t = team();
  const foldcp_cp_config c = with_hidden(*cfg);
  if (int st = check_config(c)) return st;
  const int cp = c.grid_rows * c.grid_cols;
  if (cp != t.n)
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "CP grid " + std::to_string(c.grid_rows) + "x" +
                                                      std::to_string(c.grid_cols) + " has " + std::to_string(cp) +
                                                      " ranks but the NVSHMEM team has " + std::to_string(t.n) +
                                                      ": cp0 * cp1 must equal the team size");
  if (nlayers < 1 || layers == nullptr)
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "layers = " + std::to_string(nlayers) + ": a plan runs at least one layer");
  std::vector<const DevLayer*> dls;
  for (int i = 0; i < nlayers; ++i) {
    int dev = -1;
    const DevLayer* dl = dev_layer(layers[i], &dev);
    if (dl == nullptr) return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "layer " + std::to_string(i) + " is NULL");
    if (dl->dim != c.dim || dl->hidden != c.hidden)
      return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "layer " + std::to_string(i) + " has (D, H) = (" +
                                                        std::to_string(dl->dim) + ", " + std::to_string(dl->hidden) +
                                                        ") but the plan has (D, H) = (" + std::to_string(c.dim) + ", " +
                                                        std::to_string(c.hidden) + ")");
    if (dev != t.device)
      return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "layer " + std::to_string(i) + " lives on device " +
                                                        std::to_string(dev) + " but the team's device is " +
                                                        std::to_string(t.device));
    dls.push_back(dl);
  }

  // 1. Agree: same configuration and digest everywhere, and whether every rank reaches every
  //    peer by pointer (decides the AUTO route identically on all ranks).
  int reach_all = 1;
  for (int r = 0; r < t.n; ++r)
    if (nvshmem_ptr(t.sig, r) == nullptr) reach_all = 0;
  Record mine{};
  mine.batch = c.batch;
  mine.n = c.n;
  mine.dim = c.dim;
  mine.hidden = c.hidden;
  mine.tile_rows = c.tile_rows;
  mine.tile_cols = c.tile_cols;
  mine.grid_rows = c.grid_rows;
  mine.grid_cols = c.grid_cols;
  mine.route = c.route;
  mine.nlayers = nlayers;
  mine.reach_all = reach_all;
  mine.device = t.device;
  mine.reshard = c.reshard;
  std::memcpy(mine.digest, c.digest, sizeof mine.digest);
  uint8_t rec[kRecordBytes] = {};
  std::memcpy(rec, &mine, sizeof mine);
  std::vector<uint8_t> all((size_t)t.n * kRecordBytes);
  if (int st = exchange_records(rec, all.data(), "CP plan creation")) return st;
  std::vector<Record> recs(t.n);
  for (int r = 0; r < t.n; ++r) std::memcpy(&recs[r], all.data() + (size_t)r * kRecordBytes, sizeof(Record));
  const Record& r0 = recs[0];
  std::string shape_diff, digest_diff, route_diff;
  int reach_everywhere = 1;
  std::string unreachable;
  for (int r = 0; r < t.n; ++r) {
    const Record& x = recs[r];
    if (x.batch != r0.batch || x.n != r0.n || x.dim != r0.dim || x.hidden != r0.hidden || x.tile_rows != r0.tile_rows ||
        x.tile_cols != r0.tile_cols || x.grid_rows != r0.grid_rows || x.grid_cols != r0.grid_cols ||
        x.nlayers != r0.nlayers || x.reshard != r0.reshard)
      shape_diff += (shape_diff.empty() ? "" : ", ") + std::to_string(r);
    if (std::memcmp(x.digest, r0.digest, sizeof x.digest) != 0)
      digest_diff += (digest_diff.empty() ? "" : ", ") + std::to_string(r) + " (" + hex(x.digest, 8) + "...)";
    if (x.route != r0.route) route_diff += (route_diff.empty() ? "" : ", ") + std::to_string(r);
    if (!x.reach_all) {
      reach_everywhere = 0;
      unreachable += (unreachable.empty() ? "" : ", ") + std::to_string(r);
    }
  }
  if (!shape_diff.empty())
    return set_error(FOLDCP_ERR_MISMATCH, "rank(s) " + shape_diff + " asked for another shape, grid, layer count or reshard mode than rank 0 (" +
                                              shape_text(c) + " here, " + std::to_string(nlayers) +
                                              " layers): every rank of a CP plan must run the same problem");
  if (!digest_diff.empty())
    return set_error(FOLDCP_ERR_MISMATCH, "the layer weights differ across ranks: rank(s) " + digest_diff +
                                              " have another weights digest than rank 0 (" + hex(r0.digest, 8) +
                                              "...): every rank must run the same layer stack");
  if (!route_diff.empty())
    return set_error(FOLDCP_ERR_MISMATCH, "rank(s) " + route_diff + " asked for another store route than rank 0 (" +
                                              route_name(r0.route) + ")");
  int route = c.route;
  if (route == FOLDCP_CP_AUTO) route = reach_everywhere ? FOLDCP_CP_PEER : FOLDCP_CP_PUT;
  if (route == FOLDCP_CP_PEER && !reach_everywhere)
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "store route peer: rank(s) " + unreachable +
                                                      " cannot reach every peer through a pointer (nvshmem_ptr is NULL:"
                                                      " another node?); use route put or auto");

  // 2. The heap: checked before anything is allocated (the same answer on every rank).
  const Layout lay = layout_of(c, route);
  if (t.used + lay.total > t.heap)
    return set_error(FOLDCP_ERR_HEAP_TOO_SMALL,
                     "the symmetric heap is too small: a CP plan of " + shape_text(c) + ", route " + route_name(route) +
                         " needs " + std::to_string(lay.total) + " bytes (" + std::to_string(lay.total >> 20) +
                         " MiB) on every rank, but only " + std::to_string(t.heap - t.used) + " of the heap's " +
                         std::to_string(t.heap) + " bytes are free; give the team a heap of at least " +
                         std::to_string(t.used + lay.total) + " bytes (spark.foldcp.nvshmem.heapBytes)");
  if (int st = timed_barrier("CP plan allocation")) return st;  // nvshmem_malloc waits for every rank
  void* sym = nvshmem_malloc(lay.total);
  if (sym == nullptr)
    return set_error(FOLDCP_ERR_HEAP_TOO_SMALL, "nvshmem_malloc(" + std::to_string(lay.total) +
                                                    " bytes) failed although the heap should hold it (" +
                                                    std::to_string(t.heap - t.used) + " bytes free)");
  t.used += lay.total;
  auto* p = new foldcp_cp_plan();
  p->cfg = c;
  p->lay = lay;
  p->route = route;
  p->layers = dls;
  p->sym = sym;
  char* base = static_cast<char*>(sym);
  // The a/b planes are zeroed once: rows and columns past the tiles (N_t .. np) are never
  // written and must read as zero in the triangle GEMM.
  cudaError_t e = cudaMemsetAsync(base, 0, lay.z_off, t.stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(t.stream);
  if (e != cudaSuccess) {
    set_error(FOLDCP_ERR_CUDA, std::string("cudaMemset of the CP plan's buffers failed: ") + cudaGetErrorString(e));
    foldcp_cp_plan_destroy(p);
    return FOLDCP_ERR_CUDA;
  }

  // 3. Store targets. My tile: rows [row0, row0 + tile_rows), columns [col0, col0 + tile_cols).
  const int me = t.me;
  const int64_t row0 = (int64_t)(me / c.grid_cols) * c.tile_rows;
  const int64_t col0 = (int64_t)(me % c.grid_cols) * c.tile_cols;
  bf16_raw* a_recv = reinterpret_cast<bf16_raw*>(base + lay.a_off);
  bf16_raw* b_recv = reinterpret_cast<bf16_raw*>(base + lay.b_off);
  bf16_raw* z_recv = reinterpret_cast<bf16_raw*>(base + lay.z_off);
  p->geo = ProjInGeom{c.tile_rows, c.tile_cols, c.tile_rows, c.tile_cols, c.tile_cols, row0, col0, c.n};
  p->ab.dloc = lay.dloc;
  p->zt.dloc = lay.dloc;
  p->zt.tile_rows = (int)c.tile_rows;
  p->zt.tile_cols = (int)c.tile_cols;
  p->zt.grid_cols = c.grid_cols;
  p->zt.n_store = (int)lay.nt;
  for (int q = 0; q < t.n; ++q) {
    const bool direct = (route == FOLDCP_CP_PEER && c.reshard == FOLDCP_CP_FUSED) || q == me;
    if (direct) {
      p->ab.a[q] = static_cast<bf16_raw*>(nvshmem_ptr(a_recv, q));
      p->ab.b[q] = static_cast<bf16_raw*>(nvshmem_ptr(b_recv, q));
      p->ab.row0[q] = row0;
      p->ab.col0[q] = col0;
      p->ab.ld[q] = lay.np;
      p->ab.plane[q] = lay.sab;
      p->zt.z[q] = static_cast<bf16_raw*>(nvshmem_ptr(z_recv, q));
      p->zt.ld[q] = c.tile_cols;
      p->zt.plane[q] = lay.szt;
      p->zt.chans[q] = (int)c.hidden;
      p->zt.chan0[q] = me * lay.dloc;
    } else {
      bf16_raw* sa = reinterpret_cast<bf16_raw*>(base + lay.stage_ab_off);
      bf16_raw* sb = sa + (size_t)lay.cp * lay.stage_ab_rank;
      bf16_raw* sz = reinterpret_cast<bf16_raw*>(base + lay.stage_z_off);
      p->ab.a[q] = sa + q * lay.stage_ab_rank;
      p->ab.b[q] = sb + q * lay.stage_ab_rank;
      p->ab.row0[q] = 0;
      p->ab.col0[q] = 0;
      p->ab.ld[q] = c.tile_cols;
      p->ab.plane[q] = lay.szt;
      p->zt.z[q] = sz + q * lay.stage_z_rank;
      p->zt.ld[q] = c.tile_cols;
      p->zt.plane[q] = lay.szt;
      p->zt.chans[q] = lay.dloc;
      p->zt.chan0[q] = 0;
    }
    if (route == FOLDCP_CP_PEER && !direct) {
      // UNFUSED: my staged channel slice for q into q's a/b planes at my tile's place, and my
      // channels' z for q's tokens into q's z planes of those channels (byte strides).
      bf16_raw* qa = static_cast<bf16_raw*>(nvshmem_ptr(a_recv, q));
      bf16_raw* qb = static_cast<bf16_raw*>(nvshmem_ptr(b_recv, q));
      bf16_raw* qz = static_cast<bf16_raw*>(nvshmem_ptr(z_recv, q));
      if (qa == nullptr || qb == nullptr || qz == nullptr) {
        set_error(FOLDCP_ERR_TEAM, "nvshmem_ptr to rank " + std::to_string(q) + " is NULL although route peer was chosen");
        foldcp_cp_plan_destroy(p);
        return FOLDCP_ERR_TEAM;
      }
      for (int which = 0; which < 2; ++which) {
        BlockCopy bc;
        bc.src = reinterpret_cast<const char*>(which == 0 ? p->ab.a[q] : p->ab.b[q]);
        bc.dst = reinterpret_cast<char*>((which == 0 ? qa : qb) + row0 * lay.np + col0);
        bc.outer = c.batch * lay.dloc;
        bc.inner = c.tile_rows;
        bc.run = c.tile_cols * 2;
        bc.src_so = lay.szt * 2;
        bc.src_si = c.tile_cols * 2;
        bc.dst_so = lay.sab * 2;
        bc.dst_si = lay.np * 2;
        p->copy_ab.blk[p->copy_ab.n++] = normalized(bc);
      }
      BlockCopy zc;
      zc.src = reinterpret_cast<const char*>(p->zt.z[q]);
      zc.dst = reinterpret_cast<char*>(qz + (int64_t)me * lay.dloc * lay.szt);
      zc.outer = c.batch;
      zc.inner = lay.dloc;
      zc.run = lay.szt * 2;
      zc.src_so = (int64_t)lay.dloc * lay.szt * 2;
      zc.src_si = lay.szt * 2;
      zc.dst_so = c.hidden * lay.szt * 2;
      zc.dst_si = lay.szt * 2;
      p->copy_z.blk[p->copy_z.n++] = normalized(zc);
    }
    if (p->ab.a[q] == nullptr || p->ab.b[q] == nullptr || p->zt.z[q] == nullptr) {
      set_error(FOLDCP_ERR_TEAM, "nvshmem_ptr to rank " + std::to_string(q) + " is NULL although route peer was chosen");
      foldcp_cp_plan_destroy(p);
      return FOLDCP_ERR_TEAM;
    }
  }
  if (route == FOLDCP_CP_PUT) {
    bf16_raw* sa = reinterpret_cast<bf16_raw*>(base + lay.stage_ab_off);
    p->put_ab = PutAb{sa, sa + (size_t)lay.cp * lay.stage_ab_rank, a_recv, b_recv, lay.stage_ab_rank,
                      c.tile_rows, c.tile_cols, row0, col0, lay.np, lay.sab, (int)(c.batch * lay.dloc), me, t.n};
    p->put_z = PutZ{reinterpret_cast<bf16_raw*>(base + lay.stage_z_off), z_recv, lay.stage_z_rank, lay.szt, lay.szt,
                    lay.dloc, (int)c.hidden, (int)(c.batch * lay.dloc), me, t.n};
  }
  // Bytes leaving this rank per layer: my tile's a and b for the other ranks' channels, and z of
  // my channels for the other ranks' tokens.
  const uint64_t tile_tokens = (uint64_t)c.batch * c.tile_rows * c.tile_cols;
  p->bytes_to_channels = (uint64_t)nlayers * tile_tokens * 2 * (uint64_t)lay.dloc * (t.n - 1) * 2;
  p->bytes_to_tokens = (uint64_t)nlayers * tile_tokens * (uint64_t)lay.dloc * (t.n - 1) * 2;
  // Nobody stores into a peer before that peer has zeroed its buffers.
  if (int st = timed_barrier("CP plan creation")) {
    std::string m = foldcp_last_error();
    foldcp_cp_plan_destroy(p);
    return set_error(st, m);
  }
  *out = p;
  return FOLDCP_OK;
}

int foldcp_cp_plan_destroy(foldcp_cp_plan* p) {
  clear_error();
  if (p == nullptr) return FOLDCP_OK;
  const int st = free_symmetric(p->sym, p->lay.total, "CP plan destruction");
  delete p;
  return st;
}

}  // extern "C"
