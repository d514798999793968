// A CP plan (include/foldcp_cp.h) as cp_plan.cu makes it and cp_forward.cu runs it: the buffer
// layout inside its one symmetric allocation, the store targets of the two fused reshards, the
// layers it runs. Internal to libfoldcp_cp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "block_copy.cuh"
#include "cp_team.cuh"

namespace foldcp {
namespace cp {

// Buffer layout of a plan inside its one symmetric allocation: the receive buffers (a/b/z as in
// the one-GPU workspace, abz_sections), where stores go to staging first the staging areas, and
// for a split pair (proj_out_split) room for its stage 3's p.
struct Layout {
  int cp = 1, dloc = 0;
  int64_t nt = 0;   // padded grid of tiles: cp0 * tile_rows
  int64_t np = 0;   // nt padded to 128 (the triangle GEMM's tile)
  int64_t sab = 0;  // elements between a/b planes
  int64_t szt = 0;  // elements (bf16) between z planes (tile_rows * tile_cols)
  size_t a_off = 0, b_off = 0, z_off = 0, stage_ab_off = 0, stage_z_off = 0, total = 0;
  size_t p_off = 0;  // a split pair's p of this rank's tile between its two stage 3 kernels (local use)
  int64_t stage_ab_rank = 0, stage_z_rank = 0;  // elements per destination rank
};

}  // namespace cp
}  // namespace foldcp

// What foldcp_cp_plan_create decided: the configuration, the layout, the store route, the layer
// stack, and the targets that stages 1 and 2 store through (peer pointers, or staging that puts
// or block copies forward afterwards).
struct foldcp_cp_plan {
  foldcp_cp_config cfg{};
  foldcp::cp::Layout lay{};
  int route = 0;
  std::vector<const foldcp::DevLayer*> layers;
  void* sym = nullptr;
  foldcp::AbTarget ab{};
  foldcp::ZTarget zt{};
  foldcp::ProjInGeom geo{};
  foldcp::cp::PutAb put_ab{};
  foldcp::cp::PutZ put_z{};
  foldcp::cp::BlockSet copy_ab{}, copy_z{};  // UNFUSED on the PEER route: the separate all-to-all
  uint64_t bytes_to_channels = 0, bytes_to_tokens = 0;
};
