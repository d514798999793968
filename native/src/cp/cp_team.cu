// The NVSHMEM team: init from a unique id, the control block (signals, records), timed
// signal-based waits, the record exchange, and the put kernels of the PUT route.
// Compiled with relocatable device code and linked with NVSHMEM's device library.
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cp_team.cuh"

namespace foldcp {
namespace cp {

namespace {

int fail(int status, const std::string& m) { return set_error(status, m); }
}  // namespace

int cuda_fail(cudaError_t e, const char* what, int line) {
  const int st = (e == cudaErrorMemoryAllocation) ? FOLDCP_ERR_OUT_OF_MEMORY : FOLDCP_ERR_CUDA;
  return fail(st, std::string(what) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                      ") [cp_team.cu:" + std::to_string(line) + "]");
}
#define CK(call)                                                  \
  do {                                                            \
    cudaError_t e_ = (call);                                      \
    if (e_ != cudaSuccess) return foldcp::cp::cuda_fail(e_, #call, __LINE__); \
  } while (0)

namespace {

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// Thread r (!= me) tells rank r that this rank finished the step: everything this rank stored
// into r's buffers before (earlier kernels on the stream, or the puts of the PUT route) is
// complete and visible first.
__global__ void signal_kernel(uint64_t* slot, uint64_t epoch, int me, int n) {
  const int r = threadIdx.x;
  if (r < n && r != me) {
    nvshmem_quiet();
    __threadfence_system();
    nvshmemx_signal_op(slot + me, epoch, NVSHMEM_SIGNAL_SET, r);
  }
}

// Thread r (!= me) waits until rank r's signal reaches `epoch`, at most timeout_ns; on timeout it
// flags r in host-mapped memory. Once any wait failed, later waits return at once (the team is
// broken and the host reports it after the stream).
__global__ void wait_kernel(const uint64_t* slot, uint64_t epoch, int me, int n, unsigned long long timeout_ns,
                            int* miss) {
  const int r = threadIdx.x;
  volatile int* failed = miss + kMaxRanks;
  if (r < n && r != me && *failed == 0) {
    volatile const uint64_t* p = slot + r;
    const unsigned long long t0 = global_ns();
    unsigned ns = 64;
    while (*p < epoch) {
      if (global_ns() - t0 > timeout_ns) {
        miss[r] = 1;
        *failed = 1;
        __threadfence_system();
        break;
      }
      __nanosleep(ns);
      if (ns < 4096) ns <<= 1;
    }
  }
  __threadfence_system();  // order the peer's data before what the next kernel reads
}

// Block r copies rank r's published record into rec_all[r].
__global__ void gather_kernel(uint8_t* all, const uint8_t* mine) {
  const int r = blockIdx.x;
  nvshmemx_getmem_block(all + (size_t)r * kRecordBytes, mine, kRecordBytes, r);
}

// PUT route, a/b: block (plane, a|b, destination rank q) sends this rank's tile of channel slice q
// into q's planes at this tile's rows/columns: one put per plane when tile rows are whole plane
// rows, else one per tile row (a warp each).
__global__ void put_ab_kernel(const __grid_constant__ PutAb p) {
  const int q = blockIdx.z;
  if (q == p.me) return;
  const int plane = blockIdx.x;
  const bool is_a = blockIdx.y == 0;
  const bf16_raw* src = (is_a ? p.stage_a : p.stage_b) + q * p.stage_rank + plane * p.tile_rows * p.tile_cols;
  bf16_raw* dst = (is_a ? p.recv_a : p.recv_b) + plane * p.sab + p.row0 * p.np + p.col0;
  if (p.tile_cols == p.np) {
    nvshmemx_putmem_nbi_block(dst, src, (size_t)p.tile_rows * p.tile_cols * 2, q);
  } else {
    const int warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int64_t r = warp; r < p.tile_rows; r += nw)
      nvshmemx_putmem_nbi_warp(dst + r * p.np, src + r * p.tile_cols, (size_t)p.tile_cols * 2, q);
  }
  __syncthreads();
  if (threadIdx.x == 0) nvshmem_quiet();
}

// PUT route, z: block (plane, destination rank o) sends o's tokens of one local channel into o's
// z plane of that (global) channel.
__global__ void put_z_kernel(const __grid_constant__ PutZ p) {
  const int o = blockIdx.y;
  if (o == p.me) return;
  const int plane = blockIdx.x;
  const int b = plane / p.dloc, cl = plane - b * p.dloc;
  const bf16_raw* src = p.stage + o * p.stage_rank + plane * p.tile_elems;
  bf16_raw* dst = p.recv + ((int64_t)b * p.hidden + (int64_t)p.me * p.dloc + cl) * p.szt;
  nvshmemx_putmem_nbi_block(dst, src, (size_t)p.tile_elems * 2, o);
  __syncthreads();
  if (threadIdx.x == 0) nvshmem_quiet();
}

}  // namespace

Team& team() {
  static Team t;
  return t;
}

std::string ranks_text(const int* flags, int n) {
  std::string s;
  for (int r = 0; r < n; ++r) {
    if (!flags[r]) continue;
    if (!s.empty()) s += ", ";
    s += std::to_string(r);
  }
  return s;
}

int require_team(const char* what) {
  Team& t = team();
  if (!t.up)
    return fail(FOLDCP_ERR_TEAM, std::string(what) + ": this process has not joined an NVSHMEM team (foldcp_cp_team_init)");
  if (t.broken)
    return fail(FOLDCP_ERR_TEAM, std::string(what) + ": the NVSHMEM team of this process is broken (a peer did not "
                                                   "arrive in time earlier); the process must be restarted");
  return FOLDCP_OK;
}

cudaError_t enqueue_signal_and_wait(Slot slot, cudaStream_t s) {
  Team& t = team();
  const uint64_t epoch = ++t.epoch[slot];
  uint64_t* base = t.sig + (size_t)slot * kMaxRanks;
  signal_kernel<<<1, 32, 0, s>>>(base, epoch, t.me, t.n);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  wait_kernel<<<1, 32, 0, s>>>(base, epoch, t.me, t.n, (unsigned long long)t.timeout_ms * 1000000ull, t.miss_dev);
  return cudaGetLastError();
}

int check_waits(const char* during) {
  Team& t = team();
  if (!t.miss_host[kMaxRanks]) return FOLDCP_OK;
  t.broken = true;
  return fail(FOLDCP_ERR_TEAM, std::string("rank(s) ") + ranks_text(t.miss_host, t.n) + " of the NVSHMEM team did not " +
                                   "arrive within " + std::to_string(t.timeout_ms) + " ms during " + during +
                                   " (this is rank " + std::to_string(t.me) + " of " + std::to_string(t.n) +
                                   "): a peer died or hangs; the team is broken and this process must be restarted");
}

int timed_barrier(const char* during) {
  if (int st = require_team(during)) return st;
  Team& t = team();
  CK(enqueue_signal_and_wait(kBarrier, t.stream));
  CK(cudaStreamSynchronize(t.stream));
  return check_waits(during);
}

int free_symmetric(void* sym, size_t bytes, const char* during) {
  Team& t = team();
  if (!t.up || t.broken || sym == nullptr) return FOLDCP_OK;
  const int st = timed_barrier(during);
  if (st == FOLDCP_OK) {
    nvshmem_free(sym);
    t.used -= bytes;
  }
  return st;
}

int exchange_records(const uint8_t* rec, uint8_t* all, const char* during) {
  Team& t = team();
  CK(cudaMemcpyAsync(t.rec_mine, rec, kRecordBytes, cudaMemcpyHostToDevice, t.stream));
  if (int st = timed_barrier(during)) return st;  // every record is published
  gather_kernel<<<t.n, 32, 0, t.stream>>>(t.rec_all, t.rec_mine);
  CK(cudaGetLastError());
  CK(cudaMemcpyAsync(all, t.rec_all, (size_t)t.n * kRecordBytes, cudaMemcpyDeviceToHost, t.stream));
  CK(cudaStreamSynchronize(t.stream));
  return timed_barrier(during);  // nobody republishes before everyone has read
}

cudaError_t launch_put_ab(const PutAb& p, cudaStream_t s) {
  put_ab_kernel<<<dim3((unsigned)p.planes, 2, (unsigned)p.n), 128, 0, s>>>(p);
  return cudaGetLastError();
}

cudaError_t launch_put_z(const PutZ& p, cudaStream_t s) {
  put_z_kernel<<<dim3((unsigned)p.planes, (unsigned)p.n), 128, 0, s>>>(p);
  return cudaGetLastError();
}

}  // namespace cp
}  // namespace foldcp

