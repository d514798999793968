// Shared by the two files of the single-GPU C API (include/foldcp_trimul.h): trimul_api.cu
// (errors, shape checks, workspace sizes, the forward) and trimul_layer.cu (layers: weight
// checks, interleaving, upload and conversion to bf16). Host code only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "foldcp_trimul.h"
#include "trimul_internal.h"

// A layer made by foldcp_trimul_create: its device, the kernels' view (DevLayer) and the device
// memory that view points into.
struct foldcp_trimul_layer {
  int device = -1;
  foldcp::DevLayer dl{};
  void* w_in = nullptr;   // bf16
  void* w_out = nullptr;  // bf16
  float* vecs = nullptr;  // fp32 vectors
};

namespace foldcp {
namespace api {

// Sets this thread's message (foldcp_last_error) from a printf format; returns status.
int fail(int status, const char* fmt, ...);
// A failed CUDA call: FOLDCP_ERR_OUT_OF_MEMORY for a failed allocation, else FOLDCP_ERR_CUDA; the
// message names the call, the CUDA error and the source line (file: __FILE__).
int cuda_fail(cudaError_t e, const char* what, const char* file, int line);

// The rules of the tensor-core kernels, with messages that name the value and the rule.
// check_dim: one width, `name` "D" (the pair width: x, out) or "H" (the hidden width: a, b, z).
int check_dim(int64_t width, const char* name);
int check_dims(int64_t D, int64_t H);
// B, N and the pair width D.
int check_shape(int64_t B, int64_t N, int64_t D);
// B, N and the hidden width H, whose B * H planes are the triangle GEMM's grid (what the
// workspace functions count).
int check_planes(int64_t B, int64_t N, int64_t H);

}  // namespace api
}  // namespace foldcp

// Returns from the calling function with the failed CUDA call's status and message.
#define FOLDCP_CK(call)                                                                   \
  do {                                                                                    \
    const cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) return foldcp::api::cuda_fail(e_, #call, __FILE__, __LINE__); \
  } while (0)
