// Test and benchmark of the wgmma projection kernels (src/stage1_proj_in.cu, src/stage3_proj_out.cu)
// against the mma.sync ones (tests/proj_mma_oracle.cu: launch_proj_in_mma_to,
// launch_proj_out_mma_tile) and a float64 CPU reference.
// For each case: random bf16 x (device-generated), random weights, a mask with about 12% zeros
// plus an all-zero row and an all-zero column; output buffers poisoned with 0xFF bytes (bf16 NaN);
// both kernels run on the same inputs into their own buffers; then
//   - new vs old over the whole output buffers: the same elements written (poison pattern equal),
//     nothing non-finite, max |new - old| / max |old| <= 1e-2 (expect a few bf16 ulps: both round
//     the same fp32 values, summed in another order); max |diff|, differing elements and the
//     largest difference in bf16 ulps are printed;
//   - every element the contract says is written is written (no poison left);
//   - sampled tokens against float64 (LayerNorm, projections, gates from the same bf16 inputs and
//     weights): ||new - ref|| / ||ref|| <= 1e-2 over the samples, and exact zeros for invalid tokens.
// Stage 1 cases: D in {32, 64, 96, 128, 192, 224, 256}, N in {100, 1000} (not multiples of 128),
// B = 1 and 2, one destination (the single-GPU workspace: Np x Np planes, zeros outside N) and a
// 2 x 2 grid of destinations (the CP store: one rank's tile, channels split over 4 owners).
// Stage 3 cases: the same D, N, B plus odd N (the last token pair of a row half valid); z
// channel-major bf16 as the workspace holds it (N rows of Np, padded planes) or as a CP tile
// (rows = cols = ldz = 72, and 70, whose rows are not 16-byte aligned: z then comes from global
// memory instead of by TMA); the wide kernel (stage3_wide.cuh) at D = H = 384 and the split pair's
// two kernels (stage3_split.cuh) at 480 and 512, as CP tiles, checked against themselves on z re-laid with rows of the other alignment (no
// mma.sync oracle there): the TMA and global-memory LN_out paths must agree bit for bit, with p
// in a buffer of its own and in out; residual on and off; every case also
// runs in place (out == x) and must equal its out-of-place output bit for bit.
// The projections do not depend on the direction (stage 1 stores the same channel-major layout
// for both, stage 3 reads z the same way), so each case runs once.
// Then median time of 20 runs (after 3 warm-ups) of each kernel at (1, 4096, 256) and (1, 2048, 128).
// Usage: proj_wgmma_test [--quick] [--no-bench] [--bench-only] [--stage 1|3|both]
// Exit status: 0 all PASS, 1 a check failed, 2 a CUDA error, 3 a kernel hung (host watchdog).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>  // _exit
#include <vector>

#include "mma_oracles.h"
#include "trimul_internal.h"

static_assert(sizeof(foldcp::bf16_raw) == 2, "bf16 storage");

#define CUDA_OK(call)                                                                                         \
  do {                                                                                                        \
    cudaError_t e_ = (call);                                                                                  \
    if (e_ != cudaSuccess) {                                                                                  \
      printf("FAIL: CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, #call);          \
      fflush(stdout);                                                                                         \
      _exit(2);                                                                                               \
    }                                                                                                         \
  } while (0)

// ------------------------------------------------------------------ values
__host__ __device__ inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
// Uniform in [-1, 1) from (seed, index).
__host__ __device__ inline float hash_uniform(uint32_t seed, uint64_t k) {
  const uint32_t h = mix32(seed * 0x9E3779B1u ^ mix32((uint32_t)k ^ mix32((uint32_t)(k >> 32) + 0x27D4EB2Fu)));
  return (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
}
static uint16_t f2bf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static double bf2d(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return (double)f;
}

__global__ void fill_bf16(uint16_t* p, size_t n, uint32_t seed, float scale, float offset) {
  for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
    const float v = offset + scale * hash_uniform(seed, k);
    __nv_bfloat16 b = __float2bfloat16_rn(v);
    p[k] = *reinterpret_cast<uint16_t*>(&b);
  }
}
// (B, rows, cols) mask: about 12% zeros, plus row 3 and column 5 all zero (when they exist).
__global__ void fill_mask(uint8_t* m, int64_t B, int64_t rows, int64_t cols, uint32_t seed) {
  const int64_t n = B * rows * cols;
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = (k / cols) % rows, c = k % cols;
    m[k] = (r == 3 || c == 5 || hash_uniform(seed, (uint64_t)k) < -0.76f) ? 0 : 1;
  }
}

// ------------------------------------------------------------------ device-side comparisons
struct CmpStats {
  unsigned int max_diff;  // float bits (non-negative floats order like their bits)
  unsigned int max_ref;
  unsigned int max_ulp;
  unsigned int pad;
  unsigned long long n_diff;            // elements whose bits differ (both written)
  unsigned long long written_mismatch;  // NaN (poison) in one buffer, not in the other
  unsigned long long nonfinite;         // written but inf
};
__device__ inline float bf_to_f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
__global__ void compare_bf16(const uint16_t* x, const uint16_t* y, size_t n, CmpStats* st) {
  float md = 0.f, mr = 0.f;
  unsigned int mu = 0;
  unsigned long long nd = 0, mm = 0, nf = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float a = bf_to_f(x[i]), b = bf_to_f(y[i]);
    const bool na = isnan(a), nb = isnan(b);
    if (na != nb) {
      ++mm;
    } else if (!na) {
      if (!isfinite(a) || !isfinite(b)) {
        ++nf;
      } else if (x[i] != y[i]) {
        ++nd;
        md = fmaxf(md, fabsf(a - b));
        // ulps between two bf16 values: distance of their order-preserving integer images
        const int ia = (x[i] & 0x8000) ? -(int)(x[i] & 0x7fff) : (int)x[i];
        const int ib = (y[i] & 0x8000) ? -(int)(y[i] & 0x7fff) : (int)y[i];
        mu = max(mu, (unsigned int)abs(ia - ib));
      }
      if (isfinite(b)) mr = fmaxf(mr, fabsf(b));
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    md = fmaxf(md, __shfl_xor_sync(0xffffffffu, md, o));
    mr = fmaxf(mr, __shfl_xor_sync(0xffffffffu, mr, o));
    mu = max(mu, __shfl_xor_sync(0xffffffffu, mu, o));
    nd += __shfl_xor_sync(0xffffffffu, nd, o);
    mm += __shfl_xor_sync(0xffffffffu, mm, o);
    nf += __shfl_xor_sync(0xffffffffu, nf, o);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicMax(&st->max_diff, __float_as_uint(md));
    atomicMax(&st->max_ref, __float_as_uint(mr));
    atomicMax(&st->max_ulp, mu);
    if (nd) atomicAdd(&st->n_diff, nd);
    if (mm) atomicAdd(&st->written_mismatch, mm);
    if (nf) atomicAdd(&st->nonfinite, nf);
  }
}
// Non-finite (unwritten = NaN poison) bf16 elements of the region [planes][r0, r0 + rows)[c0, c0 + cols)
// of planes of row stride ld and plane stride ps.
__global__ void count_bad_bf16(const uint16_t* p, int64_t planes, int64_t ps, int64_t ld, int64_t r0, int64_t rows,
                               int64_t c0, int64_t cols, unsigned long long* cnt) {
  unsigned long long c = 0;
  const int64_t total = planes * rows * cols;
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < total; k += (int64_t)gridDim.x * blockDim.x) {
    const int64_t pl = k / (rows * cols), rem = k - pl * rows * cols, r = rem / cols, col = rem - r * cols;
    if (!isfinite(bf_to_f(p[pl * ps + (r0 + r) * ld + c0 + col]))) ++c;
  }
  for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(cnt, c);
}

// out[s][ab][c] = a (ab 0) or b (ab 1) of channel c of tile token (b, i, k) = smp[s] (AbTarget layout).
__global__ void gather_ab(const foldcp::AbTarget t, const int64_t* smp, int ns, int D, uint16_t* out) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < ns * 2 * D; k += gridDim.x * blockDim.x) {
    const int s = k / (2 * D), ab = (k / D) % 2, c = k % D;
    const int64_t b = smp[3 * s], i = smp[3 * s + 1], col = smp[3 * s + 2];
    const int q = c / t.dloc, cl = c % t.dloc;
    const uint16_t* base = ab ? t.b[q] : t.a[q];
    out[k] = base[(b * t.dloc + cl) * t.plane[q] + (t.row0[q] + i) * t.ld[q] + t.col0[q] + col];
  }
}

