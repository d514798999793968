// The single-GPU C API (include/foldcp_trimul.h), less the layers (trimul_layer.cu): the
// per-thread error message, argument checks with messages that name the value and the rule,
// workspace sizes, and the forward, which launches the three stages (once per channel group for
// stages 1 and 2) and times them when asked.
#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "trimul_api.h"

namespace {

thread_local std::string g_err;

}  // namespace

namespace foldcp {
namespace api {

int fail(int status, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_err = buf;
  return status;
}

int cuda_fail(cudaError_t e, const char* what, const char* file, int line) {
  const int st = (e == cudaErrorMemoryAllocation) ? FOLDCP_ERR_OUT_OF_MEMORY : FOLDCP_ERR_CUDA;
  const char* base = std::strrchr(file, '/');
  return fail(st, "%s failed: %s (%s) [%s:%d]", what, cudaGetErrorName(e), cudaGetErrorString(e),
              base ? base + 1 : file, line);
}

int check_dim(int64_t width, const char* name) {
  if (width < 32 || width > kMaxWidth || width % 32 != 0)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "%s = %lld is not supported: the tensor-core kernels need %s to be a multiple of 32 in [32, %d]", name,
                (long long)width, name, kMaxWidth);
  return FOLDCP_OK;
}

int check_dims(int64_t D, int64_t H) {
  if (int st = check_dim(D, "D")) return st;
  return check_dim(H, "H");
}

// The batch and token counts, the part of a shape that check_shape and check_planes share.
static int check_batch_tokens(int64_t B, int64_t N) {
  if (B < 1 || B > 65535)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "batch B = %lld is out of range: B must be in [1, 65535]", (long long)B);
  if (N < 1 || N > 65408)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "N = %lld is out of range: N must be in [1, 65408] (any N is padded internally to a multiple of 128)",
                (long long)N);
  return FOLDCP_OK;
}

int check_shape(int64_t B, int64_t N, int64_t D) {
  if (int st = check_batch_tokens(B, N)) return st;
  return check_dim(D, "D");
}

int check_planes(int64_t B, int64_t N, int64_t H) {
  if (int st = check_batch_tokens(B, N)) return st;
  if (int st = check_dim(H, "H")) return st;
  if (B * H > 65535)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "B * H = %lld is too large: the triangle GEMM grid needs B * H <= 65535 (B = %lld, H = %lld; H: the "
                "hidden width, D for a layer without its own)",
                (long long)(B * H), (long long)B, (long long)H);
  return FOLDCP_OK;
}

}  // namespace api

int set_error(int status, const std::string& message) {
  g_err = message;
  return status;
}
void clear_error() { g_err.clear(); }

}  // namespace foldcp

using foldcp::api::check_planes;
using foldcp::api::check_shape;
using foldcp::api::cuda_fail;
using foldcp::api::fail;

namespace {

int check_group(int64_t H, int64_t group) {
  if (group < 8 || group > H || group % 8 != 0)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "channel group = %lld is not supported: it must be a multiple of 8 in [8, H = %lld] (H: the hidden "
                "width, the channels of the triangle product)",
                (long long)group, (long long)H);
  return FOLDCP_OK;
}

bool is_device_ptr(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

int check_device_ptr(const void* p, const char* name) {
  if (!is_device_ptr(p))
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "%s = %p is not device memory: the forward takes device pointers (cudaMalloc)", name, p);
  return FOLDCP_OK;
}

// The options of a forward (NULL: the defaults). A caller's struct may be larger than this
// library's (built against a newer header) as long as the fields this library does not know are
// zero, i.e. unused.
int read_options(const foldcp_forward_options* o, int64_t* group, float** stage_ms) {
  *group = 0;
  *stage_ms = nullptr;
  if (o == nullptr) return FOLDCP_OK;
  constexpr size_t kFirstVersion = offsetof(foldcp_forward_options, stage_ms) + sizeof(float*);
  if (o->struct_size < kFirstVersion)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "options->struct_size = %zu: must be sizeof(foldcp_forward_options) (%zu here); initialize the "
                "options with FOLDCP_FORWARD_OPTIONS_INIT",
                o->struct_size, sizeof(foldcp_forward_options));
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(o);
  for (size_t k = sizeof(foldcp_forward_options); k < o->struct_size; ++k)
    if (bytes[k] != 0)
      return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                  "options->struct_size = %zu and byte %zu is set: this library knows the first %zu bytes of "
                  "foldcp_forward_options only, so it cannot honour the newer options",
                  o->struct_size, k, sizeof(foldcp_forward_options));
  *group = o->group;
  *stage_ms = o->stage_ms;
  return FOLDCP_OK;
}

}  // namespace

