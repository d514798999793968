// Layers of the single-GPU C API (include/foldcp_trimul.h): weight checks with messages that
// name the value and the rule, the interleaving of the projection weights per group of 8
// channels (what the kernels' chunks expect), upload and conversion to bf16 on the device.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include "trimul_api.h"

using foldcp::api::cuda_fail;
using foldcp::api::fail;

namespace {

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

}  // namespace

namespace foldcp {
const DevLayer* dev_layer(const foldcp_trimul_layer* layer, int* device) {
  if (layer == nullptr) return nullptr;
  if (device) *device = layer->device;
  return &layer->dl;
}
}  // namespace foldcp

extern "C" {

int foldcp_trimul_create(const foldcp_trimul_weights* w, foldcp_trimul_layer** layer) {
  foldcp::clear_error();
  if (layer == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "layer is NULL: pass where to store the new layer");
  *layer = nullptr;
  if (w == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "weights is NULL");
  const int64_t D = w->dim, H = w->hidden == 0 ? w->dim : w->hidden;
  if (int st = foldcp::api::check_dims(D, H)) return st;
  if (w->direction != FOLDCP_OUTGOING && w->direction != FOLDCP_INCOMING)
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "direction = %d: must be 0 (outgoing) or 1 (incoming)", w->direction);
  if (!(w->eps > 0.f) || !std::isfinite(w->eps))
    return fail(FOLDCP_ERR_INVALID_ARGUMENT, "eps = %g: the LayerNorm eps must be finite and > 0", (double)w->eps);
  const size_t d = (size_t)D, h = (size_t)H;
  if (int st = check_vec(w->norm_in_weight, d, "norm_in.weight", false)) return st;
  if (int st = check_vec(w->norm_in_bias, d, "norm_in.bias", false)) return st;
  if (int st = check_vec(w->p_in_weight, 2 * h * d, "p_in.weight", false)) return st;
  if (int st = check_vec(w->g_in_weight, 2 * h * d, "g_in.weight", false)) return st;
  if (int st = check_vec(w->norm_out_weight, h, "norm_out.weight", false)) return st;
  if (int st = check_vec(w->norm_out_bias, h, "norm_out.bias", false)) return st;
  if (int st = check_vec(w->p_out_weight, d * h, "p_out.weight", false)) return st;
  if (int st = check_vec(w->g_out_weight, d * d, "g_out.weight", false)) return st;
  if (int st = check_vec(w->p_in_bias, 2 * h, "p_in.bias", true)) return st;
  if (int st = check_vec(w->g_in_bias, 2 * h, "g_in.bias", true)) return st;
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
  FOLDCP_CK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  FOLDCP_CK(cudaGetDeviceProperties(&prop, dev));
  if (prop.major != 9 || prop.minor != 0)
    return fail(FOLDCP_ERR_UNSUPPORTED_DEVICE,
                "device %d (%s) is sm_%d%d: this library is built for sm_90a (Hopper: H100/H200) only", dev,
                prop.name, prop.major, prop.minor);
  FOLDCP_CK(foldcp::prepare_proj_in((int)D));
  FOLDCP_CK(foldcp::prepare_proj_out((int)D, (int)H));

  // Rearranged fp32 copies on the host; converted to bf16 on the device. W1 [4H][D]: per group of
  // 8 hidden channels the rows of p_a, g_a, p_b, g_b. W3 [2D][max(D, H)]: per group of 8 output
  // channels the rows of p_out (K = H) and g_out (K = D), zero past their K; for a split pair (proj_out_split), whose
  // two stage 3 kernels read one matrix each, p_out [D][H] then g_out [D][D] as given.
  const bool split = foldcp::proj_out_split((int)D, (int)H);
  const size_t kw = std::max(d, h);
  std::vector<float> win(4 * h * d), wout(split ? d * h + d * d : 2 * d * kw, 0.f), vecs(4 * d + 6 * h, 0.f);
  for (size_t grp = 0; grp < h / 8; ++grp) {
    for (size_t r = 0; r < 8; ++r) {
      const size_t c = grp * 8 + r;
      for (size_t k = 0; k < d; ++k) {
        win[((grp * 32) + r) * d + k] = w->p_in_weight[c * d + k];
        win[((grp * 32) + 8 + r) * d + k] = w->g_in_weight[c * d + k];
        win[((grp * 32) + 16 + r) * d + k] = w->p_in_weight[(h + c) * d + k];
        win[((grp * 32) + 24 + r) * d + k] = w->g_in_weight[(h + c) * d + k];
      }
    }
  }
  if (split) {
    std::copy(w->p_out_weight, w->p_out_weight + d * h, wout.begin());
    std::copy(w->g_out_weight, w->g_out_weight + d * d, wout.begin() + d * h);
  } else {
    for (size_t grp = 0; grp < d / 8; ++grp) {
      for (size_t r = 0; r < 8; ++r) {
        const size_t c = grp * 8 + r;
        for (size_t k = 0; k < h; ++k) wout[((grp * 16) + r) * kw + k] = w->p_out_weight[c * h + k];
        for (size_t k = 0; k < d; ++k) wout[((grp * 16) + 8 + r) * kw + k] = w->g_out_weight[c * d + k];
      }
    }
  }
  // The fp32 vectors: LN_in w, b (D each), LN_out w, b (H each), p_in, g_in biases (2H each),
  // p_out, g_out biases (D each).
  size_t off = 0;
  auto put = [&](const float* src, size_t n) {  // returns where src went; absent = zeros
    const size_t at = off;
    if (src) std::copy(src, src + n, vecs.begin() + at);
    off += n;
    return at;
  };
  const size_t o_lniw = put(w->norm_in_weight, d), o_lnib = put(w->norm_in_bias, d);
  const size_t o_lnow = put(w->norm_out_weight, h), o_lnob = put(w->norm_out_bias, h);
  const size_t o_pin = put(w->p_in_bias, 2 * h), o_gin = put(w->g_in_bias, 2 * h);
  const size_t o_pout = put(w->p_out_bias, d), o_gout = put(w->g_out_bias, d);

  foldcp_trimul_layer* L = new foldcp_trimul_layer();
  L->device = dev;
  float* tmp = nullptr;
  auto cleanup = [&]() {
    if (tmp) cudaFree(tmp);
    foldcp_trimul_destroy(L);
  };
  // As FOLDCP_CK, but frees what was made so far first (keeping the failed call's message).
#define CKC(call)                                             \
  do {                                                        \
    cudaError_t e_ = (call);                                  \
    if (e_ != cudaSuccess) {                                  \
      int st_ = cuda_fail(e_, #call, __FILE__, __LINE__);     \
      std::string m_ = foldcp_last_error();                   \
      cleanup();                                              \
      return foldcp::set_error(st_, m_);                      \
    }                                                         \
  } while (0)
  CKC(cudaMalloc(&L->w_in, win.size() * 2));
  CKC(cudaMalloc(&L->w_out, wout.size() * 2));
  CKC(cudaMalloc(&L->vecs, vecs.size() * 4));
  CKC(cudaMalloc(&tmp, std::max(win.size(), wout.size()) * 4));  // the staging of both
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
  dl.hidden = (int)H;
  dl.direction = w->direction;
  dl.residual = w->residual ? 1 : 0;
  dl.eps = w->eps;
  dl.w_in = L->w_in;
  dl.w_out = L->w_out;
  dl.ln_in_w = L->vecs + o_lniw;
  dl.ln_in_b = L->vecs + o_lnib;
  dl.ln_out_w = L->vecs + o_lnow;
  dl.ln_out_b = L->vecs + o_lnob;
  dl.p_in_b = L->vecs + o_pin;
  dl.g_in_b = L->vecs + o_gin;
  dl.p_out_b = L->vecs + o_pout;
  dl.g_out_b = L->vecs + o_gout;
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
  if (e != cudaSuccess) return cuda_fail(e, "cudaFree(layer weights)", __FILE__, __LINE__);
  return FOLDCP_OK;
}
int foldcp_trimul_layer_info(const foldcp_trimul_layer* L, int64_t* dim, int64_t* hidden, int* direction,
                             int* residual) {
  foldcp::clear_error();
  if (L == nullptr) return fail(FOLDCP_ERR_INVALID_ARGUMENT, "layer is NULL");
  if (dim) *dim = L->dl.dim;
  if (hidden) *hidden = L->dl.hidden;
  if (direction) *direction = L->dl.direction;
  if (residual) *residual = L->dl.residual;
  return FOLDCP_OK;
}
}  // extern "C"