// out[s][c] = z of channel c of token (b, i, j) = smp[s] (planes (b, c) of stride sz, rows of ldz).
__global__ void gather_z(const uint16_t* z, const int64_t* smp, int ns, int D, int64_t ldz, int64_t sz, float* out) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < ns * D; k += gridDim.x * blockDim.x) {
    const int s = k / D, c = k % D;
    out[k] = __uint_as_float((uint32_t)z[(smp[3 * s] * D + c) * sz + smp[3 * s + 1] * ldz + smp[3 * s + 2]] << 16);
  }
}

// Sets column `col` of every row of every plane to bf16 NaN.
__global__ void poison_column(uint16_t* z, int64_t planes, int64_t rows, int64_t ldz, int64_t sz, int64_t col) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < planes * rows; k += (int64_t)gridDim.x * blockDim.x)
    z[(k / rows) * sz + (k % rows) * ldz + col] = 0xFFFF;
}

// Waits for the stream with a time limit: a hung kernel ends the test with a message instead of
// eating the whole device call.
static void sync_or_die(cudaStream_t s, double seconds, const std::string& what) {
  cudaEvent_t ev;
  CUDA_OK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CUDA_OK(cudaEventRecord(ev, s));
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady) {
      printf("FAIL: %s: %s (%s)\n", what.c_str(), cudaGetErrorName(e), cudaGetErrorString(e));
      fflush(stdout);
      _exit(2);
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > seconds) {
      printf("FAIL: %s: no completion after %.0f s (hang?)\n", what.c_str(), seconds);
      fflush(stdout);
      _exit(3);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  CUDA_OK(cudaEventDestroy(ev));
}

static int g_failures = 0;
static void verdict(bool ok, const std::string& line) {
  printf("%s: %s\n", ok ? "PASS" : "FAIL", line.c_str());
  fflush(stdout);
  if (!ok) ++g_failures;
}

static void launch_fill(uint16_t* p, size_t n, uint32_t seed, float scale, float offset, cudaStream_t s) {
  fill_bf16<<<2048, 256, 0, s>>>(p, n, seed, scale, offset);
  CUDA_OK(cudaGetLastError());
}

// ------------------------------------------------------------------ a layer's weights
// The kernels see W1 [4D][D] and W3 [2D][D] already interleaved (trimul_layer.cu does that from
// the torch layout): W1 rows per group of 8 channels: p_a, g_a, p_b, g_b; W3: p_out, g_out (a
// split pair's W3 is p_out then g_out, relaid below).
struct Layer {
  int D = 0;
  std::vector<uint16_t> w1, w3;                             // bf16 bits, interleaved
  std::vector<float> lniw, lnib, lnow, lnob, pinb, ginb, poutb, goutb;
  void* d_w1 = nullptr;
  void* d_w3 = nullptr;
  float* d_vec = nullptr;
  foldcp::DevLayer dl{};

  static int row_in(int c, int kind) { return (c / 8) * 32 + kind * 8 + c % 8; }  // kind: 0 p_a, 1 g_a, 2 p_b, 3 g_b
  static int row_out(int c, int kind) { return (c / 8) * 16 + kind * 8 + c % 8; }  // kind: 0 p_out, 1 g_out