extern "C" {

const char* foldcp_last_error(void) { return g_err.c_str(); }

const char* foldcp_status_name(int status) {
  switch (status) {
    case FOLDCP_OK: return "FOLDCP_OK";
    case FOLDCP_ERR_INVALID_ARGUMENT: return "FOLDCP_ERR_INVALID_ARGUMENT";
    case FOLDCP_ERR_UNSUPPORTED_DEVICE: return "FOLDCP_ERR_UNSUPPORTED_DEVICE";
    case FOLDCP_ERR_OUT_OF_MEMORY: return "FOLDCP_ERR_OUT_OF_MEMORY";
    case FOLDCP_ERR_WORKSPACE_TOO_SMALL: return "FOLDCP_ERR_WORKSPACE_TOO_SMALL";
    case FOLDCP_ERR_CUDA: return "FOLDCP_ERR_CUDA";
    default: return "FOLDCP_ERR_UNKNOWN";
  }
}

double foldcp_trimul_flops(int64_t B, int64_t N, int64_t D, int64_t H) {
  const double b = (double)B, n = (double)N, d = (double)D, h = (double)(H == 0 ? D : H);
  return 2.0 * b * n * n * n * h + 8.0 * b * n * n * d * h + 2.0 * b * n * n * d * (h + d);
}

int foldcp_trimul_check_shape(int64_t B, int64_t N, int64_t D) {
  g_err.clear();
  return check_shape(B, N, D);
}

int foldcp_trimul_check_dims(int64_t D, int64_t H) {
  g_err.clear();
  return foldcp::api::check_dims(D, H == 0 ? D : H);
}

int foldcp_trimul_workspace_size(int64_t B, int64_t N, int64_t C, size_t* bytes) {
  g_err.clear();
  if (bytes == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "bytes is NULL: pass where to store the size");
  if (int st = check_planes(B, N, C)) return st;
  *bytes = foldcp::ws_layout(B, N, C).total;
  return FOLDCP_OK;
}

int foldcp_trimul_workspace_size_group(int64_t B, int64_t N, int64_t C, int64_t group, size_t* bytes) {
  g_err.clear();
  if (bytes == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "bytes is NULL: pass where to store the size");
  if (int st = check_planes(B, N, C)) return st;
  if (int st = check_group(C, group)) return st;
  *bytes = foldcp::ws_layout(B, N, C, group).total;
  return FOLDCP_OK;
}

int foldcp_trimul_channel_group(int64_t B, int64_t N, int64_t C, size_t bytes_available, int64_t* group) {
  g_err.clear();
  if (group == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "group is NULL: pass where to store the group");
  if (int st = check_planes(B, N, C)) return st;
  // Whole chunks of 32 channels first (stage 1 computes 32 at a time); 16 and 8 only where no
  // multiple of 32 fits: they waste the rest of their chunk (stage 1 costs 2x and 4x), which at
  // the largest N (a few per cent of the layer) is the price of fitting at all.
  for (int64_t g = C; g >= 8; g = g > 32 ? g - 32 : g / 2) {
    if (foldcp::ws_layout(B, N, C, g).total <= bytes_available) {
      *group = g;
      return FOLDCP_OK;
    }
  }
  return fail(FOLDCP_ERR_OUT_OF_MEMORY,
              "(B, N, H) = (%lld, %lld, %lld) needs a workspace of at least %zu bytes (z for all H channels plus a and "
              "b for a group of 8), but %zu bytes are available",
              (long long)B, (long long)N, (long long)C, foldcp::ws_layout(B, N, C, 8).total, bytes_available);
}

int foldcp_trimul_debug_workspace(int64_t B, int64_t N, int64_t C, void* workspace, void** a_ws, void** b_ws,
                                  foldcp::bf16_raw** z_ws, int64_t* np, int64_t* sab, int64_t* sz) {
  if (int st = check_planes(B, N, C)) return st;
  const foldcp::WsLayout l = foldcp::ws_layout(B, N, C);
  char* w = static_cast<char*>(workspace);
  *a_ws = w + l.a_off;
  *b_ws = w + l.b_off;
  *z_ws = reinterpret_cast<foldcp::bf16_raw*>(w + l.z_off);
  *np = l.np;
  *sab = l.sab;
  *sz = l.sz;
  return FOLDCP_OK;
}

int foldcp_trimul_forward(const foldcp_trimul_layer* L, const void* x, const uint8_t* mask, void* out, int64_t B,
                          int64_t N, void* ws, size_t ws_bytes, const foldcp_forward_options* opts,
                          foldcp_stream_t stream) {
  g_err.clear();
  int64_t group = 0;
  float* stage_ms = nullptr;
  if (int st = read_options(opts, &group, &stage_ms)) return st;
  if (L == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "layer is NULL");
  const int64_t D = L->dl.dim, H = L->dl.hidden;
  if (int st = check_shape(B, N, D)) return st;
  if (int st = check_planes(B, N, H)) return st;
  if (group == 0) group = H;
  if (int st = check_group(H, group)) return st;
  if (x == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "x is NULL");
  if (out == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "out is NULL");
  if (ws == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "workspace is NULL");
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "x = %p is not 16-byte aligned: x must be 16-byte aligned", x);
  if (reinterpret_cast<uintptr_t>(out) % 16 != 0)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "out = %p is not 16-byte aligned: out must be 16-byte aligned", out);
  if (reinterpret_cast<uintptr_t>(ws) % 256 != 0)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "workspace = %p is not 256-byte aligned: it must be", ws);
  const foldcp::WsLayout l = foldcp::ws_layout(B, N, H, group);
  if (ws_bytes < l.total)
    return fail(FOLDCP_ERR_WORKSPACE_TOO_SMALL,
                "workspace_bytes = %zu is too small: (B, N, H) = (%lld, %lld, %lld) with channel group %lld needs %zu "
                "bytes (foldcp_trimul_workspace_size_group)",
                ws_bytes, (long long)B, (long long)N, (long long)H, (long long)group, l.total);
  const size_t xbytes = (size_t)B * N * N * D * 2;
  {
    const char* xb = static_cast<const char*>(x);
    const char* ob = static_cast<const char*>(out);
    const char* wb = static_cast<const char*>(ws);
    if (xb != ob && xb < ob + xbytes && ob < xb + xbytes)
      return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                  "out = %p partly overlaps x = %p: out must be x itself (in place) or not overlap it", out, x);
    if ((wb < xb + xbytes && xb < wb + l.total) || (wb < ob + xbytes && ob < wb + l.total))
      return fail(FOLDCP_ERR_INVALID_ARGUMENT, "workspace = %p overlaps x or out: it must be separate memory", ws);
  }
  int dev = -1;
  FOLDCP_CK(cudaGetDevice(&dev));
  if (dev != L->device)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "the current device is %d but the layer lives on device %d: call cudaSetDevice(%d) first", dev,
                L->device, L->device);
  if (int st = check_device_ptr(x, "x")) return st;
  if (int st = check_device_ptr(out, "out")) return st;
  if (int st = check_device_ptr(ws, "workspace")) return st;
  if (mask != nullptr)
    if (int st = check_device_ptr(mask, "mask")) return st;

  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  char* w = static_cast<char*>(ws);
  void* a_ws = w + l.a_off;
  void* b_ws = w + l.b_off;
  foldcp::bf16_raw* z = reinterpret_cast<foldcp::bf16_raw*>(w + l.z_off);

  // Stages 1 and 2 once per channel group (a and b of `group` of the H channels in the workspace,
  // z of all H), then stage 3 over all channels (in place, a split pair's p in the room of a and b,
  // which stage 2 has consumed). Profiled: events around every launch, the times
  // of a stage summed over the groups.
  const int64_t ngroups = (H + group - 1) / group;
  const int nev = stage_ms ? (int)(2 * ngroups + 2) : 0;
  std::vector<cudaEvent_t> ev(nev, nullptr);
  int st = FOLDCP_OK;
  auto step = [&](cudaError_t e, const char* what, int line) {
    if (st == FOLDCP_OK && e != cudaSuccess) st = cuda_fail(e, what, __FILE__, line);
  };
  for (int k = 0; k < nev && st == FOLDCP_OK; ++k) step(cudaEventCreate(&ev[k]), "cudaEventCreate", __LINE__);
  int evk = 0;
  auto mark = [&]() {
    if (stage_ms && st == FOLDCP_OK) step(cudaEventRecord(ev[evk++], s), "cudaEventRecord", __LINE__);
  };
  mark();
  for (int64_t c0 = 0; c0 < H && st == FOLDCP_OK; c0 += group) {
    const int gc = (int)std::min<int64_t>(group, H - c0);
    step(foldcp::launch_proj_in(L->dl, x, mask, a_ws, b_ws, B, N, l.sab, (int)c0, gc, s),
         "launch of stage 1 (LN_in + projection)", __LINE__);
    mark();
    if (st == FOLDCP_OK)
      step(foldcp::launch_tri_gemm(L->dl, a_ws, b_ws, z, B, N, l.sab, l.sz, (int)c0, gc, s),
           "launch of stage 2 (triangle GEMM)", __LINE__);
    mark();
  }
  if (st == FOLDCP_OK)
    step(foldcp::launch_proj_out(L->dl, x, z, out, a_ws, l.z_off - l.a_off, B, N, l.sz, s),
         "launch of stage 3 (LN_out + output projection)", __LINE__);
  mark();
  if (stage_ms && st == FOLDCP_OK) {
    step(cudaEventSynchronize(ev[nev - 1]), "cudaEventSynchronize (forward kernels)", __LINE__);
    stage_ms[0] = stage_ms[1] = stage_ms[2] = 0.f;
    for (int k = 0; k + 1 < nev && st == FOLDCP_OK; ++k) {
      float ms = 0.f;
      step(cudaEventElapsedTime(&ms, ev[k], ev[k + 1]), "cudaEventElapsedTime", __LINE__);
      stage_ms[k + 1 == nev - 1 ? 2 : (k % 2)] += ms;  // s1, s2 per group, then s3
    }
  }
  for (cudaEvent_t e : ev)
    if (e) cudaEventDestroy(e);
  return st;
}

}  // extern "C"
