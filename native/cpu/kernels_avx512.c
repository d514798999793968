/* The AVX-512 variant (512-bit vectors, 8 x 32 GEMM tile): compiled with -mavx512f -mfma. */
#define VW 16
#define NAME_STRING "avx512f, 8x32 fp32 tile"
#include "kernels_impl.h"
