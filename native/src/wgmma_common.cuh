// Device helpers of the Hopper asynchronous path (sm_90a), written once for the three wgmma
// kernels (stage1_proj_in.cu, stage2_tri_gemm.cu, stage3_proj_out.cu): the CTA shape they share,
// mbarriers with a watchdog, a ring position, TMA loads and stores, wgmma shared-memory
// descriptors, fences and the wgmma shapes the kernels use, setmaxnreg, named barriers; and on
// the host the look-up of cuTensorMapEncodeTiled, the one tensor-map layout, and the raising of a
// kernel's shared-memory limit.
#pragma once
#include <cuda.h>          // CUtensorMap and its enums (types only: the driver entry point is looked up)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000

#include <atomic>
#include <cstdint>

#include "common.cuh"

// Device-side watchdog: a consumer or the producer that waits on one mbarrier for more than about
// 10 s faults (a store to address 0: the host sees an illegal-address launch error instead of a
// hang that eats the device call).
// The check runs only every 4096 failed polls. 0 turns it off.
#ifndef FOLDCP_WGMMA_WATCHDOG
#define FOLDCP_WGMMA_WATCHDOG 1
#endif

namespace foldcp {

// The CTA of every wgmma kernel: one producer warpgroup (TMA loads) and two consumer warpgroups
// (wgmma + epilogue), one CTA per SM. The producers give registers back (setmaxnreg.dec) so that
// the consumers can have more: 128 * 40 + 256 * 232 = 64512 <= 65536 registers of the SM.
namespace wgcta {
constexpr int CONSUMERS = 2;                    // consumer warpgroups
constexpr int THREADS = 128 * (1 + CONSUMERS);  // 384
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
}  // namespace wgcta

// ---------------------------------------------------------------- mbarrier (shared::cta)
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Producer: one arrival plus the number of bytes the TMA loads of this phase will complete.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}
__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}
// Waits until the phase of `bar` with the given parity has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  if (mbar_try_wait(bar, parity)) return;
#if FOLDCP_WGMMA_WATCHDOG
  uint32_t polls = 0;
  uint64_t t0 = 0;
  while (!mbar_try_wait(bar, parity)) {
    if ((++polls & 4095u) == 0) {
      const uint64_t t = global_ns();
      if (t0 == 0) {
        t0 = t;
      } else if (t - t0 > 10000000000ull) {
        // No printf here: a function call inside the wgmma pipeline makes ptxas serialize the
        // wgmmas (C7510). The host sees the fault as a launch failure (an illegal address). Not
        // __trap(): its noreturn exit inside a consumer's wait held the consumers to the launch
        // bound's 168 registers in ptxas instead of their setmaxnreg budget (stage 1 above D = 256
        // spilled 144-208 B with it, 0-56 B with this store, which ptxas treats as any other
        // instruction of the wait loop; the wide stage 3 104-296 B against 0-88 B).
        asm volatile("st.global.u32 [%0], 0;\n" ::"l"(0ull) : "memory");
      }
    }
  }
#else
  while (!mbar_try_wait(bar, parity)) {
  }
#endif
}
// After mbar_init (by the initializing thread, before the CTA synchronizes): makes the
// initialized barriers visible to the async proxy (the TMA unit completes transactions on them).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Position in a ring of STAGES slots, each with a full and an empty barrier: producer and
// consumers walk the same sequence of uses, so use u is slot u % STAGES in phase (u / STAGES) & 1.
// The producer waits on a slot's empty barrier with parity phase ^ 1 (a fresh barrier's
// "previous" phase counts as complete, so its first STAGES waits return at once), the consumers
// on its full barrier with parity phase.
template <int STAGES>
struct RingPos {
  int slot = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void next() {
    if (++slot == STAGES) {
      slot = 0;
      phase ^= 1u;
    }
  }
};

