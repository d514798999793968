// Part of libfoldcp_cp_jni.so: each CUDA runtime function of cudart_shared.inc, defined here
// (hidden: never exported) as a jump through the PLT to libfoldcp_jni.so's foldcp_cudart_<name>
// (cudart_export.cpp). So the CP host code, NVSHMEM's device library and the device-link stub
// that registers the CP kernels all call the one static CUDA runtime inside libfoldcp_jni.so,
// the same one the single-GPU kernels and their layers live in (issue 24). x86-64 only.
#define FOLDCP_CUDART(name)                                                              \
  asm(".pushsection .text\n"                                                             \
      ".globl " #name "\n"                                                               \
      ".hidden " #name "\n"                                                              \
      ".type " #name ", @function\n" #name ":\n"                                         \
      "\tendbr64\n"                                                                      \
      "\tjmp foldcp_cudart_" #name "@PLT\n"                                              \
      ".size " #name ", . - " #name "\n"                                                 \
      ".popsection\n");
#include "cudart_shared.inc"