using foldcp::kMaxRanks;
using foldcp::cp::kRecordBytes;
using foldcp::cp::kSlots;
namespace {
foldcp::cp::Team& g_team = foldcp::cp::team();
}  // namespace

extern "C" {

const char* foldcp_cp_status_name(int status) {
  switch (status) {
    case FOLDCP_ERR_TEAM: return "FOLDCP_ERR_TEAM";
    case FOLDCP_ERR_HEAP_TOO_SMALL: return "FOLDCP_ERR_HEAP_TOO_SMALL";
    case FOLDCP_ERR_MISMATCH: return "FOLDCP_ERR_MISMATCH";
    default: return foldcp_status_name(status);
  }
}

int foldcp_cp_nvshmem_version(void) {
  return NVSHMEM_VENDOR_MAJOR_VERSION * 10000 + NVSHMEM_VENDOR_MINOR_VERSION * 100 + NVSHMEM_VENDOR_PATCH_VERSION;
}

int foldcp_cp_unique_id(uint8_t id[FOLDCP_CP_UNIQUE_ID_BYTES]) {
  foldcp::clear_error();
  if (id == nullptr) return foldcp::set_error(FOLDCP_ERR_INVALID_ARGUMENT, "id is NULL: pass 128 bytes");
  static_assert(sizeof(nvshmemx_uniqueid_t) == FOLDCP_CP_UNIQUE_ID_BYTES, "NVSHMEM unique id is 128 bytes");
  nvshmemx_uniqueid_t uid = NVSHMEMX_UNIQUEID_INITIALIZER;
  const int st = nvshmemx_get_uniqueid(&uid);
  if (st != 0)
    return foldcp::set_error(FOLDCP_ERR_TEAM, "nvshmemx_get_uniqueid failed with status " + std::to_string(st) +
                                                  " (NVSHMEM's own message is on stderr)");
  std::memcpy(id, &uid, sizeof uid);
  return FOLDCP_OK;
}

int foldcp_cp_team_init(const uint8_t id[FOLDCP_CP_UNIQUE_ID_BYTES], int rank, int nranks, int device,
                        size_t heap_bytes, int64_t timeout_ms) {
  using foldcp::set_error;
  foldcp::clear_error();
  auto& t = g_team;
  if (t.up || t.broken)
    return set_error(FOLDCP_ERR_TEAM, "this process already joined an NVSHMEM team (PE " + std::to_string(t.me) + " of " +
                                          std::to_string(t.n) + "): NVSHMEM initialises once per process");
  if (id == nullptr) return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "id is NULL: pass the 128-byte unique id of rank 0");
  if (nranks < 1 || nranks > kMaxRanks)
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "team size = " + std::to_string(nranks) + ": must be in [1, " +
                                                      std::to_string(kMaxRanks) + "]");
  if (rank < 0 || rank >= nranks)
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "rank = " + std::to_string(rank) + ": must be in [0, " +
                                                      std::to_string(nranks) + ")");
  if (timeout_ms < 1)
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "timeout = " + std::to_string(timeout_ms) + " ms: must be >= 1");
  if (heap_bytes < (64u << 20))
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "symmetric heap = " + std::to_string(heap_bytes) +
                                                      " bytes: must be at least 64 MiB");
  CK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, device));
  if (prop.major != 9 || prop.minor != 0)
    return set_error(FOLDCP_ERR_UNSUPPORTED_DEVICE, "device " + std::to_string(device) + " (" + prop.name + ") is sm_" +
                                                        std::to_string(prop.major) + std::to_string(prop.minor) +
                                                        ": the CP kernels are built for sm_90a (H100/H200) only");
  // NVSHMEM reads its settings from the environment at init. NVLink multicast (NVLS) is never
  // used by these kernels and is kept off.
  setenv("NVSHMEM_SYMMETRIC_SIZE", std::to_string(heap_bytes).c_str(), 1);
  setenv("NVSHMEM_DISABLE_NVLS", "1", 1);

  nvshmemx_uniqueid_t uid;
  std::memcpy(&uid, id, sizeof uid);
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  int st = nvshmemx_set_attr_uniqueid_args(rank, nranks, &uid, &attr);
  if (st != 0)
    return set_error(FOLDCP_ERR_TEAM, "nvshmemx_set_attr_uniqueid_args(rank " + std::to_string(rank) + ", " +
                                          std::to_string(nranks) + " ranks) failed with status " + std::to_string(st));
  // nvshmemx_init_attr without its exit(-1) on failure: a JVM must get an error, not die.
  int provided = 0;
  nvshmemi_version_t ver = {NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION, NVSHMEM_VENDOR_PATCH_VERSION};
  nvshmemx_init_init_attr_ver_only(attr);
  st = nvshmemi_init_thread(NVSHMEM_THREAD_SERIALIZED, &provided, NVSHMEMX_INIT_WITH_UNIQUEID, &attr, ver);
  if (st != 0) {
    t.broken = true;  // NVSHMEM cannot be initialised again in this process
    return set_error(FOLDCP_ERR_TEAM, "NVSHMEM init (unique id, rank " + std::to_string(rank) + " of " +
                                          std::to_string(nranks) + ") failed with status " + std::to_string(st) +
                                          " (NVSHMEM's own message is on stderr)");
  }
  t.up = true;
  t.me = nvshmem_my_pe();
  t.n = nvshmem_n_pes();
  t.device = device;
  t.heap = heap_bytes;
  t.timeout_ms = timeout_ms;
  if (t.me != rank || t.n != nranks) {
    t.broken = true;
    return set_error(FOLDCP_ERR_TEAM, "NVSHMEM made this process PE " + std::to_string(t.me) + " of " +
                                          std::to_string(t.n) + ", but it joined as rank " + std::to_string(rank) +
                                          " of " + std::to_string(nranks));
  }
  t.control_bytes = sizeof(uint64_t) * kSlots * kMaxRanks + kRecordBytes + (size_t)kMaxRanks * kRecordBytes;
  t.control = nvshmem_malloc(t.control_bytes);
  if (t.control == nullptr) {
    t.broken = true;
    return set_error(FOLDCP_ERR_HEAP_TOO_SMALL, "nvshmem_malloc of the team's control block (" +
                                                    std::to_string(t.control_bytes) + " bytes) failed");
  }
  t.used = t.control_bytes;
  t.sig = static_cast<uint64_t*>(t.control);
  t.rec_mine = reinterpret_cast<uint8_t*>(t.sig + kSlots * kMaxRanks);
  t.rec_all = t.rec_mine + kRecordBytes;
  CK(cudaMemset(t.control, 0, t.control_bytes));
  CK(cudaHostAlloc(&t.miss_host, sizeof(int) * (kMaxRanks + 1), cudaHostAllocMapped));
  std::memset(t.miss_host, 0, sizeof(int) * (kMaxRanks + 1));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&t.miss_dev), t.miss_host, 0));
  CK(cudaStreamCreateWithFlags(&t.stream, cudaStreamNonBlocking));
  CK(cudaDeviceSynchronize());
  // Every rank has zeroed its signals before anyone signals (init just succeeded on all of them,
  // so this plain barrier cannot wait for a missing rank).
  nvshmem_barrier_all();
  return FOLDCP_OK;
}

