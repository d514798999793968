// The heads all-to-all (include/foldcp_a2a.h): plan creation (collective agreement, route,
// heap check, symmetric buffers) and the two reshards over the PEER and PUT routes, built on
// the strided block copies of block_copy.cuh.
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstring>
#include <string>
#include <vector>

#include "block_copy.cuh"
#include "cp_team.cuh"
#include "foldcp_a2a.h"

namespace foldcp {
namespace cp {
namespace {

int elem_bytes(int dtype) { return dtype == FOLDCP_A2A_F32 ? 4 : 2; }

const char* dtype_name(int d) { return d == FOLDCP_A2A_BF16 ? "bf16" : d == FOLDCP_A2A_F16 ? "fp16" : "fp32"; }

// Sizes of one plan: the tensor (the same element count on both sides of either reshard), the
// block one rank sends one peer, and the symmetric allocation: the output buffer, plus for PUT a
// send and a receive staging area of one block slot per rank.
struct Sizes {
  size_t tensor = 0, block = 0, slot = 0, send = 0, recv = 0, total = 0;
};

Sizes sizes_of(const foldcp_a2a_config& c, int ranks, int route) {
  Sizes z;
  z.tensor = (size_t)c.batch * c.seq_local * c.heads * c.head_dim * elem_bytes(c.dtype);
  z.block = z.tensor / ranks;
  z.slot = align_up(z.block, kBufAlign);
  z.total = align_up(z.tensor, kBufAlign);
  if (route == FOLDCP_CP_PUT) {
    z.send = z.total;
    z.recv = z.send + (size_t)ranks * z.slot;
    z.total = z.recv + (size_t)ranks * z.slot;
  }
  return z;
}

int check_config(const foldcp_a2a_config& c, int ranks) {
  auto bad = [](const std::string& m) { return set_error(FOLDCP_ERR_INVALID_ARGUMENT, m); };
  if (c.batch < 1) return bad("B = " + std::to_string(c.batch) + ": must be >= 1");
  if (c.seq_local < 1) return bad("S_local = " + std::to_string(c.seq_local) + ": must be >= 1");
  if (c.head_dim < 1) return bad("Dh = " + std::to_string(c.head_dim) + ": must be >= 1");
  if (c.heads < 1 || c.heads % ranks != 0)
    return bad("H = " + std::to_string(c.heads) + " is not divisible by the team size W = " + std::to_string(ranks) +
               ": each rank gets H / W heads");
  if (c.dtype != FOLDCP_A2A_BF16 && c.dtype != FOLDCP_A2A_F16 && c.dtype != FOLDCP_A2A_F32)
    return bad("dtype = " + std::to_string(c.dtype) + ": must be 0 (bf16), 1 (fp16) or 2 (fp32)");
  if (c.route != FOLDCP_CP_AUTO && c.route != FOLDCP_CP_PEER && c.route != FOLDCP_CP_PUT)
    return bad("route = " + std::to_string(c.route) + ": must be 0 (auto), 1 (peer) or 2 (put)");
  // Element offsets stay far inside int64 and one block's byte count inside the puts' size_t.
  const double elems = (double)c.batch * c.seq_local * c.heads * c.head_dim * ranks;
  if (elems > 9e15) return bad("B * S * H * Dh = " + std::to_string(elems) + ": too large");
  return FOLDCP_OK;
}

std::string shape_text(const foldcp_a2a_config& c) {
  return "[B, S_local, H, Dh] = [" + std::to_string(c.batch) + ", " + std::to_string(c.seq_local) + ", " +
         std::to_string(c.heads) + ", " + std::to_string(c.head_dim) + "] " + dtype_name(c.dtype);
}

const char* route_name(int r) { return r == FOLDCP_CP_PEER ? "peer" : r == FOLDCP_CP_PUT ? "put" : "auto"; }

struct Record {
  int64_t batch, seq_local, heads, head_dim;
  int32_t dtype, route, reach_all;
};
static_assert(sizeof(Record) <= kRecordBytes, "record fits its slot");

}  // namespace
}  // namespace cp
}  // namespace foldcp

struct foldcp_a2a {
  foldcp_a2a_config cfg{};
  int route = 0;
  foldcp::cp::Sizes sz{};
  void* sym = nullptr;
  uint64_t bytes_sent = 0;
};

