// Benchmark of the single-GPU TriMul forward (ours only; bench/torch_peers.py runs the PyTorch
// peers and ours in one process for the ratios). Per (B, N, D) and direction: median ms of
// >= 10 timed forwards after warm-up (CUDA events), effective TFLOP/s with
// FLOPs = 2 B N^3 D + 12 B N^2 D^2, fraction of the 792 TFLOP/s measured bf16 GEMM ceiling, and a
// per-stage breakdown (median of profiled runs). Inputs: fresh random bf16 x (hash-generated on
// the device), a mask with ~5% zeros, random weights, no biases, no residual.
// Usage: foldcp_trimul_bench [--csv FILE] [--iters K] [--shapes "B,N,D;B,N,D;..."]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "foldcp_trimul.h"

#define CUDA_OK(call)                                                                                  \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess) {                                                                           \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, #call); \
      exit(2);                                                                                         \
    }                                                                                                  \
  } while (0)

__device__ __forceinline__ uint32_t hash32(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return (uint32_t)k;
}

__global__ void fill_x(uint16_t* x, size_t n, uint64_t seed) {
  for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
    // approx. normal: sum of 4 uniforms, centered, unit variance
    float s = 0.f;
    for (int q = 0; q < 4; ++q) s += (hash32(seed * 0x9E3779B97F4A7C15ull + 4 * k + q) >> 8) * (1.0f / 16777216.0f);
    const float v = (s - 2.0f) * 1.7320508f;
    uint32_t u = __float_as_uint(v);
    u += 0x7fffu + ((u >> 16) & 1u);
    x[k] = (uint16_t)(u >> 16);
  }
}