int foldcp_cp_team_info(int* my_pe, int* n_pes, size_t* heap_bytes, size_t* heap_used, int* broken) {
  foldcp::clear_error();
  auto& t = g_team;
  if (!t.up && !t.broken)
    return foldcp::set_error(FOLDCP_ERR_TEAM, "this process has not joined an NVSHMEM team (foldcp_cp_team_init)");
  if (my_pe) *my_pe = t.me;
  if (n_pes) *n_pes = t.n;
  if (heap_bytes) *heap_bytes = t.heap;
  if (heap_used) *heap_used = t.used;
  if (broken) *broken = t.broken ? 1 : 0;
  return FOLDCP_OK;
}

int foldcp_cp_team_barrier(void) {
  foldcp::clear_error();
  return foldcp::cp::timed_barrier("a team barrier");
}

int foldcp_cp_team_finalize(void) {
  foldcp::clear_error();
  auto& t = g_team;
  if (!t.up) return FOLDCP_OK;
  if (t.broken) return FOLDCP_OK;  // a peer is gone: finalize would wait for it forever
  if (t.used != t.control_bytes)
    return foldcp::set_error(FOLDCP_ERR_INVALID_ARGUMENT, "the team still holds " + std::to_string(t.used - t.control_bytes) +
                                                              " bytes of plans: destroy every plan before finalizing");
  if (int st = foldcp::cp::timed_barrier("team finalize")) return st;
  nvshmem_free(t.control);
  if (t.stream) cudaStreamDestroy(t.stream);
  if (t.miss_host) cudaFreeHost(t.miss_host);
  nvshmem_finalize();
  t = foldcp::cp::Team{};
  t.broken = true;  // NVSHMEM does not initialise twice in one process
  return FOLDCP_OK;
}

}  // extern "C"