// One anonymous namespace only (inside foldcp::cp): nvcc's stub code cannot tell two apart when
// a kernel lives in one of them.
namespace foldcp {
namespace cp {
namespace {

enum class Dir { kScatter, kGather };

// The block rank `src` sends rank `dst`, as byte offsets from src's input and dst's output
// (pointers added by the caller). See foldcp_a2a.h for the two layouts.
BlockCopy block_of(const foldcp_a2a& p, Dir dir, int src, int dst, const char* in, char* out) {
  const foldcp_a2a_config& c = p.cfg;
  const int64_t W = team().n, es = elem_bytes(c.dtype), hl = c.heads / W, S = W * c.seq_local;
  const int64_t row = hl * c.head_dim * es;  // the heads of one position that one rank owns
  BlockCopy b;
  b.outer = c.batch;
  b.inner = c.seq_local;
  b.run = row;
  if (dir == Dir::kScatter) {  // [B, S_l, H, Dh] -> [B, S, hl, Dh]
    b.src = in + dst * row;
    b.src_so = c.seq_local * c.heads * c.head_dim * es;
    b.src_si = c.heads * c.head_dim * es;
    b.dst = out + src * c.seq_local * row;
    b.dst_so = S * row;
    b.dst_si = row;
  } else {  // [B, S, hl, Dh] -> [B, S_l, H, Dh]
    b.src = in + dst * c.seq_local * row;
    b.src_so = S * row;
    b.src_si = row;
    b.dst = out + src * row;
    b.dst_so = c.seq_local * c.heads * c.head_dim * es;
    b.dst_si = c.heads * c.head_dim * es;
  }
  return normalized(b);
}

// PUT route: block q sends this rank's packed block for q into q's receive slot of this rank and
// raises q's data signal of this rank on arrival; the quiet lets the next call reuse the staging.
struct PutSpec {
  const char* send;
  char* recv;
  size_t slot, bytes;
  uint64_t* sig;
  uint64_t epoch;
  int me, n;
};

__global__ void put_blocks_kernel(const __grid_constant__ PutSpec p) {
  const int q = blockIdx.x;
  if (q == p.me) return;
  nvshmemx_putmem_signal_nbi_block(p.recv + (size_t)p.me * p.slot, p.send + (size_t)q * p.slot, p.bytes,
                                   p.sig + p.me, p.epoch, NVSHMEM_SIGNAL_SET, q);
  __syncthreads();
  if (threadIdx.x == 0) nvshmem_quiet();
}

bool overlaps(const void* a, const void* b, size_t n) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + n && y < x + n;
}

int reshard(foldcp_a2a* p, Dir dir, const void* in_v, void* out_v, foldcp_stream_t stream) {
  clear_error();
  const char* name = dir == Dir::kScatter ? "scatter_heads" : "gather_heads";
  if (p == nullptr) return set_error(FOLDCP_ERR_INVALID_ARGUMENT, std::string(name) + ": plan is NULL");
  if (in_v == nullptr || out_v == nullptr)
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT, std::string(name) + ": in and out must not be NULL");
  const size_t T = p->sz.tensor;
  char* out_sym = static_cast<char*>(p->sym);
  if (in_v == out_sym)
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT,
                     std::string(name) + ": in is the plan's output buffer, which the peers write into during the "
                                         "call; copy it first, or use a second plan");
  if (overlaps(in_v, out_v, T))
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT, std::string(name) + ": in and out overlap; they must be separate buffers");
  if (overlaps(in_v, out_sym, T))
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT,
                     std::string(name) + ": in overlaps the plan's output buffer, which the peers write into");
  if (int st = require_team(name)) return st;
  Team& t = team();
  const char* in = static_cast<const char*>(in_v);
  char* out = static_cast<char*>(out_v);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  cudaError_t e = enqueue_signal_and_wait(kA2aReady, s);
  const char* what = "the entry handshake";
  if (e == cudaSuccess && p->route == FOLDCP_CP_PEER) {
    // Every block, this rank's own included, lands in the receivers' output buffers.
    BlockSet set;
    for (int q = 0; q < t.n; ++q) {
      char* dst = static_cast<char*>(nvshmem_ptr(out_sym, q));
      set.blk[set.n++] = block_of(*p, dir, t.me, q, in, dst);
    }
    what = "the stores to the peers";
    e = launch_block_copies(set, s);
    if (e == cudaSuccess) {
      what = "the arrival signals";
      e = enqueue_signal_and_wait(kA2aData, s);
    }
    if (e == cudaSuccess && out != out_sym) {
      what = "the copy into the caller's output";
      e = cudaMemcpyAsync(out, out_sym, T, cudaMemcpyDeviceToDevice, s);
    }
  } else if (e == cudaSuccess) {
    char* send = out_sym + p->sz.send;
    char* recv = out_sym + p->sz.recv;
    BlockSet pack;
    for (int q = 0; q < t.n; ++q) {
      const BlockCopy b = block_of(*p, dir, t.me, q, in, out);
      pack.blk[pack.n++] = q == t.me ? b : packed_target(b, send + (size_t)q * p->sz.slot);
    }
    what = "packing the blocks";
    e = launch_block_copies(pack, s);
    const uint64_t epoch = ++t.epoch[kA2aData];
    if (e == cudaSuccess && t.n > 1) {
      what = "the puts";
      PutSpec ps{send, recv, p->sz.slot, p->sz.block, t.sig + (size_t)kA2aData * kMaxRanks, epoch, t.me, t.n};
      put_blocks_kernel<<<t.n, 128, 0, s>>>(ps);
      e = cudaGetLastError();
    }
    if (e == cudaSuccess && t.n > 1) {
      BlockSet unpack;
      WaitSpec w;
      w.sig = t.sig + (size_t)kA2aData * kMaxRanks;
      w.epoch = epoch;
      w.timeout_ns = (unsigned long long)t.timeout_ms * 1000000ull;
      w.miss = t.miss_dev;
      for (int src = 0; src < t.n; ++src) {
        if (src == t.me) continue;
        w.src_of[unpack.n] = src;
        unpack.blk[unpack.n++] = packed_source(block_of(*p, dir, src, t.me, nullptr, out), recv + (size_t)src * p->sz.slot);
      }
      what = "unpacking what arrived";
      e = launch_block_copies_after(unpack, w, s);
    }
  }
  if (e == cudaSuccess) {
    what = "the end of the call (cudaStreamSynchronize)";
    e = cudaStreamSynchronize(s);
  }
  if (e != cudaSuccess) {
    t.broken = true;  // peers wait for signals this rank will never send
    return set_error(FOLDCP_ERR_CUDA, std::string(name) + " on rank " + std::to_string(t.me) + ": " + what +
                                          " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
  return check_waits(name);
}

}  // namespace
}  // namespace cp
}  // namespace foldcp

