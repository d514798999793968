// Build identity of the native library; the skeleton that the single-GPU kernels grow from.
// Compiled ahead of time for sm_90a so that no forward ever pays a JIT compile.
#include <cuda_runtime.h>

extern "C" {

// The SM architecture this library was compiled for, e.g. 90 for sm_90a.
int foldcp_native_target_sm() { return 90; }

// CUDA runtime version the library was built against (e.g. 13000).
int foldcp_native_cuda_version() { return CUDART_VERSION; }

}  // extern "C"
