// The wide stage 3 kernels (stage3_wide.cuh) of D in (128, 256]: one translation unit per range
// of D, so that the 80 wide kernels compile in parallel.
#include "stage3_wide.cuh"

namespace foldcp {
namespace wide {
template cudaError_t out_range<128, 256>(const DevLayer&, const void*, const bf16_raw*, void*, int64_t, int64_t,
                                       int64_t, int64_t, int64_t, cudaStream_t, bool);
}  // namespace wide
}  // namespace foldcp
