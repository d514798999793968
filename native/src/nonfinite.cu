// The input check for NaN and Inf on the device (include/foldcp_trimul.h, foldcp_nonfinite_scan):
// one pass over the uploaded bf16 tensor that counts the values whose exponent bits are all ones
// and keeps the smallest flat index among them, so that the host path only copies bytes and still
// names the first (b, i, j, c). Result, two uint64 in device memory:
//   [0] how many values are NaN or +-Inf
//   [1] (index << 16) | bits of the first one (smallest index), or ~0 when there is none
// The key packs the bits beside the index so that one atomicMin keeps both; indices fit in 48 bits
// (B N^2 D < 2^48 for every shape the kernels accept).
#include <cuda_runtime.h>

#include <cstdint>

#include "foldcp_trimul.h"
#include "trimul_internal.h"

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ bool non_finite(uint32_t h) { return (h & 0x7F80u) == 0x7F80u; }

// Each thread reads 16 bytes (8 values) per step; the tail (count % 8 values) is read one value at
// a time by the first threads. Per block: a count in shared memory and the smallest key, published
// with one atomic each, only by blocks that saw a non-finite value (the common case writes nothing).
__global__ void __launch_bounds__(kThreads) scan_kernel(const uint16_t* __restrict__ x, uint64_t n,
                                                        unsigned long long* __restrict__ result) {
  __shared__ unsigned long long block_count;
  __shared__ unsigned long long block_first;
  if (threadIdx.x == 0) {
    block_count = 0;
    block_first = ~0ull;
  }
  __syncthreads();
  unsigned long long count = 0;
  unsigned long long first = ~0ull;
  const uint64_t vecs = n / 8;
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t v = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; v < vecs; v += stride) {
    const uint4 q = __ldcs(xv + v);  // streamed: the forward reads x again, but from L2 at best
    const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      // both halves at once: exponent all ones in either 16-bit lane
      const uint32_t e = w[k] & 0x7F807F80u;
      if ((e & 0xFFFFu) == 0x7F80u || (e >> 16) == 0x7F80u) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t bits = (w[k] >> (16 * h)) & 0xFFFFu;
          if (non_finite(bits)) {
            ++count;
            const unsigned long long key = ((unsigned long long)(v * 8 + 2 * k + h) << 16) | bits;
            first = key < first ? key : first;
          }
        }
      }
    }
  }
  if (blockIdx.x == 0) {
    for (uint64_t i = vecs * 8 + threadIdx.x; i < n; i += blockDim.x) {
      const uint32_t bits = x[i];
      if (non_finite(bits)) {
        ++count;
        const unsigned long long key = ((unsigned long long)i << 16) | bits;
        first = key < first ? key : first;
      }
    }
  }
  if (count != 0) {
    atomicAdd(&block_count, count);
    atomicMin(&block_first, first);
  }
  __syncthreads();
  if (threadIdx.x == 0 && block_count != 0) {
    atomicAdd(&result[0], block_count);
    atomicMin(&result[1], block_first);
  }
}

__global__ void reset_kernel(unsigned long long* result) {
  result[0] = 0;
  result[1] = ~0ull;
}

}  // namespace

extern "C" int foldcp_nonfinite_scan(const void* x, uint64_t count, void* result, foldcp_stream_t stream) {
  if (x == nullptr && count != 0) return foldcp::set_error(FOLDCP_ERR_INVALID_ARGUMENT, "x is NULL");
  if (result == nullptr) return foldcp::set_error(FOLDCP_ERR_INVALID_ARGUMENT, "result is NULL");
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0)
    return foldcp::set_error(FOLDCP_ERR_INVALID_ARGUMENT, "x is not 16-byte aligned: the scan reads 16-byte vectors");
  if (reinterpret_cast<uintptr_t>(result) % 8 != 0)
    return foldcp::set_error(FOLDCP_ERR_INVALID_ARGUMENT, "result is not 8-byte aligned");
  if (count >= (1ull << 48))
    return foldcp::set_error(FOLDCP_ERR_INVALID_ARGUMENT, "count >= 2^48 values: the first index would not fit");
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  auto* r = static_cast<unsigned long long*>(result);
  reset_kernel<<<1, 1, 0, s>>>(r);
  int sms = 132;
  int dev = 0;
  if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const uint64_t vecs = count / 8;
  uint64_t blocks = (vecs + kThreads - 1) / kThreads;
  const uint64_t cap = (uint64_t)sms * 8;  // enough blocks to fill the device; each loops over the rest
  if (blocks > cap) blocks = cap;
  if (blocks == 0) blocks = 1;
  scan_kernel<<<(unsigned)blocks, kThreads, 0, s>>>(static_cast<const uint16_t*>(x), count, r);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return foldcp::set_error(FOLDCP_ERR_CUDA, std::string("launch of the non-finite scan failed: ") +
                                                  cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  foldcp::clear_error();
  return FOLDCP_OK;
}
