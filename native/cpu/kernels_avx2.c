/* The AVX2 + FMA variant (256-bit vectors, 6 x 16 GEMM tile): compiled with -mavx2 -mfma. */
#define VW 8
#define NAME_STRING "avx2+fma, 6x16 fp32 tile"
#include "kernels_impl.h"
