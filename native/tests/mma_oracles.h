// The mma.sync oracles of the wgmma tests: independent implementations of the library's stage
// contracts (trimul_internal.h), not part of any library. tri_gemm_mma_oracle.cu (stage 2) is
// linked into tri_gemm_wgmma_test, proj_mma_oracle.cu (stages 1 and 3) into proj_wgmma_test.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "trimul_internal.h"

namespace foldcp {

// Stage 2: same arguments and output as launch_tri_gemm_to. prepare_tri_gemm_mma raises the
// oracle kernels' shared-memory limit (once per process, before the first launch).
cudaError_t launch_tri_gemm_mma_to(const DevLayer& L, const void* a_ws, const void* b_ws, int64_t np, int64_t sab,
                                   const ZTarget& t, int64_t B, cudaStream_t s);
cudaError_t prepare_tri_gemm_mma();

// Stages 1 and 3: same arguments and outputs as launch_proj_in_to and launch_proj_out_tile (no p
// buffer: D = H <= 256; up to
// the fp32 summation order); no channel groups (g.chans must be 0). prepare_proj_mma raises the
// shared-memory limits of the oracle kernels of one D.
cudaError_t launch_proj_in_mma_to(const DevLayer& L, const void* x, const uint8_t* mask, const ProjInGeom& g,
                                  const AbTarget& t, int64_t B, cudaStream_t s);
cudaError_t launch_proj_out_mma_tile(const DevLayer& L, const void* x, const bf16_raw* z, void* out, int64_t B,
                                     int64_t rows, int64_t cols, int64_t ldz, int64_t sz, cudaStream_t s);
cudaError_t prepare_proj_mma(int dim);

}  // namespace foldcp
