// Strided block copies (block_copy.cuh): a warp per piece of a run, lanes over its vectors, so
// that both the loads and the (possibly remote) stores are coalesced 16-byte accesses wherever
// the addresses allow.
#include "block_copy.cuh"

#include <algorithm>

namespace foldcp {
namespace cp {

namespace {

// Runs are cut into pieces of at most this many bytes, so that one long contiguous block (a
// whole plane) is spread over many warps instead of one.
constexpr int64_t kPiece = 4096;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

int widest(uint64_t bits) {
  for (int v = 16; v > 1; v >>= 1)
    if (bits % (uint64_t)v == 0) return v;
  return 1;
}

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

template <typename V>
__device__ __forceinline__ void copy_piece(const char* src, char* dst, int64_t bytes, int lane) {
  const V* s = reinterpret_cast<const V*>(src);
  V* d = reinterpret_cast<V*>(dst);
  const int64_t n = bytes / (int64_t)sizeof(V);
  for (int64_t k = lane; k < n; k += 32) d[k] = s[k];
}

__device__ void copy_block(const BlockCopy& b, int warp0, int warp_stride, int lane) {
  const int64_t pieces = (b.run + kPiece - 1) / kPiece;
  const int64_t units = b.outer * b.inner * pieces;
  for (int64_t u = warp0; u < units; u += warp_stride) {
    const int64_t piece = u % pieces;
    const int64_t r = u / pieces;
    const int64_t i = r % b.inner, o = r / b.inner;
    const int64_t off = piece * kPiece;
    const int64_t len = min(kPiece, b.run - off);
    const char* s = b.src + o * b.src_so + i * b.src_si + off;
    char* d = b.dst + o * b.dst_so + i * b.dst_si + off;
    switch (b.vec) {
      case 16: copy_piece<uint4>(s, d, len, lane); break;
      case 8: copy_piece<uint2>(s, d, len, lane); break;
      case 4: copy_piece<uint32_t>(s, d, len, lane); break;
      case 2: copy_piece<uint16_t>(s, d, len, lane); break;
      default: copy_piece<uint8_t>(s, d, len, lane); break;
    }
  }
}

__global__ void __launch_bounds__(kThreads) block_copy_kernel(const __grid_constant__ BlockSet set) {
  const BlockCopy& b = set.blk[blockIdx.y];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  copy_block(b, blockIdx.x * kWarps + warp, gridDim.x * kWarps, lane);
}

// Thread 0 waits for the block's source to signal; on timeout the source is flagged and the
// block is skipped (its data never arrived; the host reports the missing rank).
__global__ void __launch_bounds__(kThreads) block_copy_after_kernel(const __grid_constant__ BlockSet set,
                                                                     const __grid_constant__ WaitSpec w) {
  __shared__ int ok;
  const int k = blockIdx.y;
  if (threadIdx.x == 0) {
    const int src = w.src_of[k];
    volatile const uint64_t* p = w.sig + src;
    volatile int* failed = w.miss + kMaxRanks;
    const unsigned long long t0 = global_ns();
    unsigned ns = 64;
    ok = 1;
    while (*p < w.epoch) {
      if (global_ns() - t0 > w.timeout_ns) {
        w.miss[src] = 1;
        *failed = 1;
        __threadfence_system();
        ok = 0;
        break;
      }
      if (*failed != 0) {  // another wait already failed: the team is broken, do not wait on
        ok = 0;
        break;
      }
      __nanosleep(ns);
      if (ns < 4096) ns <<= 1;
    }
    __threadfence();  // the signal was seen: the put's data is visible to this block from here on
  }
  __syncthreads();
  if (!ok) return;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  copy_block(set.blk[k], blockIdx.x * kWarps + warp, gridDim.x * kWarps, lane);
}

unsigned grid_x(const BlockSet& set) {
  int64_t most = 0;
  for (int k = 0; k < set.n; ++k) {
    const BlockCopy& b = set.blk[k];
    const int64_t units = b.outer * b.inner * ((b.run + kPiece - 1) / kPiece);
    if (units > most) most = units;
  }
  // Enough CTAs that every warp has about one unit, but at most what fills the GPU a few times
  // over together with the other blocks of the set.
  const int64_t want = (most + kWarps - 1) / kWarps;
  const int64_t cap = (1056 + set.n - 1) / set.n;
  return (unsigned)std::max<int64_t>(1, std::min(want, std::max<int64_t>(cap, 8)));
}

}  // namespace

BlockCopy normalized(BlockCopy b) {
  if (b.inner > 1 && b.src_si == b.run && b.dst_si == b.run) {
    b.run *= b.inner;
    b.inner = 1;
  }
  if (b.inner == 1) b.src_si = b.dst_si = 0;
  if (b.outer > 1 && b.src_so == b.run * b.inner && b.dst_so == b.run * b.inner && b.inner == 1) {
    b.run *= b.outer;
    b.outer = 1;
  }
  if (b.outer == 1) b.src_so = b.dst_so = 0;
  const uint64_t bits = reinterpret_cast<uintptr_t>(b.src) | reinterpret_cast<uintptr_t>(b.dst) | (uint64_t)b.run |
                        (uint64_t)b.src_so | (uint64_t)b.src_si | (uint64_t)b.dst_so | (uint64_t)b.dst_si;
  b.vec = widest(bits);
  return b;
}

BlockCopy packed_source(const BlockCopy& b, const char* staging) {
  BlockCopy p = b;
  p.src = staging;
  p.src_si = b.run;
  p.src_so = b.run * b.inner;
  return normalized(p);
}

BlockCopy packed_target(const BlockCopy& b, char* staging) {
  BlockCopy p = b;
  p.dst = staging;
  p.dst_si = b.run;
  p.dst_so = b.run * b.inner;
  return normalized(p);
}

cudaError_t launch_block_copies(const BlockSet& set, cudaStream_t s) {
  if (set.n == 0) return cudaSuccess;
  block_copy_kernel<<<dim3(grid_x(set), (unsigned)set.n), kThreads, 0, s>>>(set);
  return cudaGetLastError();
}

cudaError_t launch_block_copies_after(const BlockSet& set, const WaitSpec& w, cudaStream_t s) {
  if (set.n == 0) return cudaSuccess;
  block_copy_after_kernel<<<dim3(grid_x(set), (unsigned)set.n), kThreads, 0, s>>>(set, w);
  return cudaGetLastError();
}

}  // namespace cp
}  // namespace foldcp
