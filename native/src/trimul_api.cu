// Host API of the single-GPU TriMul (include/foldcp_trimul.h): argument checks with messages
// that name the value and the rule, weight upload, workspace layout, and the three launches.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include "foldcp_trimul.h"
#include "trimul_internal.h"

struct foldcp_trimul_layer {
  int device = -1;
  foldcp::DevLayer dl{};
  void* w_in = nullptr;   // bf16
  void* w_out = nullptr;  // bf16
  float* vecs = nullptr;  // fp32 vectors
};

namespace {

thread_local std::string g_err;

int fail(int status, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_err = buf;
  return status;
}

int cuda_fail(cudaError_t e, const char* what, int line) {
  const int st = (e == cudaErrorMemoryAllocation) ? FOLDCP_ERR_OUT_OF_MEMORY : FOLDCP_ERR_CUDA;
  return fail(st, "%s failed: %s (%s) [trimul_api.cu:%d]", what, cudaGetErrorName(e), cudaGetErrorString(e), line);
}

#define CK(call)                                                  \
  do {                                                            \
    cudaError_t e_ = (call);                                      \
    if (e_ != cudaSuccess) return cuda_fail(e_, #call, __LINE__); \
  } while (0)

int check_shape(int64_t B, int64_t N, int64_t D) {
  if (B < 1 || B > 65535)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "batch B = %lld is out of range: B must be in [1, 65535]", (long long)B);
  if (N < 1 || N > 65408)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "N = %lld is out of range: N must be in [1, 65408] (any N is padded internally to a multiple of 128)",
                (long long)N);
  if (D < 32 || D > 256 || D % 32 != 0)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "D = %lld is not supported: the tensor-core kernels need D to be a multiple of 32 in [32, 256]",
                (long long)D);
  if (B * D > 65535)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "B * D = %lld is too large: the triangle GEMM grid needs B * D <= 65535 (B = %lld, D = %lld)",
                (long long)(B * D), (long long)B, (long long)D);
  return FOLDCP_OK;
}

int check_group(int64_t D, int64_t group) {
  if (group < 32 || group > D || group % 32 != 0)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "channel group = %lld is not supported: it must be a multiple of 32 in [32, D = %lld]",
                (long long)group, (long long)D);
  return FOLDCP_OK;
}

int check_vec(const float* p, size_t n, const char* name, bool optional) {
  if (p == nullptr) {
    if (optional) return FOLDCP_OK;
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "%s is NULL: it is required (%zu floats)", name, n);
  }
  for (size_t k = 0; k < n; ++k)
    if (!std::isfinite(p[k]))
      return fail(FOLDCP_ERR_INVALID_ARGUMENT, "%s[%zu] = %g: weights must be finite", name, k, (double)p[k]);
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

__global__ void f32_to_bf16_kernel(const float* __restrict__ src, __nv_bfloat16* __restrict__ dst, size_t n) {
  for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
    dst[k] = __float2bfloat16_rn(src[k]);
}

// The layer's weights, converted to bf16 on the device.
cudaError_t launch_f32_to_bf16(const float* src, void* dst, size_t n, cudaStream_t s) {
  const unsigned blocks = (unsigned)std::min<size_t>((n + 255) / 256, 4096);
  f32_to_bf16_kernel<<<blocks, 256, 0, s>>>(src, static_cast<__nv_bfloat16*>(dst), n);
  return cudaGetLastError();
}

int check_device_ptr(const void* p, const char* name) {
  if (!is_device_ptr(p))
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "%s = %p is not device memory: the forward takes device pointers (cudaMalloc)", name, p);
  return FOLDCP_OK;
}

}  // namespace

namespace foldcp {
const DevLayer* dev_layer(const foldcp_trimul_layer* layer, int* device) {
  if (layer == nullptr) return nullptr;
  if (device) *device = layer->device;
  return &layer->dl;
}

int set_error(int status, const std::string& message) {
  g_err = message;
  return status;
}
void clear_error() { g_err.clear(); }
}  // namespace foldcp

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