// ---------------------------------------------------------------- TMA
// 3D tiled load of the box at (c0 innermost, c1, c2) into 1024-aligned shared memory, completing
// its bytes on `bar`. Out-of-range elements (rows >= Np of a partial last N tile) are zero-filled
// and still count towards the transaction bytes.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// ---------------------------------------------------------------- wgmma
// Shared-memory matrix descriptor (sm_90 wgmma): bits 0-13 start address >> 4, 16-29 leading
// dimension byte offset >> 4, 32-45 stride dimension byte offset >> 4, 49-51 base offset (0: every
// tile starts 1024-aligned, i.e. at the start of the 128B swizzle pattern), 62-63 swizzle mode
// (1 = 128B). The 14-bit address field holds any shared address (< 256 KiB) >> 4, so advancing the
// start address inside a tile is a plain addition to the low bits.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  return (uint64_t)((addr & 0x3FFFFu) >> 4) | ((uint64_t)((lbo_bytes >> 4) & 0x3FFFu) << 16) |
         ((uint64_t)((sbo_bytes >> 4) & 0x3FFFu) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// The wgmma shapes of the three kernels. Accumulator operands are named 8 at a time (ACC8).
// scale_d = 0 ignores (overwrites) d; each wrapper is one wgmma.mma_async, issued after
// wgmma_fence and completed through wgmma_commit / wgmma_wait.
#define ACC8(i)                                                                                    \
  "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])

// d[64 x 256] (+)= A[64 x 16] * B[16 x 256], both from shared memory through descriptors.
// TRANS = 0: A is K-major (M x K, K contiguous) and B is K-major (N x K, K contiguous);
// TRANS = 1: both are M/N-major (imm-trans-a = imm-trans-b = 1).
// Accumulator fragment (per thread of the warpgroup, warp w, lane l): d[4j + 2h + e] is row
// 16 w + l / 4 + 8 h, column 8 j + 2 (l % 4) + e (j < 32, h, e in {0, 1}).
template <int TRANS>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, %131, %131;\n"
      "}\n"
      : ACC8(0), ACC8(8), ACC8(16), ACC8(24), ACC8(32), ACC8(40), ACC8(48), ACC8(56), ACC8(64), ACC8(72),
        ACC8(80), ACC8(88), ACC8(96), ACC8(104), ACC8(112), ACC8(120)
      : "l"(da), "l"(db), "r"(scale_d), "n"(TRANS)
      : "memory");
}

// d[64 x 128] (+)= A[64 x 16] (registers) * B[16 x 128] (shared memory, K-major, descriptor db).
// A fragment of thread l of warp w of the warpgroup (the mma.m16n8k16 A layout for rows
// 16 w .. 16 w + 15): a[0] = (row l/4, cols 2(l%4) + {0,1}), a[1] = row + 8, a[2] = cols + 8,
// a[3] = row + 8 and cols + 8. Accumulator d[4j + 2h + e] = (row 16 w + l/4 + 8 h, col 8 j + 2(l%4) + e).
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n"
      "}\n"
      : ACC8(0), ACC8(8), ACC8(16), ACC8(24), ACC8(32), ACC8(40), ACC8(48), ACC8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d)
      : "memory");
}

// As wgmma_m64n128k16_rs with A from shared memory too (K-major, descriptor da): stage 1 above
// D = 256 takes the channels past 256 of LN_in(x) this way.
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : ACC8(0), ACC8(8), ACC8(16), ACC8(24), ACC8(32), ACC8(40), ACC8(48), ACC8(56)
      : "l"(da), "l"(db), "r"(scale_d)
      : "memory");
}

// d[64 x 64] (+)= A[64 x 16] * B[16 x 64], both K-major in shared memory (descriptors da, db).
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : ACC8(0), ACC8(8), ACC8(16), ACC8(24)
      : "l"(da), "l"(db), "r"(scale_d)
      : "memory");
}

// d[64 x 64] (+)= A[64 x 16] (registers, layout as in wgmma_m64n128k16_rs) * B[16 x 64] (descriptor).
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n"
      "}\n"
      : ACC8(0), ACC8(8), ACC8(16), ACC8(24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d)
      : "memory");
}
// d[64 x 32] (+)= A[64 x 16] * B[16 x 32], both K-major in shared memory (the wide stage 3's p_out).
__device__ __forceinline__ void wgmma_m64n32k16_ss(float (&d)[16], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
      "}, %16, %17, p, 1, 1, 0, 0;\n"
      "}\n"
      : ACC8(0), ACC8(8)
      : "l"(da), "l"(db), "r"(scale_d)
      : "memory");
}

// d[64 x 32] (+)= A[64 x 16] (registers, layout as in wgmma_m64n128k16_rs) * B[16 x 32] (the wide
// stage 3's g_out).
__device__ __forceinline__ void wgmma_m64n32k16_rs(float (&d)[16], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
      "}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n"
      "}\n"
      : ACC8(0), ACC8(8)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d)
      : "memory");
}
#undef ACC8

template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