__global__ void fill_mask(uint8_t* m, size_t n, uint64_t seed) {
  for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x)
    m[k] = (hash32(seed + k) % 100) < 5 ? 0 : 1;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char** argv) {
  std::string csv, shapes = "1,1024,128;1,2048,128;1,2048,256;1,4096,128;1,4096,256";
  int iters = 10;
  for (int a = 1; a < argc; ++a) {
    if (!strcmp(argv[a], "--csv") && a + 1 < argc) csv = argv[++a];
    else if (!strcmp(argv[a], "--iters") && a + 1 < argc) iters = std::max(10, atoi(argv[++a]));
    else if (!strcmp(argv[a], "--shapes") && a + 1 < argc) shapes = argv[++a];
  }
  cudaDeviceProp p{};
  CUDA_OK(cudaGetDeviceProperties(&p, 0));
  printf("device: %s, %d SMs\n", p.name, p.multiProcessorCount);
  FILE* f = csv.empty() ? nullptr : fopen(csv.c_str(), "w");
  if (f) fprintf(f, "direction,B,N,D,median_ms,tflops,frac_792,stage1_ms,stage2_ms,stage3_ms,peak_gib,status\n");
  printf("%-9s %-14s %10s %8s %7s | %9s %9s %9s | %8s\n", "direction", "B,N,D", "median_ms", "TFLOP/s", "of792",
         "s1_ms", "s2_ms", "s3_ms", "peak_GiB");

  std::vector<std::vector<int64_t>> list;
  {
    size_t pos = 0;
    while (pos < shapes.size()) {
      size_t e = shapes.find(';', pos);
      if (e == std::string::npos) e = shapes.size();
      long long b, n, d;
      if (sscanf(shapes.substr(pos, e - pos).c_str(), "%lld,%lld,%lld", &b, &n, &d) == 3) list.push_back({b, n, d});
      pos = e + 1;
    }
  }
  uint64_t seed = 1;
  for (auto& s : list) {
    const int64_t B = s[0], N = s[1], D = s[2];
    for (int dir = 0; dir < 2; ++dir) {
      const char* dname = dir == 0 ? "outgoing" : "incoming";
      // weights
      std::vector<float> lniw(D, 1.f), lnib(D, 0.f), lnow(D, 1.f), lnob(D, 0.f), pin(2 * D * D), gin(2 * D * D),
          pout(D * D), gout(D * D);
      uint64_t r = 0x1234 + seed;
      auto uni = [&]() {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        return ((r >> 40) * (1.0 / 16777216.0)) * 2.0 - 1.0;
      };
      const double sc = 1.0 / std::sqrt((double)D);
      for (auto* v : {&pin, &gin, &pout, &gout})
        for (auto& e : *v) e = (float)(sc * uni());
      for (auto& e : lniw) e = (float)(1.0 + 0.1 * uni());
      for (auto& e : lnow) e = (float)(1.0 + 0.1 * uni());
      foldcp_trimul_weights w{};
      w.dim = D;
      w.direction = dir;
      w.residual = 0;
      w.eps = 1e-5f;
      w.norm_in_weight = lniw.data();
      w.norm_in_bias = lnib.data();
      w.p_in_weight = pin.data();
      w.g_in_weight = gin.data();
      w.norm_out_weight = lnow.data();
      w.norm_out_bias = lnob.data();
      w.p_out_weight = pout.data();
      w.g_out_weight = gout.data();
      foldcp_trimul_layer* layer = nullptr;
      if (foldcp_trimul_create(&w, &layer) != FOLDCP_OK) {
        printf("create failed: %s\n", foldcp_last_error());
        return 1;
      }
      size_t ws = 0;
      if (foldcp_trimul_workspace_size(B, N, D, &ws) != FOLDCP_OK) {
        printf("shape refused: %s\n", foldcp_last_error());
        return 1;
      }
      const size_t nel = (size_t)B * N * N * D, ntok = (size_t)B * N * N;
      void *dx = nullptr, *dout = nullptr, *dws = nullptr;
      uint8_t* dm = nullptr;
      const double peak = (double)(2 * nel * 2 + ntok + ws) / (1u << 30);
      if (cudaMalloc(&dx, nel * 2) != cudaSuccess || cudaMalloc(&dout, nel * 2) != cudaSuccess ||
          cudaMalloc(&dws, ws) != cudaSuccess || cudaMalloc(&dm, ntok) != cudaSuccess) {
        cudaGetLastError();
        printf("%-9s %lld,%lld,%lld  out of memory (needs %.1f GiB)\n", dname, (long long)B, (long long)N,
               (long long)D, peak);
        if (f) fprintf(f, "%s,%lld,%lld,%lld,,,,,,,%.2f,oom\n", dname, (long long)B, (long long)N, (long long)D, peak);
        cudaFree(dx);
        cudaFree(dout);
        cudaFree(dws);
        cudaFree(dm);
        foldcp_trimul_destroy(layer);
        continue;
      }
      fill_x<<<4096, 256>>>((uint16_t*)dx, nel, seed++);
      fill_mask<<<4096, 256>>>(dm, ntok, seed++);
      CUDA_OK(cudaGetLastError());
      cudaStream_t st;
      CUDA_OK(cudaStreamCreate(&st));
      for (int k = 0; k < 2; ++k)
        if (foldcp_trimul_forward(layer, dx, dm, dout, B, N, dws, ws, nullptr, st) != FOLDCP_OK) {
          printf("forward failed: %s\n", foldcp_last_error());
          return 1;
        }
      CUDA_OK(cudaStreamSynchronize(st));
      std::vector<double> t;
      cudaEvent_t e0, e1;
      CUDA_OK(cudaEventCreate(&e0));
      CUDA_OK(cudaEventCreate(&e1));
      for (int k = 0; k < iters; ++k) {
        CUDA_OK(cudaEventRecord(e0, st));
        foldcp_trimul_forward(layer, dx, dm, dout, B, N, dws, ws, nullptr, st);
        CUDA_OK(cudaEventRecord(e1, st));
        CUDA_OK(cudaEventSynchronize(e1));
        float ms = 0;
        CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
      }
      std::vector<double> s1, s2, s3;
      for (int k = 0; k < 5; ++k) {
        float sm[3];
        foldcp_forward_options opts = FOLDCP_FORWARD_OPTIONS_INIT;
        opts.stage_ms = sm;
        if (foldcp_trimul_forward(layer, dx, dm, dout, B, N, dws, ws, &opts, st) != FOLDCP_OK) {
          printf("profiled forward failed: %s\n", foldcp_last_error());
          return 1;
        }
        s1.push_back(sm[0]);
        s2.push_back(sm[1]);
        s3.push_back(sm[2]);
      }
      CUDA_OK(cudaDeviceSynchronize());
      const double med = median(t);
      const double tf = foldcp_trimul_flops(B, N, D, 0) / (med * 1e-3) / 1e12;
      printf("%-9s %-14s %10.3f %8.1f %6.1f%% | %9.3f %9.3f %9.3f | %8.2f\n", dname,
             (std::to_string(B) + "," + std::to_string(N) + "," + std::to_string(D)).c_str(), med, tf,
             100.0 * tf / 792.0, median(s1), median(s2), median(s3), peak);
      fflush(stdout);
      if (f)
        fprintf(f, "%s,%lld,%lld,%lld,%.4f,%.2f,%.4f,%.4f,%.4f,%.4f,%.2f,ok\n", dname, (long long)B, (long long)N,
                (long long)D, med, tf, tf / 792.0, median(s1), median(s2), median(s3), peak);
      cudaEventDestroy(e0);
      cudaEventDestroy(e1);
      cudaStreamDestroy(st);
      cudaFree(dx);
      cudaFree(dout);
      cudaFree(dws);
      cudaFree(dm);
      foldcp_trimul_destroy(layer);
    }
  }
  if (f) fclose(f);
  return 0;
}