double foldcp_trimul_flops(int64_t B, int64_t N, int64_t D) {
  const double b = (double)B, n = (double)N, d = (double)D;
  return 2.0 * b * n * n * n * d + 12.0 * b * n * n * d * d;
}

int foldcp_trimul_check_shape(int64_t B, int64_t N, int64_t D) {
  g_err.clear();
  return check_shape(B, N, D);
}

int foldcp_trimul_workspace_size(int64_t B, int64_t N, int64_t D, size_t* bytes) {
  g_err.clear();
  if (bytes == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "bytes is NULL: pass where to store the size");
  if (int st = check_shape(B, N, D)) return st;
  *bytes = foldcp::ws_layout(B, N, D).total;
  return FOLDCP_OK;
}

int foldcp_trimul_workspace_size_group(int64_t B, int64_t N, int64_t D, int64_t group, size_t* bytes) {
  g_err.clear();
  if (bytes == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "bytes is NULL: pass where to store the size");
  if (int st = check_shape(B, N, D)) return st;
  if (int st = check_group(D, group)) return st;
  *bytes = foldcp::ws_layout(B, N, D, group).total;
  return FOLDCP_OK;
}

int foldcp_trimul_channel_group(int64_t B, int64_t N, int64_t D, size_t bytes_available, int64_t* group) {
  g_err.clear();
  if (group == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "group is NULL: pass where to store the group");
  if (int st = check_shape(B, N, D)) return st;
  for (int64_t g = D; g >= 32; g -= 32) {
    if (foldcp::ws_layout(B, N, D, g).total <= bytes_available) {
      *group = g;
      return FOLDCP_OK;
    }
  }
  return fail(FOLDCP_ERR_OUT_OF_MEMORY,
              "(B, N, D) = (%lld, %lld, %lld) needs a workspace of at least %zu bytes (z for all channels plus a and b "
              "for a group of 32), but %zu bytes are available",
              (long long)B, (long long)N, (long long)D, foldcp::ws_layout(B, N, D, 32).total, bytes_available);
}

int foldcp_trimul_debug_workspace(int64_t B, int64_t N, int64_t D, void* workspace, void** a_ws, void** b_ws,
                                  foldcp::bf16_raw** z_ws, int64_t* np, int64_t* sab, int64_t* sz) {
  if (int st = check_shape(B, N, D)) return st;
  const foldcp::WsLayout l = foldcp::ws_layout(B, N, D);
  char* w = static_cast<char*>(workspace);
  *a_ws = w + l.a_off;
  *b_ws = w + l.b_off;
  *z_ws = reinterpret_cast<foldcp::bf16_raw*>(w + l.z_off);
  *np = l.np;
  *sab = l.sab;
  *sz = l.sz;
  return FOLDCP_OK;
}