using namespace foldcp;
using namespace foldcp::cp;

extern "C" {

int foldcp_a2a_plan_bytes(const foldcp_a2a_config* cfg, int ranks, int route, size_t* bytes) {
  clear_error();
  if (cfg == nullptr || bytes == nullptr) return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "cfg and bytes must not be NULL");
  if (ranks < 1 || ranks > kMaxRanks)
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "ranks = " + std::to_string(ranks) + ": must be in [1, " +
                                                      std::to_string(kMaxRanks) + "]");
  if (int st = check_config(*cfg, ranks)) return st;
  *bytes = sizes_of(*cfg, ranks, route == FOLDCP_CP_AUTO ? FOLDCP_CP_PUT : route).total;
  return FOLDCP_OK;
}

int foldcp_a2a_create(const foldcp_a2a_config* cfg, foldcp_a2a** out) {
  clear_error();
  if (cfg == nullptr || out == nullptr) return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "cfg and plan must not be NULL");
  *out = nullptr;
  if (int st = require_team("creating an all-to-all plan")) return st;
  Team& t = team();
  const foldcp_a2a_config c = *cfg;
  if (int st = check_config(c, t.n)) return st;

  int reach_all = 1;
  for (int r = 0; r < t.n; ++r)
    if (nvshmem_ptr(t.sig, r) == nullptr) reach_all = 0;
  Record mine{c.batch, c.seq_local, c.heads, c.head_dim, c.dtype, c.route, reach_all};
  uint8_t rec[kRecordBytes] = {};
  std::memcpy(rec, &mine, sizeof mine);
  std::vector<uint8_t> all((size_t)t.n * kRecordBytes);
  if (int st = exchange_records(rec, all.data(), "all-to-all plan creation")) return st;
  std::string differ, route_differ;
  int reach_everywhere = 1;
  for (int r = 0; r < t.n; ++r) {
    Record x;
    std::memcpy(&x, all.data() + (size_t)r * kRecordBytes, sizeof x);
    if (x.batch != c.batch || x.seq_local != c.seq_local || x.heads != c.heads || x.head_dim != c.head_dim ||
        x.dtype != c.dtype)
      differ += (differ.empty() ? "" : ", ") + std::to_string(r);
    if (x.route != c.route) route_differ += (route_differ.empty() ? "" : ", ") + std::to_string(r);
    reach_everywhere &= x.reach_all;
  }
  if (!differ.empty())
    return set_error(FOLDCP_ERR_MISMATCH, "rank(s) " + differ + " asked for another shape or dtype than rank " +
                                              std::to_string(t.me) + " (" + shape_text(c) +
                                              "): every rank of an all-to-all must use the same");
  if (!route_differ.empty())
    return set_error(FOLDCP_ERR_MISMATCH, "rank(s) " + route_differ + " asked for another route than rank " +
                                              std::to_string(t.me) + " (" + route_name(c.route) + ")");
  int route = c.route;
  if (route == FOLDCP_CP_AUTO) route = reach_everywhere ? FOLDCP_CP_PEER : FOLDCP_CP_PUT;
  if (route == FOLDCP_CP_PEER && !reach_everywhere)
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT,
                     "route peer: some rank cannot reach every peer through a pointer (nvshmem_ptr is NULL: another "
                     "node?); use route put or auto");
  const Sizes z = sizes_of(c, t.n, route);
  if (t.used + z.total > t.heap)
    return set_error(FOLDCP_ERR_HEAP_TOO_SMALL,
                     "the symmetric heap is too small: an all-to-all plan of " + shape_text(c) + " on " +
                         std::to_string(t.n) + " ranks, route " + route_name(route) + " needs " +
                         std::to_string(z.total) + " bytes on every rank, but only " + std::to_string(t.heap - t.used) +
                         " of the heap's " + std::to_string(t.heap) + " bytes are free; give the team a heap of at "
                         "least " + std::to_string(t.used + z.total) + " bytes (spark.foldcp.nvshmem.heapBytes)");
  if (int st = timed_barrier("all-to-all plan allocation")) return st;
  void* sym = nvshmem_malloc(z.total);
  if (sym == nullptr)
    return set_error(FOLDCP_ERR_HEAP_TOO_SMALL, "nvshmem_malloc(" + std::to_string(z.total) + " bytes) failed");
  t.used += z.total;
  auto* p = new foldcp_a2a();
  p->cfg = c;
  p->route = route;
  p->sz = z;
  p->sym = sym;
  p->bytes_sent = (uint64_t)z.block * (t.n - 1);
  if (route == FOLDCP_CP_PEER) {
    for (int q = 0; q < t.n; ++q)
      if (nvshmem_ptr(sym, q) == nullptr) {
        set_error(FOLDCP_ERR_TEAM, "nvshmem_ptr to rank " + std::to_string(q) + " is NULL although route peer was chosen");
        foldcp_a2a_destroy(p);
        return FOLDCP_ERR_TEAM;
      }
  }
  *out = p;
  return FOLDCP_OK;
}