  void make(int d, uint32_t seed, int residual) {
    D = d;
    uint32_t k = 0;
    auto u = [&]() { return hash_uniform(seed, k++); };
    const float s = 1.0f / std::sqrt((float)d);
    w1.resize((size_t)4 * d * d);
    w3.resize((size_t)2 * d * d);
    for (auto& v : w1) v = f2bf(s * u());
    for (auto& v : w3) v = f2bf(s * u());
    auto vec = [&](std::vector<float>& v, size_t n, float scale, float off) {
      v.resize(n);
      for (auto& e : v) e = off + scale * u();
    };
    vec(lniw, d, 0.3f, 1.0f);
    vec(lnib, d, 0.3f, 0.0f);
    vec(lnow, d, 0.3f, 1.0f);
    vec(lnob, d, 0.3f, 0.0f);
    vec(pinb, 2 * d, 0.3f, 0.0f);
    vec(ginb, 2 * d, 0.3f, 0.0f);
    vec(poutb, d, 0.3f, 0.0f);
    vec(goutb, d, 0.3f, 0.0f);
    CUDA_OK(cudaMalloc(&d_w1, w1.size() * 2));
    CUDA_OK(cudaMalloc(&d_w3, w3.size() * 2));
    CUDA_OK(cudaMemcpy(d_w1, w1.data(), w1.size() * 2, cudaMemcpyHostToDevice));
    if (foldcp::proj_out_split(d, d)) {
      // a split pair's stage 3 reads p_out [D][H] then g_out [D][D] (trimul_layer.cu)
      std::vector<uint16_t> w3s(w3.size());
      for (int c = 0; c < d; ++c)
        for (int kind = 0; kind < 2; ++kind)
          std::copy_n(w3.begin() + (size_t)row_out(c, kind) * d, d, w3s.begin() + ((size_t)kind * d + c) * d);
      CUDA_OK(cudaMemcpy(d_w3, w3s.data(), w3s.size() * 2, cudaMemcpyHostToDevice));
    } else {
      CUDA_OK(cudaMemcpy(d_w3, w3.data(), w3.size() * 2, cudaMemcpyHostToDevice));
    }
    std::vector<float> all;
    for (const auto* v : {&lniw, &lnib, &lnow, &lnob, &pinb, &ginb, &poutb, &goutb}) all.insert(all.end(), v->begin(), v->end());
    CUDA_OK(cudaMalloc(&d_vec, all.size() * 4));
    CUDA_OK(cudaMemcpy(d_vec, all.data(), all.size() * 4, cudaMemcpyHostToDevice));
    dl = foldcp::DevLayer{};
    dl.dim = d;
    dl.hidden = d;  // the stage kernels here run at H = D (trimul_test covers H != D)
    dl.direction = 0;
    dl.residual = residual;
    dl.eps = 1e-5f;
    dl.w_in = d_w1;
    dl.w_out = d_w3;
    dl.ln_in_w = d_vec;
    dl.ln_in_b = d_vec + d;
    dl.ln_out_w = d_vec + 2 * d;
    dl.ln_out_b = d_vec + 3 * d;
    dl.p_in_b = d_vec + 4 * d;
    dl.g_in_b = d_vec + 6 * d;
    dl.p_out_b = d_vec + 8 * d;
    dl.g_out_b = d_vec + 9 * d;
  }
  void free_all() {
    CUDA_OK(cudaFree(d_w1));
    CUDA_OK(cudaFree(d_w3));
    CUDA_OK(cudaFree(d_vec));
  }
  // float64 LayerNorm of one token (same formula as the kernels, without their bf16 rounding).
  static void layernorm(const double* v, int D, const std::vector<float>& w, const std::vector<float>& b, double* y) {
    double mean = 0;
    for (int c = 0; c < D; ++c) mean += v[c];
    mean /= D;
    double var = 0;
    for (int c = 0; c < D; ++c) var += (v[c] - mean) * (v[c] - mean);
    var /= D;
    const double rstd = 1.0 / std::sqrt(var + 1e-5);
    for (int c = 0; c < D; ++c) y[c] = (v[c] - mean) * rstd * w[c] + b[c];
  }
  double dot_w(const std::vector<uint16_t>& W, int row, const double* x) const {
    double s = 0;
    for (int k = 0; k < D; ++k) s += bf2d(W[(size_t)row * D + k]) * x[k];
    return s;
  }
};
static double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// ------------------------------------------------------------------ stage 1
struct InCase {
  const char* name;
  int B, D, N;
  int grid;  // 1: one destination (single GPU); 2: one rank's tile of a 2 x 2 grid, 4 channel owners
  int rank;  // with grid 2: which tile (0..3)
};

// Where stage 1 stores: one buffer per array (a, b) holding all destinations.
struct AbDest {
  foldcp::AbTarget t{};
  uint16_t* a = nullptr;
  uint16_t* b = nullptr;
  size_t elems = 0;       // per array
  int64_t per_dest = 0;   // elements per destination
  int ndest = 1;
};
static AbDest make_ab(int B, int D, int64_t np, int ndest, int64_t row0, int64_t col0) {
  AbDest d;
  d.ndest = ndest;
  const int dloc = D / ndest;
  const int64_t sab = foldcp::ab_plane_stride(np);  // padded planes, like ws_layout
  d.per_dest = (int64_t)B * dloc * sab;
  d.elems = (size_t)(d.per_dest * ndest);
  CUDA_OK(cudaMalloc(&d.a, d.elems * 2));
  CUDA_OK(cudaMalloc(&d.b, d.elems * 2));
  CUDA_OK(cudaMemset(d.a, 0xFF, d.elems * 2));
  CUDA_OK(cudaMemset(d.b, 0xFF, d.elems * 2));
  for (int q = 0; q < ndest; ++q) {
    d.t.a[q] = d.a + q * d.per_dest;
    d.t.b[q] = d.b + q * d.per_dest;
    d.t.row0[q] = row0;
    d.t.col0[q] = col0;
    d.t.ld[q] = np;
    d.t.plane[q] = sab;
  }
  d.t.dloc = dloc;
  return d;
}
static void free_ab(AbDest& d) {
  CUDA_OK(cudaFree(d.a));
  CUDA_OK(cudaFree(d.b));
}