int foldcp_trimul_create(const foldcp_trimul_weights* w, foldcp_trimul_layer** layer) {
  g_err.clear();
  if (layer == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "layer is NULL: pass where to store the new layer");
  *layer = nullptr;
  if (w == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "weights is NULL");
  const int64_t D = w->dim;
  if (D < 32 || D > 256 || D % 32 != 0)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT,
                "D = %lld is not supported: the tensor-core kernels need D to be a multiple of 32 in [32, 256]",
                (long long)D);
  if (w->direction != FOLDCP_OUTGOING && w->direction != FOLDCP_INCOMING)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "direction = %d: must be 0 (outgoing) or 1 (incoming)", w->direction);
  if (!(w->eps > 0.f) || !std::isfinite(w->eps))
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "eps = %g: the LayerNorm eps must be finite and > 0", (double)w->eps);
  const size_t d = (size_t)D;
  if (int st = check_vec(w->norm_in_weight, d, "norm_in.weight", false)) return st;
  if (int st = check_vec(w->norm_in_bias, d, "norm_in.bias", false)) return st;
  if (int st = check_vec(w->p_in_weight, 2 * d * d, "p_in.weight", false)) return st;
  if (int st = check_vec(w->g_in_weight, 2 * d * d, "g_in.weight", false)) return st;
  if (int st = check_vec(w->norm_out_weight, d, "norm_out.weight", false)) return st;
  if (int st = check_vec(w->norm_out_bias, d, "norm_out.bias", false)) return st;
  if (int st = check_vec(w->p_out_weight, d * d, "p_out.weight", false)) return st;
  if (int st = check_vec(w->g_out_weight, d * d, "g_out.weight", false)) return st;
  if (int st = check_vec(w->p_in_bias, 2 * d, "p_in.bias", true)) return st;
  if (int st = check_vec(w->g_in_bias, 2 * d, "g_in.bias", true)) return st;
  if (int st = check_vec(w->p_out_bias, d, "p_out.bias", true)) return st;
  if (int st = check_vec(w->g_out_bias, d, "g_out.bias", true)) return st;

  int dev = -1;
  {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
      cudaGetLastError();
      return fail(FOLDCP_ERR_UNSUPPORTED_DEVICE, "no CUDA device is usable: %s",
                  e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
    }
  }
  CK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, dev));
  if (prop.major != 9 || prop.minor != 0)
    return fail(FOLDCP_ERR_UNSUPPORTED_DEVICE,
                "device %d (%s) is sm_%d%d: this library is built for sm_90a (Hopper: H100/H200) only", dev,
                prop.name, prop.major, prop.minor);
  CK(foldcp::prepare_proj_in((int)D));
  CK(foldcp::prepare_proj_out((int)D));

  // Rearranged fp32 copies on the host; converted to bf16 on the device.
  std::vector<float> win(4 * d * d), wout(2 * d * d), vecs(10 * d, 0.f);
  for (size_t grp = 0; grp < d / 8; ++grp) {
    for (size_t r = 0; r < 8; ++r) {
      const size_t c = grp * 8 + r;
      for (size_t k = 0; k < d; ++k) {
        win[((grp * 32) + r) * d + k] = w->p_in_weight[c * d + k];
        win[((grp * 32) + 8 + r) * d + k] = w->g_in_weight[c * d + k];
        win[((grp * 32) + 16 + r) * d + k] = w->p_in_weight[(d + c) * d + k];
        win[((grp * 32) + 24 + r) * d + k] = w->g_in_weight[(d + c) * d + k];
        wout[((grp * 16) + r) * d + k] = w->p_out_weight[c * d + k];
        wout[((grp * 16) + 8 + r) * d + k] = w->g_out_weight[c * d + k];
      }
    }
  }
  auto put = [&](size_t off, const float* src, size_t n) {
    if (src)
      for (size_t k = 0; k < n; ++k) vecs[off + k] = src[k];
  };
  put(0 * d, w->norm_in_weight, d);
  put(1 * d, w->norm_in_bias, d);
  put(2 * d, w->norm_out_weight, d);
  put(3 * d, w->norm_out_bias, d);
  put(4 * d, w->p_in_bias, 2 * d);
  put(6 * d, w->g_in_bias, 2 * d);
  put(8 * d, w->p_out_bias, d);
  put(9 * d, w->g_out_bias, d);

  foldcp_trimul_layer* L = new foldcp_trimul_layer();
  L->device = dev;
  float* tmp = nullptr;
  auto cleanup = [&]() {
    if (tmp) cudaFree(tmp);
    foldcp_trimul_destroy(L);
  };