int foldcp_a2a_route(const foldcp_a2a* p) { return p == nullptr ? -1 : p->route; }

int foldcp_a2a_output(const foldcp_a2a* p, void** out, size_t* bytes) {
  clear_error();
  if (p == nullptr) return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "plan is NULL");
  if (out) *out = p->sym;
  if (bytes) *bytes = p->sz.tensor;
  return FOLDCP_OK;
}

int foldcp_a2a_bytes_sent(const foldcp_a2a* p, uint64_t* bytes) {
  clear_error();
  if (p == nullptr || bytes == nullptr) return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "plan and bytes must not be NULL");
  *bytes = p->bytes_sent;
  return FOLDCP_OK;
}

int foldcp_a2a_scatter_heads(foldcp_a2a* p, const void* in, void* out, foldcp_stream_t stream) {
  return reshard(p, Dir::kScatter, in, out, stream);
}

int foldcp_a2a_gather_heads(foldcp_a2a* p, const void* in, void* out, foldcp_stream_t stream) {
  return reshard(p, Dir::kGather, in, out, stream);
}

int foldcp_a2a_destroy(foldcp_a2a* p) {
  clear_error();
  if (p == nullptr) return FOLDCP_OK;
  const int st = free_symmetric(p->sym, p->sz.total, "all-to-all plan destruction");
  delete p;
  return st;
}

}  // extern "C"
