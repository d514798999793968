// Test and benchmark of the wgmma + TMA triangle GEMM (src/stage2_tri_gemm.cu) against the
// mma.sync one (tests/tri_gemm_mma_oracle.cu, launch_tri_gemm_mma_to) and a float64 CPU reference.
// For each case and direction: random bf16 a/b planes (Np x Np, plane stride Np^2 + 128 like the
// padded workspace, the 128 padding elements set to bf16 NaN so that a read past a plane shows),
// z buffers (bf16) poisoned with 0xFF (NaN), both kernels run into their own z, then
//   - kernel vs kernel over the whole z buffer: the same elements written (NaN pattern equal) and
//     at most one bf16 step apart, up to 1e-4 max |z| (both accumulate bf16 products in fp32, in
//     another order, about 1e-6 apart, then round once: a sum near a rounding boundary may round
//     to the neighbouring bf16);
//   - every z element of the N x N token grid written and finite (single-destination cases);
//   - sampled (plane, i, j) against a float64 dot product: (|z - ref| - 2^-8 |ref|) /
//     sqrt(sum_k (a_k b_k)^2) <= 1e-3, 2^-8 |ref| being the most the one bf16 rounding may add (a
//     dropped k16 slice of K = 2048 would show as about 9e-2).
// The values are a hash of (tensor, plane, row, col) turned into exact bf16 bit patterns, so the
// CPU recomputes them without copying the planes back.
// Then median time of 20 runs (after 3 warm-ups) of each kernel, TFLOP/s = 2 Np^3 planes / t.
// Usage: tri_gemm_wgmma_test [--quick] [--no-bench] [--bench-only] [--dir out|in|both]
// Exit status: 0 all PASS, 1 a check failed, 2 a CUDA error, 3 a kernel hung (host watchdog).
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