#define CKC(call)                                  \
  do {                                             \
    cudaError_t e_ = (call);                       \
    if (e_ != cudaSuccess) {                       \
      int st_ = cuda_fail(e_, #call, __LINE__);    \
      std::string m_ = g_err;                      \
      cleanup();                                   \
      g_err = m_;                                  \
      return st_;                                  \
    }                                              \
  } while (0)
  CKC(cudaMalloc(&L->w_in, win.size() * 2));
  CKC(cudaMalloc(&L->w_out, wout.size() * 2));
  CKC(cudaMalloc(&L->vecs, vecs.size() * 4));
  CKC(cudaMalloc(&tmp, win.size() * 4));
  CKC(cudaMemcpy(L->vecs, vecs.data(), vecs.size() * 4, cudaMemcpyHostToDevice));
  CKC(cudaMemcpy(tmp, win.data(), win.size() * 4, cudaMemcpyHostToDevice));
  CKC(launch_f32_to_bf16(tmp, L->w_in, win.size(), 0));
  CKC(cudaDeviceSynchronize());
  CKC(cudaMemcpy(tmp, wout.data(), wout.size() * 4, cudaMemcpyHostToDevice));
  CKC(launch_f32_to_bf16(tmp, L->w_out, wout.size(), 0));
  CKC(cudaDeviceSynchronize());
  CKC(cudaFree(tmp));
  tmp = nullptr;
#undef CKC

  foldcp::DevLayer& dl = L->dl;
  dl.dim = (int)D;
  dl.direction = w->direction;
  dl.residual = w->residual ? 1 : 0;
  dl.eps = w->eps;
  dl.w_in = L->w_in;
  dl.w_out = L->w_out;
  dl.ln_in_w = L->vecs + 0 * d;
  dl.ln_in_b = L->vecs + 1 * d;
  dl.ln_out_w = L->vecs + 2 * d;
  dl.ln_out_b = L->vecs + 3 * d;
  dl.p_in_b = L->vecs + 4 * d;
  dl.g_in_b = L->vecs + 6 * d;
  dl.p_out_b = L->vecs + 8 * d;
  dl.g_out_b = L->vecs + 9 * d;
  *layer = L;
  return FOLDCP_OK;
}

int foldcp_trimul_destroy(foldcp_trimul_layer* L) {
  if (L == nullptr) return FOLDCP_OK;
  int prev = -1;
  const bool have_prev = cudaGetDevice(&prev) == cudaSuccess;
  if (L->device >= 0) cudaSetDevice(L->device);
  cudaError_t e = cudaSuccess;
  for (void* p : {L->w_in, L->w_out, (void*)L->vecs}) {
    if (p) {
      cudaError_t e2 = cudaFree(p);
      if (e == cudaSuccess) e = e2;
    }
  }
  if (have_prev) cudaSetDevice(prev);
  delete L;
  if (e != cudaSuccess) return cuda_fail(e, "cudaFree(layer weights)", __LINE__);
  return FOLDCP_OK;
}

int foldcp_trimul_layer_info(const foldcp_trimul_layer* L, int64_t* dim, int* direction, int* residual) {
  g_err.clear();
  if (L == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "layer is NULL");
  if (dim) *dim = L->dl.dim;
  if (direction) *direction = L->dl.direction;
  if (residual) *residual = L->dl.residual;
  return FOLDCP_OK;
}