// ---------------------------------------------------------------- bulk copies, named barriers, proxy fences
// 2D / 4D tiled TMA loads (as tma_load_3d; coordinates innermost first).
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}
// Prefetch of a box of a 4D tensor map into L2 (no shared memory, no barrier): what a later
// tma_load_4d of the same box then finds in L2.
__device__ __forceinline__ void tma_prefetch_4d(const CUtensorMap* map, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
// Prefetch of `bytes` (a multiple of 16) from global memory at a 16-byte aligned address into L2.
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
}
// TMA stores of a box from shared memory (128B-swizzled as the map says) into a 3D / 4D tensor;
// elements outside the tensor's dims are not written. One bulk async-group per commit: the
// issuing thread waits with bulk_wait_read<n> before it (or its warp) overwrites the source,
// and with bulk_wait_all before the CTA exits.
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(src)
               : "memory");
}
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// At most N of this thread's bulk groups may still be reading their shared-memory source.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Named barriers: bar_sync waits until `count` threads (a multiple of 32) arrived at barrier `id`,
// itself included; bar_arrive only counts the calling warp's threads and goes on.
__device__ __forceinline__ void bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
// Makes this thread's generic-proxy writes to shared memory visible to the async proxy (wgmma
// operand reads, TMA) once the threads have synchronized.
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// wgmma_wait<n> for an n known only after unrolling (a loop index): the switch folds away. An n
// over 6 waits for all groups (stricter, so still correct).
__device__ __forceinline__ void wgmma_wait_upto(int n) {
  switch (n) {
    case 0: wgmma_wait<0>(); break;
    case 1: wgmma_wait<1>(); break;
    case 2: wgmma_wait<2>(); break;
    case 3: wgmma_wait<3>(); break;
    case 4: wgmma_wait<4>(); break;
    case 5: wgmma_wait<5>(); break;
    case 6: wgmma_wait<6>(); break;
    default: wgmma_wait<0>(); break;
  }
}

// ---------------------------------------------------------------- host: tensor-map encoder
// cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda). Looked up until it
// succeeds once; a failed look-up is not cached (the driver may come up later). One cached
// pointer per process (an inline function's static).
inline cudaError_t get_encode(PFN_cuTensorMapEncodeTiled_v12000* out) {
  static std::atomic<PFN_cuTensorMapEncodeTiled_v12000> g_encode{nullptr};
  PFN_cuTensorMapEncodeTiled_v12000 f = g_encode.load(std::memory_order_acquire);
  if (f == nullptr) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess) return e;
    if (q != cudaDriverEntryPointSuccess || p == nullptr) return cudaErrorSymbolNotFound;
    f = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    g_encode.store(f, std::memory_order_release);
  }
  *out = f;
  return cudaSuccess;
}

// Tiled bf16 map of `rank` dims (innermost first; strides in bytes for dims 1..rank-1), 128B
// swizzle, zero fill out of range: the one layout every TMA load and store here uses. Maps that
// are only stored through pass no L2 promotion (a load-side hint).
inline cudaError_t encode_bf16(CUtensorMap* m, const void* base, int rank, const cuuint64_t* dims,
                               const cuuint64_t* strides, const cuuint32_t* box,
                               CUtensorMapL2promotion promo = CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
  PFN_cuTensorMapEncodeTiled_v12000 enc = nullptr;
  const cudaError_t e = get_encode(&enc);
  if (e != cudaSuccess) return e;
  const cuuint32_t estr[5] = {1, 1, 1, 1, 1};
  const CUresult r = enc(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, (cuuint32_t)rank, const_cast<void*>(base), dims, strides,
                         box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, promo,
                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

// Raises kernel K's dynamic shared-memory limit to `smem` bytes on device dev, once per process
// and device: `done` holds a bit per device (< 64) where K is raised already (a device >= 64 is
// raised every time).
template <auto K>
cudaError_t raise_smem_once(int smem, int dev) {
  static std::atomic<uint64_t> done{0};
  const uint64_t bit = dev < 64 ? (1ull << dev) : 0;
  if (bit != 0 && (done.load(std::memory_order_acquire) & bit)) return cudaSuccess;
  const cudaError_t e = cudaFuncSetAttribute(K, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e == cudaSuccess && bit != 0) done.fetch_or(bit, std::memory_order_acq_rel);
  return e;
}

// The current device and its SM count (the persistent kernels' grid).
inline cudaError_t sm_count(int* dev, int* sms) {
  cudaError_t e = cudaGetDevice(dev);
  if (e != cudaSuccess) return e;
  return cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, *dev);
}

}  // namespace foldcp
