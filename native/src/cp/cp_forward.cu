// A CP plan at work (include/foldcp_cp.h): the forward of its layer stack on this rank's tile
// (stage 1 storing to the channel owners, reshard 1, stage 2 storing to the token owners,
// reshard 2, stage 3), and what a plan reports.
#include <cstdint>
#include <string>

#include "cp_plan.cuh"

using namespace foldcp;
using namespace foldcp::cp;

extern "C" {

int foldcp_cp_plan_route(const foldcp_cp_plan* plan) { return plan == nullptr ? -1 : plan->route; }

int foldcp_cp_plan_reshard(const foldcp_cp_plan* plan) { return plan == nullptr ? -1 : plan->cfg.reshard; }

int foldcp_cp_plan_reshard_bytes(const foldcp_cp_plan* plan, uint64_t* to_channels, uint64_t* to_tokens) {
  clear_error();
  if (plan == nullptr) return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "plan is NULL");
  if (to_channels) *to_channels = plan->bytes_to_channels;
  if (to_tokens) *to_tokens = plan->bytes_to_tokens;
  return FOLDCP_OK;
}

int foldcp_cp_forward(foldcp_cp_plan* p, const void* x, const uint8_t* mask, void* out, foldcp_stream_t stream) {
  clear_error();
  if (p == nullptr) return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "plan is NULL");
  if (x == nullptr || out == nullptr) return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "x and out must not be NULL");
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(out) % 16 != 0)
    return set_error(FOLDCP_ERR_INVALID_ARGUMENT, "x and out must be 16-byte aligned");
  if (int st = require_team("a CP forward")) return st;
  Team& t = team();
  const foldcp_cp_config& c = p->cfg;
  const Layout& l = p->lay;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  char* base = static_cast<char*>(p->sym);
  const void* a_recv = base + l.a_off;
  const void* b_recv = base + l.b_off;
  const bf16_raw* z_recv = reinterpret_cast<const bf16_raw*>(base + l.z_off);
  cudaError_t e = cudaSuccess;
  const char* what = "";
  for (size_t i = 0; i < p->layers.size() && e == cudaSuccess; ++i) {
    const DevLayer& L = *p->layers[i];
    const void* in = i == 0 ? x : out;
    what = "stage 1 (LN_in + projection, stores to the channel owners)";
    e = launch_proj_in_to(L, in, mask, p->geo, p->ab, c.batch, s);
    if (e == cudaSuccess && p->route == FOLDCP_CP_PUT) {
      what = "the puts of reshard 1";
      e = launch_put_ab(p->put_ab, s);
    } else if (e == cudaSuccess && p->copy_ab.n > 0) {
      what = "the all-to-all of reshard 1 (unfused)";
      e = launch_block_copies(p->copy_ab, s);
    }
    if (e == cudaSuccess) {
      what = "the signal of reshard 1";
      e = enqueue_signal_and_wait(kToChannels, s);
    }
    if (e == cudaSuccess) {
      what = "stage 2 (triangle GEMM, stores to the token owners)";
      e = launch_tri_gemm_to(L, a_recv, b_recv, l.np, l.sab, p->zt, c.batch, s);
    }
    if (e == cudaSuccess && p->route == FOLDCP_CP_PUT) {
      what = "the puts of reshard 2";
      e = launch_put_z(p->put_z, s);
    } else if (e == cudaSuccess && p->copy_z.n > 0) {
      what = "the all-to-all of reshard 2 (unfused)";
      e = launch_block_copies(p->copy_z, s);
    }
    if (e == cudaSuccess) {
      what = "the signal of reshard 2";
      e = enqueue_signal_and_wait(kToTokens, s);
    }
    if (e == cudaSuccess) {
      what = "stage 3 (LN_out + output projection)";
      e = launch_proj_out_tile(L, in, z_recv, out, proj_out_split(L.dim, L.hidden) ? base + l.p_off : nullptr,
                               c.batch, c.tile_rows, c.tile_cols, c.tile_cols, l.szt, s);
    }
  }
  if (e == cudaSuccess) {
    what = "the end of the CP forward (cudaStreamSynchronize)";
    e = cudaStreamSynchronize(s);
  }
  if (e != cudaSuccess) {
    t.broken = true;  // peers wait for signals this rank will never send
    return set_error(FOLDCP_ERR_CUDA, std::string("CP forward on rank ") + std::to_string(t.me) + ": " + what +
                                          " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
  return check_waits("a CP forward");
}
}  // extern "C"