static int forward_impl(const foldcp_trimul_layer* L, const void* x, const uint8_t* mask, void* out, int64_t B,
                        int64_t N, void* ws, size_t ws_bytes, int64_t group, foldcp_stream_t stream,
                        float* stage_ms) {
  g_err.clear();
  if (L == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "layer is NULL");
  const int64_t D = L->dl.dim;
  if (int st = check_shape(B, N, D)) return st;
  if (group == 0) group = D;
  if (int st = check_group(D, group)) return st;
  if (x == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "x is NULL");
  if (out == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "out is NULL");
  if (ws == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "workspace is NULL");
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "x = %p is not 16-byte aligned: x must be 16-byte aligned", x);
  if (reinterpret_cast<uintptr_t>(out) % 16 != 0)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "out = %p is not 16-byte aligned: out must be 16-byte aligned", out);
  if (reinterpret_cast<uintptr_t>(ws) % 256 != 0)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "workspace = %p is not 256-byte aligned: it must be", ws);
  const foldcp::WsLayout l = foldcp::ws_layout(B, N, D, group);
  if (ws_bytes < l.total)
    return fail(FOLDCP_ERR_WORKSPACE_TOO_SMALL,
                "workspace_bytes = %zu is too small: (B, N, D) = (%lld, %lld, %lld) with channel group %lld needs %zu "
                "bytes (foldcp_trimul_workspace_size_group)",
                ws_bytes, (long long)B, (long long)N, (long long)D, (long long)group, l.total);
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
  CK(cudaGetDevice(&dev));
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

  // Stages 1 and 2 once per channel group (a and b of `group` channels in the workspace, z of
  // all channels), then stage 3 over all channels. Profiled: events around every launch, the
  // times of a stage summed over the groups.
  const int64_t ngroups = (D + group - 1) / group;
  const int nev = stage_ms ? (int)(2 * ngroups + 2) : 0;
  std::vector<cudaEvent_t> ev(nev, nullptr);
  int st = FOLDCP_OK;
  auto step = [&](cudaError_t e, const char* what, int line) {
    if (st == FOLDCP_OK && e != cudaSuccess) st = cuda_fail(e, what, line);
  };
  for (int k = 0; k < nev && st == FOLDCP_OK; ++k) step(cudaEventCreate(&ev[k]), "cudaEventCreate", __LINE__);
  int evk = 0;
  auto mark = [&]() {
    if (stage_ms && st == FOLDCP_OK) step(cudaEventRecord(ev[evk++], s), "cudaEventRecord", __LINE__);
  };
  mark();
  for (int64_t c0 = 0; c0 < D && st == FOLDCP_OK; c0 += group) {
    const int gc = (int)std::min<int64_t>(group, D - c0);
    step(foldcp::launch_proj_in(L->dl, x, mask, a_ws, b_ws, B, N, l.sab, (int)c0, gc, s),
         "launch of stage 1 (LN_in + projection)", __LINE__);
    mark();
    if (st == FOLDCP_OK)
      step(foldcp::launch_tri_gemm(L->dl, a_ws, b_ws, z, B, N, l.sab, l.sz, (int)c0, gc, s),
           "launch of stage 2 (triangle GEMM)", __LINE__);
    mark();
  }
  if (st == FOLDCP_OK)
    step(foldcp::launch_proj_out(L->dl, x, z, out, B, N, l.sz, s), "launch of stage 3 (LN_out + output projection)",
         __LINE__);
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

int foldcp_trimul_forward(const foldcp_trimul_layer* layer, const void* x, const uint8_t* mask, void* out, int64_t B,
                          int64_t N, void* workspace, size_t workspace_bytes, foldcp_stream_t stream) {
  return forward_impl(layer, x, mask, out, B, N, workspace, workspace_bytes, 0, stream, nullptr);
}

int foldcp_trimul_forward_group(const foldcp_trimul_layer* layer, const void* x, const uint8_t* mask, void* out,
                                int64_t B, int64_t N, void* workspace, size_t workspace_bytes, int64_t group,
                                foldcp_stream_t stream) {
  return forward_impl(layer, x, mask, out, B, N, workspace, workspace_bytes, group, stream, nullptr);
}

int foldcp_trimul_forward_profiled(const foldcp_trimul_layer* layer, const void* x, const uint8_t* mask, void* out,
                                   int64_t B, int64_t N, void* workspace, size_t workspace_bytes,
                                   foldcp_stream_t stream, float stage_ms[3]) {
  if (stage_ms == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "stage_ms is NULL: pass a float[3]");
  return forward_impl(layer, x, mask, out, B, N, workspace, workspace_bytes, 0, stream, stage_ms);
}

}  // extern "C"
