/*
 * The CPU backend's kernels, written once for a vector width: included by kernels_avx512.c
 * (VW = 16) and kernels_avx2.c (VW = 8), each compiled for its instruction set; cpu_jni.c picks
 * one at run time from the CPU's features.
 *
 * The arithmetic is the pure-Java path's (org.foldcp.ops.cpu.Stages, Gemm, Simd), operation by
 * operation, so that every variant gives the same bits:
 *   - GEMM: every element of C starts from 0 (or C) and takes one fused multiply-add per k, in
 *     ascending k; a k-block boundary only stores and reloads the exact fp32 value. An element's
 *     value depends neither on its tile, nor on how M or N are split, nor on the vector width.
 *   - LayerNorm sums: eight partial sums, lane l holding the terms with c = l mod 8, added in the
 *     fixed tree ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)) (Stages.sum8), hence 256-bit accumulators
 *     in both variants.
 *   - sigmoid: Simd.sigmoid's operations lane-wise (Cephes-style exp, fma where it has fma).
 * Compiled with -ffp-contract=off: no multiply-add is fused unless written as one.
 *
 * One header per kernel family, included here in this order (each uses what the ones before it
 * define, and none is compiled on its own):
 *   kernels_vec.h         the vector type vf and its V_* operations, tile and block sizes, NAME()
 *   kernels_gemm.h        GEMM: packing, register tile, blocked loop
 *   kernels_bf16.h        bf16 <-> fp32 conversions
 *   kernels_layer_norm.h  LayerNorm from bf16 or fp32
 *   kernels_gates.h       sigmoid, gate_projection, gate_output
 *   kernels_fma_peak.h    the FMA peak probe
 * followed by the variant's function table (kernels.h).
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

#include "kernels_vec.h"
#include "kernels_gemm.h"
#include "kernels_bf16.h"
#include "kernels_layer_norm.h"
#include "kernels_gates.h"
#include "kernels_fma_peak.h"

const struct foldcp_cpu_kernels NAME(foldcp_cpu_kernels) = {
    .name = NAME_STRING,
    .mr = MR,
    .nr = NR,
    .gemm = NAME(gemm),
    .layer_norm_bf16 = NAME(layer_norm_bf16),
    .layer_norm_f32 = NAME(layer_norm_f32),
    .gate_projection = NAME(gate_projection),
    .gate_output = NAME(gate_output),
    .fma_chains = NAME(fma_chains),
};