static std::string cmp_line(const CmpStats& h, double* rel) {
  float md, mr;
  memcpy(&md, &h.max_diff, 4);
  memcpy(&mr, &h.max_ref, 4);
  *rel = mr > 0 ? (double)md / mr : (md > 0 ? 1.0 : 0.0);
  char line[400];
  snprintf(line, sizeof line,
           "max|diff| %.3e, max|old| %.3e, rel %.3e (limit 1e-2), %llu elements differ (max %u bf16 ulps), "
           "written-set mismatches %llu, inf %llu",
           md, mr, *rel, h.n_diff, h.max_ulp, h.written_mismatch, h.nonfinite);
  return line;
}
static CmpStats compare(const uint16_t* x, const uint16_t* y, size_t n, cudaStream_t s, const std::string& what) {
  CmpStats* st = nullptr;
  CUDA_OK(cudaMalloc(&st, sizeof(CmpStats)));
  CUDA_OK(cudaMemsetAsync(st, 0, sizeof(CmpStats), s));
  compare_bf16<<<1024, 256, 0, s>>>(x, y, n, st);
  CUDA_OK(cudaGetLastError());
  sync_or_die(s, 60, what);
  CmpStats h{};
  CUDA_OK(cudaMemcpy(&h, st, sizeof h, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaFree(st));
  return h;
}
static unsigned long long count_bad(const uint16_t* p, int64_t planes, int64_t ps, int64_t ld, int64_t r0,
                                    int64_t rows, int64_t c0, int64_t cols, cudaStream_t s) {
  unsigned long long* cnt = nullptr;
  CUDA_OK(cudaMalloc(&cnt, 8));
  CUDA_OK(cudaMemsetAsync(cnt, 0, 8, s));
  count_bad_bf16<<<1024, 256, 0, s>>>(p, planes, ps, ld, r0, rows, c0, cols, cnt);
  CUDA_OK(cudaGetLastError());
  sync_or_die(s, 60, "count unwritten");
  unsigned long long h = 0;
  CUDA_OK(cudaMemcpy(&h, cnt, 8, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaFree(cnt));
  return h;
}

static void run_in_case(const InCase& c, cudaStream_t s) {
  const int B = c.B, D = c.D;
  const int64_t N = c.N;
  // Geometry: single GPU = the whole padded grid; 2 x 2 = rank `rank`'s tile of side T (a
  // multiple of 8, as under CP), whose a/b go to the owners of D/4 channels each.
  int64_t np, xr, xc, row0 = 0, col0 = 0;
  foldcp::ProjInGeom geo{};
  if (c.grid == 1) {
    np = foldcp::padded_n(N);
    xr = xc = N;
    geo = foldcp::ProjInGeom{N, N, np, np, np, 0, 0, N};
  } else {
    const int64_t T = ((N + 1) / 2 + 7) / 8 * 8;
    np = foldcp::padded_n(2 * T);
    xr = xc = T;
    row0 = (c.rank / 2) * T;
    col0 = (c.rank % 2) * T;
    geo = foldcp::ProjInGeom{T, T, T, T, T, row0, col0, N};
  }
  char tag[256];
  snprintf(tag, sizeof tag, "stage 1 %s (B=%d D=%d N=%d, %s)", c.name, B, D, c.N,
           c.grid == 1 ? "1 destination" : "2x2 grid, 4 channel owners");

  Layer L;
  L.make(D, 1000u + (uint32_t)D, 0);
  const size_t xn = (size_t)B * xr * xc * D;
  uint16_t* x = nullptr;
  uint8_t* mask = nullptr;
  CUDA_OK(cudaMalloc(&x, xn * 2));
  CUDA_OK(cudaMalloc(&mask, (size_t)B * xr * xc));
  launch_fill(x, xn, 77u + (uint32_t)D, 1.7f, 0.5f, s);
  fill_mask<<<1024, 256, 0, s>>>(mask, B, xr, xc, 99u);
  CUDA_OK(cudaGetLastError());
  const int ndest = c.grid == 1 ? 1 : 4;
  AbDest dold = make_ab(B, D, np, ndest, row0, col0), dnew = make_ab(B, D, np, ndest, row0, col0);

  CUDA_OK(foldcp::launch_proj_in_mma_to(L.dl, x, mask, geo, dold.t, B, s));
  sync_or_die(s, 60, std::string(tag) + ": mma.sync kernel");
  const cudaError_t le = foldcp::launch_proj_in_to(L.dl, x, mask, geo, dnew.t, B, s);
  if (le != cudaSuccess) {
    verdict(false, std::string(tag) + ": launch of the wgmma kernel: " + cudaGetErrorName(le));
    CUDA_OK(cudaGetLastError());
  } else {
    sync_or_die(s, 60, std::string(tag) + ": wgmma kernel");
    // new vs old, whole buffers
    for (int ab = 0; ab < 2; ++ab) {
      const CmpStats h = compare(ab ? dnew.b : dnew.a, ab ? dold.b : dold.a, dnew.elems, s, "compare");
      double rel;
      const std::string line = cmp_line(h, &rel);
      // Everything stage 1 must write: rows [row0, row0 + out_rows) x columns [col0, col0 + store_cols)
      // of every plane of every destination.
      unsigned long long bad = 0;
      for (int q = 0; q < ndest; ++q)
        bad += count_bad((ab ? dnew.b : dnew.a) + q * dnew.per_dest, (int64_t)B * dnew.t.dloc, dnew.t.plane[q],
                         dnew.t.ld[q], row0, geo.out_rows, col0, geo.store_cols, s);
      char l2[600];
      snprintf(l2, sizeof l2, "%s: %s new vs old: %s; unwritten %llu", tag, ab ? "b" : "a", line.c_str(), bad);
      verdict(rel <= 1e-2 && h.written_mismatch == 0 && h.nonfinite == 0 && bad == 0, l2);
    }
    // float64 reference on sampled tokens (corners, the masked row and column, random)
    std::vector<uint8_t> hmask((size_t)B * xr * xc);
    CUDA_OK(cudaMemcpy(hmask.data(), mask, hmask.size(), cudaMemcpyDeviceToHost));
    std::vector<std::array<int64_t, 3>> samples = {{0, 0, 0}, {B - 1, xr - 1, xc - 1}, {0, 3, 7}, {0, 9, 5},
                                                   {B - 1, 0, xc - 1}, {B - 1, xr - 1, 0}};
    uint32_t r = 4242u + (uint32_t)N;
    while (samples.size() < 40) {
      r = mix32(r + 1);
      const int64_t b = r % B;
      r = mix32(r + 1);
      const int64_t i = r % xr;
      r = mix32(r + 1);
      samples.push_back({b, i, (int64_t)(r % xc)});
    }
    // a and b of the sampled tokens from both kernels' buffers
    const int ns = (int)samples.size();
    std::vector<int64_t> hs;
    for (const auto& smp : samples) hs.insert(hs.end(), smp.begin(), smp.end());
    int64_t* dsmp = nullptr;
    uint16_t* dgat = nullptr;
    CUDA_OK(cudaMalloc(&dsmp, hs.size() * 8));
    CUDA_OK(cudaMalloc(&dgat, (size_t)2 * ns * 2 * D * 2));
    CUDA_OK(cudaMemcpy(dsmp, hs.data(), hs.size() * 8, cudaMemcpyHostToDevice));
    gather_ab<<<64, 256, 0, s>>>(dnew.t, dsmp, ns, D, dgat);
    gather_ab<<<64, 256, 0, s>>>(dold.t, dsmp, ns, D, dgat + (size_t)ns * 2 * D);
    CUDA_OK(cudaGetLastError());
    sync_or_die(s, 60, "gather");
    std::vector<uint16_t> gat((size_t)2 * ns * 2 * D);
    CUDA_OK(cudaMemcpy(gat.data(), dgat, gat.size() * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaFree(dsmp));
    CUDA_OK(cudaFree(dgat));
    double se = 0, sr = 0, so = 0;
    int zero_bad = 0;
    std::vector<uint16_t> xt(D);
    std::vector<double> xv(D), xnrm(D);
    for (int si = 0; si < ns; ++si) {
      const int64_t b = samples[si][0], i = samples[si][1], k = samples[si][2];
      CUDA_OK(cudaMemcpy(xt.data(), x + (((size_t)b * xr + i) * xc + k) * D, D * 2, cudaMemcpyDeviceToHost));
      const bool valid = row0 + i < N && col0 + k < N && hmask[((size_t)b * xr + i) * xc + k] != 0;
      const uint16_t* got_a = &gat[(size_t)si * 2 * D];
      const uint16_t* got_b = got_a + D;
      const uint16_t* old_a = &gat[(size_t)(ns + si) * 2 * D];
      const uint16_t* old_b = old_a + D;
      for (int ch = 0; ch < D; ++ch) xv[ch] = bf2d(xt[ch]);
      Layer::layernorm(xv.data(), D, L.lniw, L.lnib, xnrm.data());
      for (int ch = 0; ch < D; ++ch) {
        double ra = 0, rb = 0;
        if (valid) {
          ra = sigmoid(L.dot_w(L.w1, Layer::row_in(ch, 1), xnrm.data()) + L.ginb[ch]) *
               (L.dot_w(L.w1, Layer::row_in(ch, 0), xnrm.data()) + L.pinb[ch]);
          rb = sigmoid(L.dot_w(L.w1, Layer::row_in(ch, 3), xnrm.data()) + L.ginb[D + ch]) *
               (L.dot_w(L.w1, Layer::row_in(ch, 2), xnrm.data()) + L.pinb[D + ch]);
        } else if (got_a[ch] != 0 || got_b[ch] != 0) {
          ++zero_bad;  // invalid tokens must be exactly +0
        }
        const double ga = bf2d(got_a[ch]), gb = bf2d(got_b[ch]);
        se += (ga - ra) * (ga - ra) + (gb - rb) * (gb - rb);
        sr += ra * ra + rb * rb;
        so += (bf2d(old_a[ch]) - ra) * (bf2d(old_a[ch]) - ra) + (bf2d(old_b[ch]) - rb) * (bf2d(old_b[ch]) - rb);
      }
    }
    const double rel = std::sqrt(se / std::max(sr, 1e-300)), rel_old = std::sqrt(so / std::max(sr, 1e-300));
    char line[400];
    snprintf(line, sizeof line,
             "%s: new vs float64 on %zu sampled tokens: ||new-ref||/||ref|| %.3e (old kernel %.3e; limit 1e-2); "
             "invalid tokens not zero: %d",
             tag, samples.size(), rel, rel_old, zero_bad);
    verdict(rel <= 1e-2 && std::isfinite(rel) && zero_bad == 0, line);
  }
  free_ab(dold);
  free_ab(dnew);
  CUDA_OK(cudaFree(x));
  CUDA_OK(cudaFree(mask));
  L.free_all();
}

// ------------------------------------------------------------------ stage 3
struct OutCase {
  const char* name;
  int B, D, N;
  int tile;  // 0: z as the single-GPU workspace (N rows of Np, padded planes); > 0: a CP tile of this side
  int residual;
};

static void run_out_case(const OutCase& c, cudaStream_t s) {
  const int B = c.B, D = c.D;
  int64_t rows, cols, ldz, sz;
  if (c.tile == 0) {
    rows = cols = c.N;
    ldz = foldcp::padded_n(c.N);
    sz = c.N * ldz + foldcp::kPlanePad;  // ws_layout's padded plane stride
  } else {
    rows = cols = ldz = c.tile;
    sz = (int64_t)c.tile * c.tile;
  }
  char tag[256];
  snprintf(tag, sizeof tag, "stage 3 %s (B=%d D=%d rows=cols=%lld ldz=%lld, residual %s)", c.name, B, D,
           (long long)rows, (long long)ldz, c.residual ? "on" : "off");

  Layer L;
  L.make(D, 2000u + (uint32_t)D, c.residual);
  const size_t xn = (size_t)B * rows * cols * D;
  const size_t zn = (size_t)B * D * sz;
  uint16_t *x = nullptr, *out_old = nullptr, *out_new = nullptr, *inplace = nullptr, *z = nullptr;
  CUDA_OK(cudaMalloc(&x, xn * 2));
  CUDA_OK(cudaMalloc(&out_old, xn * 2));
  CUDA_OK(cudaMalloc(&out_new, xn * 2));
  CUDA_OK(cudaMalloc(&inplace, xn * 2));
  CUDA_OK(cudaMalloc(&z, zn * 2));
  launch_fill(x, xn, 300u + (uint32_t)D, 1.7f, 0.5f, s);
  launch_fill(z, zn, 400u + (uint32_t)D, 3.0f, 1.0f, s);  // nonzero mean: LN_out must centre
  if (c.tile == 0 && c.N % 2 != 0) {
    // The padding column after an odd row end is read with its pair and must not count: NaN there.
    poison_column<<<64, 256, 0, s>>>(z, (int64_t)B * D, rows, ldz, sz, c.N);
  }
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaMemsetAsync(out_old, 0xFF, xn * 2, s));
  CUDA_OK(cudaMemsetAsync(out_new, 0xFF, xn * 2, s));
  CUDA_OK(cudaMemcpyAsync(inplace, x, xn * 2, cudaMemcpyDeviceToDevice, s));

  // The reference: the mma.sync oracle up to D = 256 (its widths); above, the wide or split kernels
  // themselves on the same z laid out with rows of the other alignment (ldz 72 <-> 74, 70 <-> 72),
  // so that one of the two runs takes LN_out's TMA path and the other its global-memory path: the
  // two must agree bit for bit (the same arithmetic in the same order). A split pair keeps p between
  // its two kernels: in a buffer of its own for the reference and in place, in out itself out of
  // place (out != x).
  const bool oracle = D <= 256, split = foldcp::proj_out_split(D, D);
  uint16_t* z_alt = nullptr;
  uint16_t* pbuf = nullptr;
  if (split) CUDA_OK(cudaMalloc(&pbuf, xn * 2));
  if (oracle) {
    CUDA_OK(foldcp::launch_proj_out_mma_tile(L.dl, x, z, out_old, B, rows, cols, ldz, sz, s));
    sync_or_die(s, 60, std::string(tag) + ": mma.sync kernel");
  } else {
    if (c.tile == 0) {  // (a case list error: the z of the workspace layout has padded planes)
      verdict(false, std::string(tag) + ": a wide case needs a CP tile (contiguous planes) to re-lay z");
      for (uint16_t* p : {x, out_old, out_new, inplace, z, pbuf}) CUDA_OK(cudaFree(p));
      L.free_all();
      return;
    }
    const int64_t ldz_alt = ldz % 8 == 0 ? ldz + 2 : (ldz + 7) / 8 * 8, sz_alt = rows * ldz_alt;
    CUDA_OK(cudaMalloc(&z_alt, (size_t)B * D * sz_alt * 2));
    CUDA_OK(cudaMemcpy2DAsync(z_alt, ldz_alt * 2, z, ldz * 2, cols * 2, (size_t)B * D * rows, cudaMemcpyDeviceToDevice, s));
    CUDA_OK(foldcp::launch_proj_out_tile(L.dl, x, z_alt, out_old, pbuf, B, rows, cols, ldz_alt, sz_alt, s));
    sync_or_die(s, 60, std::string(tag) + ": wgmma kernel, z rows of the other alignment");
  }
  cudaError_t le =
      foldcp::launch_proj_out_tile(L.dl, x, z, out_new, split ? out_new : nullptr, B, rows, cols, ldz, sz, s);
  if (le == cudaSuccess)
    le = foldcp::launch_proj_out_tile(L.dl, inplace, z, inplace, pbuf, B, rows, cols, ldz, sz, s);
  if (le != cudaSuccess) {
    verdict(false, std::string(tag) + ": launch of the wgmma kernel: " + cudaGetErrorName(le));
    CUDA_OK(cudaGetLastError());
  } else {
    sync_or_die(s, 60, std::string(tag) + ": wgmma kernel");
    {
      const CmpStats h = compare(out_new, out_old, xn, s, "compare");
      double rel;
      const std::string line = cmp_line(h, &rel);
      const unsigned long long bad = count_bad(out_new, 1, 0, 0, 0, 1, 0, (int64_t)xn, s);
      char l2[600];
      if (oracle) {
        snprintf(l2, sizeof l2, "%s: out new vs old: %s; unwritten or non-finite %llu", tag, line.c_str(), bad);
        verdict(rel <= 1e-2 && h.written_mismatch == 0 && h.nonfinite == 0 && bad == 0, l2);
      } else {
        snprintf(l2, sizeof l2,
                 "%s: LN_out's two z paths (TMA, global memory): %llu elements differ (must be 0); unwritten or "
                 "non-finite %llu",
                 tag, h.n_diff, bad);
        verdict(h.n_diff == 0 && h.written_mismatch == 0 && h.nonfinite == 0 && bad == 0, l2);
      }
    }
    {
      const CmpStats h = compare(inplace, out_new, xn, s, "compare in place");
      char l2[400];
      snprintf(l2, sizeof l2, "%s: in place (out == x) vs out of place: %llu elements differ, written-set mismatches %llu (must be 0)",
               tag, h.n_diff, h.written_mismatch);
      verdict(h.n_diff == 0 && h.written_mismatch == 0 && h.nonfinite == 0, l2);
    }
    // float64 reference on sampled tokens
    std::vector<std::array<int64_t, 3>> samples = {{0, 0, 0}, {B - 1, rows - 1, cols - 1}, {0, 0, cols - 1},
                                                   {B - 1, rows - 1, 0}};
    uint32_t r = 777u + (uint32_t)rows;
    while (samples.size() < 32) {
      r = mix32(r + 1);
      const int64_t b = r % B;
      r = mix32(r + 1);
      const int64_t i = r % rows;
      r = mix32(r + 1);
      samples.push_back({b, i, (int64_t)(r % cols)});
    }
    const int ns = (int)samples.size();
    std::vector<int64_t> hs;
    for (const auto& smp : samples) hs.insert(hs.end(), smp.begin(), smp.end());
    int64_t* dsmp = nullptr;
    float* dz = nullptr;
    CUDA_OK(cudaMalloc(&dsmp, hs.size() * 8));
    CUDA_OK(cudaMalloc(&dz, (size_t)ns * D * 4));
    CUDA_OK(cudaMemcpy(dsmp, hs.data(), hs.size() * 8, cudaMemcpyHostToDevice));
    gather_z<<<64, 256, 0, s>>>(z, dsmp, ns, D, ldz, sz, dz);
    CUDA_OK(cudaGetLastError());
    sync_or_die(s, 60, "gather z");
    std::vector<float> hz((size_t)ns * D);
    CUDA_OK(cudaMemcpy(hz.data(), dz, hz.size() * 4, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaFree(dsmp));
    CUDA_OK(cudaFree(dz));
    double se = 0, sr = 0, so = 0;
    std::vector<uint16_t> xt(D), got(D), old(D);
    std::vector<double> xv(D), xnrm(D), zv(D), znrm(D);
    for (int si = 0; si < ns; ++si) {
      const int64_t b = samples[si][0], i = samples[si][1], j = samples[si][2];
      const size_t off = (((size_t)b * rows + i) * cols + j) * D;
      CUDA_OK(cudaMemcpy(xt.data(), x + off, D * 2, cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(got.data(), out_new + off, D * 2, cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(old.data(), out_old + off, D * 2, cudaMemcpyDeviceToHost));
      for (int ch = 0; ch < D; ++ch) {
        xv[ch] = bf2d(xt[ch]);
        zv[ch] = hz[(size_t)si * D + ch];
      }
      Layer::layernorm(xv.data(), D, L.lniw, L.lnib, xnrm.data());
      Layer::layernorm(zv.data(), D, L.lnow, L.lnob, znrm.data());
      for (int ch = 0; ch < D; ++ch) {
        double ref = sigmoid(L.dot_w(L.w3, Layer::row_out(ch, 1), xnrm.data()) + L.goutb[ch]) *
                     (L.dot_w(L.w3, Layer::row_out(ch, 0), znrm.data()) + L.poutb[ch]);
        if (c.residual) ref += xv[ch];
        const double gv = bf2d(got[ch]), ov = bf2d(old[ch]);
        se += (gv - ref) * (gv - ref);
        so += (ov - ref) * (ov - ref);
        sr += ref * ref;
      }
    }
    const double rel = std::sqrt(se / std::max(sr, 1e-300)), rel_old = std::sqrt(so / std::max(sr, 1e-300));
    char line[400];
    snprintf(line, sizeof line,
             "%s: new vs float64 on %d sampled tokens: ||new-ref||/||ref|| %.3e (old kernel %.3e; limit 1e-2)", tag, ns,
             rel, rel_old);
    verdict(rel <= 1e-2 && std::isfinite(rel), line);
  }
  CUDA_OK(cudaFree(x));
  CUDA_OK(cudaFree(out_old));
  CUDA_OK(cudaFree(out_new));
  CUDA_OK(cudaFree(inplace));
  CUDA_OK(cudaFree(z));
  if (z_alt != nullptr) CUDA_OK(cudaFree(z_alt));
  if (pbuf != nullptr) CUDA_OK(cudaFree(pbuf));
  L.free_all();
}

// ------------------------------------------------------------------ timing
template <typename F>
static double median_ms(F launch, cudaStream_t s) {
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  for (int w = 0; w < 3; ++w) launch();
  sync_or_die(s, 120, "bench warm-up");
  std::vector<float> ms;
  for (int it = 0; it < 20; ++it) {
    CUDA_OK(cudaEventRecord(e0, s));
    launch();
    CUDA_OK(cudaEventRecord(e1, s));
    sync_or_die(s, 60, "bench");
    float t = 0;
    CUDA_OK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  CUDA_OK(cudaEventDestroy(e0));
  CUDA_OK(cudaEventDestroy(e1));
  return 0.5 * (ms[9] + ms[10]);
}

static void bench_in(int B, int N, int D, cudaStream_t s) {
  Layer L;
  L.make(D, 5u, 0);
  const int64_t np = foldcp::padded_n(N);
  const size_t xn = (size_t)B * N * N * D;
  uint16_t* x = nullptr;
  uint8_t* mask = nullptr;
  CUDA_OK(cudaMalloc(&x, xn * 2));
  CUDA_OK(cudaMalloc(&mask, (size_t)B * N * N));
  launch_fill(x, xn, 7u, 1.7f, 0.5f, s);
  fill_mask<<<1024, 256, 0, s>>>(mask, B, N, N, 9u);
  AbDest d = make_ab(B, D, np, 1, 0, 0);
  const foldcp::ProjInGeom geo{N, N, np, np, np, 0, 0, N};
  const double flop = 2.0 * B * (double)N * N * D * 4.0 * D;
  const double t_old = median_ms([&]() { CUDA_OK(foldcp::launch_proj_in_mma_to(L.dl, x, mask, geo, d.t, B, s)); }, s);
  const double t_new = median_ms([&]() { CUDA_OK(foldcp::launch_proj_in_to(L.dl, x, mask, geo, d.t, B, s)); }, s);
  printf("BENCH stage 1 (B,N,D)=(%d,%d,%d): mma.sync %.3f ms %.1f TFLOP/s | wgmma %.3f ms %.1f TFLOP/s | speed-up %.2fx\n",
         B, N, D, t_old, flop / (t_old * 1e-3) / 1e12, t_new, flop / (t_new * 1e-3) / 1e12, t_old / t_new);
  fflush(stdout);
  free_ab(d);
  CUDA_OK(cudaFree(x));
  CUDA_OK(cudaFree(mask));
  L.free_all();
}

static void bench_out(int B, int N, int D, cudaStream_t s) {
  Layer L;
  L.make(D, 6u, 1);
  const int64_t np = foldcp::padded_n(N);
  const int64_t sz = (int64_t)N * np + foldcp::kPlanePad;
  const size_t xn = (size_t)B * N * N * D, zn = (size_t)B * D * sz;
  uint16_t *x = nullptr, *out = nullptr, *z = nullptr;
  CUDA_OK(cudaMalloc(&x, xn * 2));
  CUDA_OK(cudaMalloc(&out, xn * 2));
  CUDA_OK(cudaMalloc(&z, zn * 2));
  launch_fill(x, xn, 17u, 1.7f, 0.5f, s);
  launch_fill(z, zn, 19u, 3.0f, 1.0f, s);
  CUDA_OK(cudaGetLastError());
  const double flop = 2.0 * B * (double)N * N * D * 2.0 * D;
  const double t_old =
      median_ms([&]() { CUDA_OK(foldcp::launch_proj_out_mma_tile(L.dl, x, z, out, B, N, N, np, sz, s)); }, s);
  const double t_new =
      median_ms([&]() { CUDA_OK(foldcp::launch_proj_out_tile(L.dl, x, z, out, nullptr, B, N, N, np, sz, s)); }, s);
  printf("BENCH stage 3 (B,N,D)=(%d,%d,%d): mma.sync %.3f ms %.1f TFLOP/s | wgmma %.3f ms %.1f TFLOP/s | speed-up %.2fx\n",
         B, N, D, t_old, flop / (t_old * 1e-3) / 1e12, t_new, flop / (t_new * 1e-3) / 1e12, t_old / t_new);
  fflush(stdout);
  CUDA_OK(cudaFree(x));
  CUDA_OK(cudaFree(out));
  CUDA_OK(cudaFree(z));
  L.free_all();
}

int main(int argc, char** argv) {
  bool quick = false, do_bench = true, cases = true;
  bool st1 = true, st3 = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--no-bench") {
      do_bench = false;
    } else if (a == "--bench-only") {
      cases = false;
    } else if (a == "--stage" && i + 1 < argc) {
      const std::string v = argv[++i];
      st1 = v == "1" || v == "both";
      st3 = v == "3" || v == "both";
      if (!st1 && !st3) {
        fprintf(stderr, "--stage 1|3|both\n");
        return 2;
      }
    } else {
      fprintf(stderr, "usage: %s [--quick] [--no-bench] [--bench-only] [--stage 1|3|both]\n", argv[0]);
      return 2;
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    printf("SKIP: no CUDA device\n");
    return 0;
  }
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s, sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  if (prop.major != 9 || prop.minor != 0) {
    printf("SKIP: the kernels are built for sm_90a only\n");
    return 0;
  }
  for (int d : {32, 64, 96, 128, 160, 192, 224, 256}) CUDA_OK(foldcp::prepare_proj_mma(d));  // the mma.sync oracle
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));

  if (cases && st1) {
    const std::vector<InCase> in_cases = {
        {"n100", 1, 32, 100, 1, 0},    {"n100", 2, 64, 100, 1, 0},   {"n100", 1, 96, 100, 1, 0},
        {"n100", 2, 128, 100, 1, 0},   {"n100", 1, 192, 100, 1, 0},  {"n100", 1, 224, 100, 1, 0},
        {"n100", 2, 256, 100, 1, 0},   {"cp-rank3", 2, 128, 100, 2, 3}, {"cp-rank0", 1, 256, 1000, 2, 0},
        {"n1000", 2, 32, 1000, 1, 0},  {"n1000", 1, 128, 1000, 1, 0}, {"n1000", 2, 256, 1000, 1, 0},
    };
    for (const InCase& c : in_cases) {
      if (quick && c.N > 100) continue;
      run_in_case(c, s);
    }
  }
  if (cases && st3) {
    const std::vector<OutCase> out_cases = {
        {"n100", 1, 32, 100, 0, 1},    {"n100", 2, 64, 100, 0, 0},  {"n100", 1, 96, 100, 0, 1},
        {"n100", 2, 128, 100, 0, 1},   {"n100", 1, 192, 100, 0, 0}, {"n100", 1, 224, 100, 0, 1},
        {"n100", 2, 256, 100, 0, 1},   {"cp-tile", 2, 128, 0, 72, 1}, {"cp-tile", 1, 256, 0, 72, 0},
        {"n1000", 2, 32, 1000, 0, 1},  {"n1000", 1, 128, 1000, 0, 0}, {"n1000", 2, 256, 1000, 0, 1},
        {"n99", 2, 128, 99, 0, 1},     {"n129", 1, 256, 129, 0, 0},
        // z rows not 16-byte aligned (ldz = 70): LN_out loads z from global memory, not by TMA
        {"cp-tile-ldz70", 2, 128, 0, 70, 1}, {"cp-tile-ldz70", 1, 256, 0, 70, 0},
        // the wide kernel (384) and the split pair (480, 512), each z path against the other; 480: the last k-block
        // of z half outside H (H % 64 == 32); n190: several tiles per CTA (the z barriers' later
        // phases), and the last tile's second warpgroup wholly past cols (its box starts earlier)
        {"wide-tile", 1, 384, 0, 72, 1},      {"wide-tile-ldz70", 2, 384, 0, 70, 0},
        {"wide-tile", 1, 512, 0, 72, 0},      {"wide-tile-ldz70", 1, 512, 0, 70, 1},
        {"wide-tile", 1, 480, 0, 72, 1},      {"wide-tile-n190", 1, 384, 0, 190, 1},
        {"wide-tile-n190", 1, 512, 0, 190, 0},
    };
    for (const OutCase& c : out_cases) {
      if (quick && c.N > 100) continue;
      run_out_case(c, s);
    }
  }
  if (do_bench && !quick) {
    if (st1) {
      bench_in(1, 4096, 256, s);
      bench_in(1, 2048, 128, s);
    }
    if (st3) {
      bench_out(1, 4096, 256, s);
      bench_out(1, 2048, 128, s);
    }
  }
  CUDA_OK(cudaStreamDestroy(s));
  if (g_failures) {
    printf("proj_wgmma_test: FAIL (%d checks failed)\n", g_failures);
    return 1;
  }
  printf("proj_wgmma_test: PASS\n");
  return 0;
}
