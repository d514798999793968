// Strided block copies: the data movement of every all-to-all in the CP library that is not
// fused into a GEMM epilogue. One block is what one rank sends to one peer (or moves locally):
// `outer` x `inner` runs of `run` bytes, the run (o, i) read at src + o * src_so + i * src_si and
// written at dst + o * dst_so + i * dst_si. dst may be a peer pointer (nvshmem_ptr): then the
// copy is the all-to-all itself, each element stored straight into its final place in the
// receiver's buffer. Internal to libfoldcp_cp (a2a.cu, cp_plan.cu, cp_forward.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "../trimul_internal.h"

namespace foldcp {
namespace cp {

struct BlockCopy {
  const char* src = nullptr;
  char* dst = nullptr;
  int64_t outer = 0, inner = 0, run = 0;           // counts, and the run in bytes
  int64_t src_so = 0, src_si = 0, dst_so = 0, dst_si = 0;  // strides in bytes
  int vec = 1;  // bytes per access: the widest of 16, 8, 4, 2, 1 that every address allows
};

// Up to two blocks per peer (a and b of the TriMul reshard) in one launch.
constexpr int kMaxBlocks = 2 * kMaxRanks;
struct BlockSet {
  BlockCopy blk[kMaxBlocks];
  int n = 0;
};

// Merges the inner level into the run where both sides are contiguous across it, and sets vec.
BlockCopy normalized(BlockCopy b);

// The same block read from / written to a contiguous staging area in (outer, inner, run) order:
// the sender's half (pack) and the receiver's half (unpack) of a block sent by a put.
BlockCopy packed_source(const BlockCopy& b, const char* staging);  // staging -> b.dst
BlockCopy packed_target(const BlockCopy& b, char* staging);        // b.src -> staging

inline int64_t block_bytes(const BlockCopy& b) { return b.outer * b.inner * b.run; }

// Copies every block of `set` (one grid; blocks run side by side).
cudaError_t launch_block_copies(const BlockSet& set, cudaStream_t s);

// As launch_block_copies, but block k first waits until signal slot sig[src_of[k]] reaches
// `epoch` (a put with signal has landed), at most timeout_ns; on timeout it flags the source in
// miss[] (host-mapped, as the team's waits do) and skips the copy.
struct WaitSpec {
  const uint64_t* sig = nullptr;
  int src_of[kMaxBlocks] = {};
  uint64_t epoch = 0;
  unsigned long long timeout_ns = 0;
  int* miss = nullptr;
};
cudaError_t launch_block_copies_after(const BlockSet& set, const WaitSpec& w, cudaStream_t s);

}  // namespace cp
}  // namespace foldcp