#define CUDA_OK(call)                                                                                   \
  do {                                                                                                  \
    cudaError_t e_ = (call);                                                                            \
    if (e_ != cudaSuccess) {                                                                            \
      fprintf(stderr, "FAIL: CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, #call); \
      fflush(stdout);                                                                                   \
      exit(2);                                                                                          \
    }                                                                                                   \
  } while (0)

// ------------------------------------------------------------------ deterministic bf16 values
__host__ __device__ inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
// bf16 bits of element (row, col) of plane `plane` of tensor `seed`: random sign, magnitude in
// [2^-8, 2^0) with a random 7-bit mantissa. Always finite.
__host__ __device__ inline uint16_t gen_bits(uint32_t seed, uint32_t plane, uint32_t row, uint32_t col) {
  const uint32_t h = mix32(seed * 0x9E3779B1u ^ mix32(plane * 0x85EBCA77u ^ mix32(row * 0xC2B2AE3Du ^ mix32(col + 0x27D4EB2Fu))));
  const uint32_t sign = h >> 31;
  const uint32_t e = 119u + ((h >> 20) & 7u);
  const uint32_t m = h & 0x7fu;
  return (uint16_t)((sign << 15) | (e << 7) | m);
}
static double bits_to_double(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return (double)f;
}

__global__ void fill_planes(uint16_t* p, int64_t planes, int64_t np, int64_t sab, uint32_t seed) {
  const int64_t total = planes * sab;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t pl = i / sab, r = i - pl * sab;
    p[i] = r < np * np ? gen_bits(seed, (uint32_t)pl, (uint32_t)(r / np), (uint32_t)(r % np)) : (uint16_t)0x7fc0;
  }
}

// ------------------------------------------------------------------ device-side comparisons
struct CmpStats {
  unsigned int max_diff;  // float bits (non-negative floats order like their bits): |x - y| beyond one bf16 step
  unsigned int max_ref;
  unsigned long long written_mismatch;  // NaN (unwritten) in one buffer, not in the other
  unsigned long long nonfinite;         // written but inf
};
__device__ __forceinline__ float bf16_at(const uint16_t* p, size_t i) { return __uint_as_float((uint32_t)p[i] << 16); }
__global__ void compare_buffers(const uint16_t* x, const uint16_t* y, size_t n, CmpStats* st) {
  float md = 0.f, mr = 0.f;
  unsigned long long mm = 0, nf = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float a = bf16_at(x, i), b = bf16_at(y, i);
    const bool na = isnan(a), nb = isnan(b);
    if (na != nb) {
      ++mm;
    } else if (!na) {
      if (!isfinite(a) || !isfinite(b)) {
        ++nf;
      } else {
        // one bf16 step at v is at most 2^-7 |v|
        md = fmaxf(md, fmaxf(0.f, fabsf(a - b) - ldexpf(fmaxf(fabsf(a), fabsf(b)), -7)));
        mr = fmaxf(mr, fabsf(b));
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    md = fmaxf(md, __shfl_xor_sync(0xffffffffu, md, o));
    mr = fmaxf(mr, __shfl_xor_sync(0xffffffffu, mr, o));
    mm += __shfl_xor_sync(0xffffffffu, mm, o);
    nf += __shfl_xor_sync(0xffffffffu, nf, o);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicMax(&st->max_diff, __float_as_uint(md));
    atomicMax(&st->max_ref, __float_as_uint(mr));
    if (mm) atomicAdd(&st->written_mismatch, mm);
    if (nf) atomicAdd(&st->nonfinite, nf);
  }
}
// Elements of the N x N grid of every plane (one destination: row stride ld, plane stride sz) that
// are not finite (unwritten = NaN poison).
__global__ void count_unwritten(const uint16_t* z, int64_t planes, int64_t n, int64_t ld, int64_t sz,
                                unsigned long long* cnt) {
  unsigned long long c = 0;
  const int64_t total = planes * n * n;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t p = i / (n * n), r = i - p * n * n, row = r / n, col = r - row * n;
    if (!isfinite(bf16_at(z, p * sz + row * ld + col))) ++c;
  }
  for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(cnt, c);
}

// Waits for the stream with a time limit: a hung kernel (mbarrier deadlock) ends the test with a
// message instead of eating the whole device call.
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

// ------------------------------------------------------------------ one case
struct Case {
  const char* name;
  int B, D, N;
  int grid;  // 1: one destination; 2: a 2 x 2 grid of destinations (as under CP, cp = 4)
  int ctas;  // > 0: cap on the wgmma kernel's persistent grid
};

static int g_failures = 0;
static void verdict(bool ok, const std::string& line) {
  printf("%s: %s\n", ok ? "PASS" : "FAIL", line.c_str());
  fflush(stdout);
  if (!ok) ++g_failures;
}

// z destinations of one case: one buffer holding grid^2 destination blocks.
struct Dest {
  foldcp::ZTarget t{};
  uint16_t* buf = nullptr;  // bf16
  size_t elems = 0;
};
static Dest make_dest(const Case& c, int64_t np) {
  Dest d;
  const int64_t planes = (int64_t)c.B * c.D;
  if (c.grid == 1) {
    const int64_t sz = (int64_t)c.N * np + foldcp::kPlanePad;  // like ws_layout: N rows of Np, padded planes
    d.elems = (size_t)(planes * sz);
    CUDA_OK(cudaMalloc(&d.buf, d.elems * 2));
    d.t.z[0] = d.buf;
    d.t.ld[0] = np;
    d.t.plane[0] = sz;
    d.t.chans[0] = c.D;
    d.t.chan0[0] = 0;
    d.t.tile_rows = d.t.tile_cols = (int)np;
    d.t.grid_cols = 1;
  } else {
    const int64_t T = (((c.N + 1) / 2) + 7) / 8 * 8;  // tile side, a multiple of 8 (as under CP)
    const int64_t per = planes * T * T;
    d.elems = (size_t)(4 * per);
    CUDA_OK(cudaMalloc(&d.buf, d.elems * 2));
    for (int o = 0; o < 4; ++o) {
      d.t.z[o] = d.buf + o * per;
      d.t.ld[o] = T;
      d.t.plane[o] = T * T;
      d.t.chans[o] = c.D;
      d.t.chan0[o] = 0;
    }
    d.t.tile_rows = d.t.tile_cols = (int)T;
    d.t.grid_cols = 2;
  }
  d.t.dloc = c.D;
  d.t.n_store = c.N;
  CUDA_OK(cudaMemset(d.buf, 0xFF, d.elems * 2));
  return d;
}
// Where token (i, j) of plane p lands (same mapping as the kernels' epilogues).
static const uint16_t* dest_ptr(const Dest& d, int p, int i, int j) {
  const foldcp::ZTarget& t = d.t;
  const int zb = p / t.dloc, zcl = p % t.dloc;
  const int rg = i / t.tile_rows, rl = i % t.tile_rows, cg = j / t.tile_cols, cl = j % t.tile_cols;
  const int o = rg * t.grid_cols + cg;
  return t.z[o] + ((int64_t)zb * t.chans[o] + t.chan0[o] + zcl) * t.plane[o] + (int64_t)rl * t.ld[o] + cl;
}

static const uint32_t kSeedA = 11, kSeedB = 23;

static void run_case(const Case& c, int dir, cudaStream_t s) {
  const int64_t np = foldcp::padded_n(c.N);
  const int64_t sab = foldcp::ab_plane_stride(np);
  const int64_t planes = (int64_t)c.B * c.D;
  const char* dname = dir == 0 ? "outgoing" : "incoming";
  char tag[256];
  snprintf(tag, sizeof tag, "%s %s (B=%d D=%d N=%d Np=%lld, %s, ctas=%s%d)", c.name, dname, c.B, c.D, c.N,
           (long long)np, c.grid == 1 ? "1 destination" : "2x2 destinations", c.ctas > 0 ? "" : "auto ", c.ctas);

  uint16_t *a = nullptr, *b = nullptr;
  CUDA_OK(cudaMalloc(&a, (size_t)(planes * sab) * 2));
  CUDA_OK(cudaMalloc(&b, (size_t)(planes * sab) * 2));
  fill_planes<<<1024, 256, 0, s>>>(a, planes, np, sab, kSeedA);
  fill_planes<<<1024, 256, 0, s>>>(b, planes, np, sab, kSeedB);
  CUDA_OK(cudaGetLastError());
  Dest zold = make_dest(c, np), znew = make_dest(c, np);

  foldcp::DevLayer L{};
  L.dim = L.hidden = c.D;
  L.direction = dir;
  CUDA_OK(foldcp::launch_tri_gemm_mma_to(L, a, b, np, sab, zold.t, c.B, s));
  sync_or_die(s, 60, std::string(tag) + ": mma.sync kernel");
  const cudaError_t le = foldcp::launch_tri_gemm_ctas(L, a, b, np, sab, znew.t, c.B, s, c.ctas);
  if (le != cudaSuccess) {
    // A refused launch (argument check, tensor-map encoding) leaves the context usable: go on.
    verdict(false, std::string(tag) + ": launch of the wgmma kernel: " + cudaGetErrorName(le) + " (" +
                       cudaGetErrorString(le) + ")");
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(b));
    CUDA_OK(cudaFree(zold.buf));
    CUDA_OK(cudaFree(znew.buf));
    return;
  }
  sync_or_die(s, 60, std::string(tag) + ": wgmma kernel");

  // kernel vs kernel, whole buffers
  CmpStats* st = nullptr;
  CUDA_OK(cudaMalloc(&st, sizeof(CmpStats)));
  CUDA_OK(cudaMemset(st, 0, sizeof(CmpStats)));
  compare_buffers<<<1024, 256, 0, s>>>(znew.buf, zold.buf, znew.elems, st);
  unsigned long long* cnt = nullptr;
  CUDA_OK(cudaMalloc(&cnt, 8));
  CUDA_OK(cudaMemset(cnt, 0, 8));
  if (c.grid == 1) count_unwritten<<<1024, 256, 0, s>>>(znew.buf, planes, c.N, np, znew.t.plane[0], cnt);
  CUDA_OK(cudaGetLastError());
  sync_or_die(s, 60, std::string(tag) + ": compare");
  CmpStats h{};
  unsigned long long unwritten = 0;
  CUDA_OK(cudaMemcpy(&h, st, sizeof h, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(&unwritten, cnt, 8, cudaMemcpyDeviceToHost));
  float md, mr;
  memcpy(&md, &h.max_diff, 4);
  memcpy(&mr, &h.max_ref, 4);
  const double rel = mr > 0 ? (double)md / mr : (md > 0 ? 1.0 : 0.0);
  {
    char line[512];
    snprintf(line, sizeof line,
             "%s: wgmma vs mma.sync: max|diff| beyond one bf16 step %.3e, max|z| %.3e, rel %.3e (limit 1e-4); "
             "written-set mismatches %llu, "
             "inf %llu; unwritten N x N elements %llu",
             tag, md, mr, rel, h.written_mismatch, h.nonfinite, unwritten);
    verdict(rel <= 1e-4 && mr > 0 && h.written_mismatch == 0 && h.nonfinite == 0 && unwritten == 0, line);
  }

  // float64 reference on sampled tokens (corners always)
  std::vector<std::array<int, 3>> samples;
  samples.push_back({0, 0, 0});
  samples.push_back({(int)planes - 1, c.N - 1, c.N - 1});
  samples.push_back({0, 0, c.N - 1});
  samples.push_back({(int)planes - 1, c.N - 1, 0});
  uint32_t r = 12345u + (uint32_t)c.N * 7u + (uint32_t)dir;
  while (samples.size() < 48) {
    r = mix32(r + 1);
    const int p = (int)(r % planes);
    r = mix32(r + 1);
    const int i = (int)(r % c.N);
    r = mix32(r + 1);
    const int j = (int)(r % c.N);
    samples.push_back({p, i, j});
  }
  double worst = 0;
  int worst_at = 0;
  for (size_t q = 0; q < samples.size(); ++q) {
    const int p = samples[q][0], i = samples[q][1], j = samples[q][2];
    double ref = 0, sq = 0;
    for (int64_t k = 0; k < np; ++k) {
      double x, y;
      if (dir == 0) {  // z[i][j] = sum_k a[p][i][k] b[p][j][k]
        x = bits_to_double(gen_bits(kSeedA, p, i, (uint32_t)k));
        y = bits_to_double(gen_bits(kSeedB, p, j, (uint32_t)k));
      } else {  // z[i][j] = sum_k a[p][k][i] b[p][k][j]
        x = bits_to_double(gen_bits(kSeedA, p, (uint32_t)k, i));
        y = bits_to_double(gen_bits(kSeedB, p, (uint32_t)k, j));
      }
      ref += x * y;
      sq += (x * y) * (x * y);
    }
    uint16_t gotb;
    CUDA_OK(cudaMemcpy(&gotb, dest_ptr(znew, p, i, j), 2, cudaMemcpyDeviceToHost));
    const double got = bits_to_double(gotb);
    const double err =
        std::isfinite(got) ? std::max(0.0, std::fabs(got - ref) - std::ldexp(std::fabs(ref), -8)) / std::sqrt(sq) : 1e30;
    if (err > worst) {
      worst = err;
      worst_at = (int)q;
    }
  }
  {
    char line[512];
    const auto& w = samples[worst_at];
    snprintf(line, sizeof line,
             "%s: wgmma vs float64 on %zu sampled tokens: worst (|z-ref| - 2^-8 |ref|)/sqrt(sum (a_k b_k)^2) %.3e at (plane %d, "
             "i %d, j %d) (limit 1e-3)",
             tag, samples.size(), worst, w[0], w[1], w[2]);
    verdict(worst <= 1e-3, line);
  }

  CUDA_OK(cudaFree(st));
  CUDA_OK(cudaFree(cnt));
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  CUDA_OK(cudaFree(zold.buf));
  CUDA_OK(cudaFree(znew.buf));
}

// ------------------------------------------------------------------ timing
static void bench(int B, int D, int N, int dir, cudaStream_t s) {
  const int64_t np = foldcp::padded_n(N);
  const int64_t sab = foldcp::ab_plane_stride(np);
  const int64_t planes = (int64_t)B * D;
  Case c{"bench", B, D, N, 1, 0};
  uint16_t *a = nullptr, *b = nullptr;
  CUDA_OK(cudaMalloc(&a, (size_t)(planes * sab) * 2));
  CUDA_OK(cudaMalloc(&b, (size_t)(planes * sab) * 2));
  fill_planes<<<1024, 256, 0, s>>>(a, planes, np, sab, kSeedA);
  fill_planes<<<1024, 256, 0, s>>>(b, planes, np, sab, kSeedB);
  Dest z = make_dest(c, np);
  foldcp::DevLayer L{};
  L.dim = L.hidden = D;
  L.direction = dir;
  const double flop = 2.0 * (double)np * np * np * planes;
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  double med[2];
  for (int which = 0; which < 2; ++which) {
    auto launch = [&]() {
      const cudaError_t e = which == 0 ? foldcp::launch_tri_gemm_mma_to(L, a, b, np, sab, z.t, B, s)
                                       : foldcp::launch_tri_gemm_to(L, a, b, np, sab, z.t, B, s);
      CUDA_OK(e);
    };
    for (int w = 0; w < 3; ++w) launch();
    sync_or_die(s, 60, "bench warm-up");
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
    med[which] = 0.5 * (ms[9] + ms[10]);
  }
  printf("BENCH %s B=%d D=%d Np=%lld: mma.sync %.3f ms %.1f TFLOP/s | wgmma %.3f ms %.1f TFLOP/s | speed-up %.2fx\n",
         dir == 0 ? "outgoing" : "incoming", B, D, (long long)np, med[0], flop / (med[0] * 1e-3) / 1e12, med[1],
         flop / (med[1] * 1e-3) / 1e12, med[0] / med[1]);
  fflush(stdout);
  CUDA_OK(cudaEventDestroy(e0));
  CUDA_OK(cudaEventDestroy(e1));
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  CUDA_OK(cudaFree(z.buf));
}

int main(int argc, char** argv) {
  bool quick = false, do_bench = true, cases = true;
  int dir_lo = 0, dir_hi = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--no-bench") {
      do_bench = false;
    } else if (a == "--bench-only") {
      cases = false;
    } else if (a == "--dir" && i + 1 < argc) {
      const std::string d = argv[++i];
      if (d == "out") {
        dir_lo = dir_hi = 0;
      } else if (d == "in") {
        dir_lo = dir_hi = 1;
      } else if (d != "both") {
        fprintf(stderr, "--dir out|in|both\n");
        return 2;
      }
    } else {
      fprintf(stderr, "usage: %s [--quick] [--no-bench] [--bench-only] [--dir out|in|both]\n", argv[0]);
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
  CUDA_OK(foldcp::prepare_tri_gemm_mma());
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));

  const std::vector<Case> all = {
      {"tiny", 1, 8, 256, 1, 0},        // one tile row of 2 tiles per plane, one tile per CTA
      {"odd-np", 2, 3, 384, 1, 1},      // Np = 3 x 128: half-empty last N tile; 1 CTA runs all 36 tiles
      {"ragged", 1, 4, 1000, 1, 5},     // N < Np: column/row bounds; 5 CTAs, many tiles each
      {"ragged-odd", 1, 3, 777, 1, 3},  // N % 8 = 1: the last 16-byte chunk of each row holds one column
      {"cp-grid", 2, 4, 300, 2, 0},     // 2 x 2 destinations (tile side 152): owner per 8-column chunk
      {"mid", 1, 32, 1024, 1, 0},       // 1024 tiles on the SMs, phases wrap many times
      {"n1", 1, 2, 1, 1, 0},            // one token: Np = 128 < the 256-row B box (TMA zero fill)
      {"big", 1, 128, 2048, 1, 0},      // the timing shape
  };
  if (cases) {
    // The epilogue's 16-byte stores need 16-byte aligned destination rows: a target whose rows are
    // not is refused at launch, before anything runs.
    {
      foldcp::DevLayer L{};
      L.dim = L.hidden = 1;
      uint16_t* ab = nullptr;
      CUDA_OK(cudaMalloc(&ab, (size_t)2 * 128 * 128 * 2));
      foldcp::ZTarget zt{};
      zt.z[0] = ab;
      zt.ld[0] = 129;  // rows 258 bytes apart
      zt.plane[0] = 128 * 129;
      zt.chans[0] = 1;
      zt.tile_rows = zt.tile_cols = 128;
      zt.grid_cols = 1;
      zt.dloc = 1;
      zt.n_store = 100;
      const cudaError_t e = foldcp::launch_tri_gemm_to(L, ab, ab + 128 * 128, 128, 128 * 128, zt, 1, s);
      verdict(e == cudaErrorInvalidValue,
              std::string("a z target with rows 258 bytes apart is refused at launch: ") + cudaGetErrorName(e));
      CUDA_OK(cudaGetLastError());
      CUDA_OK(cudaFree(ab));
    }
    for (int dir = dir_lo; dir <= dir_hi; ++dir)
      for (const Case& c : all) {
        if (quick && c.N > 1024) continue;
        run_case(c, dir, s);
      }
  }
  if (do_bench && !quick) {
    for (int dir = dir_lo; dir <= dir_hi; ++dir) {
      bench(1, 128, 2048, dir, s);
      bench(1, 32, 4096, dir, s);
      bench(1, 256, 4096, dir, s);  // stage 2 of the (1, 4096, 256) layer
    }
  }
  CUDA_OK(cudaStreamDestroy(s));
  if (g_failures) {
    printf("tri_gemm_wgmma_test: FAIL (%d checks failed)\n", g_failures);
    return 1;
  }
  printf("tri_gemm_wgmma_test: PASS\n");
  return 0;
}
