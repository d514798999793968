// Part of libfoldcp_jni.so: for each CUDA runtime function of cudart_shared.inc, an exported
// foldcp_cudart_<name> that jumps to the static runtime's (hidden) <name>, so that
// libfoldcp_cp_jni.so uses this library's runtime instead of carrying its own (issue 24: one
// CUDA runtime per executor). A jump keeps every argument register and the stack as the caller
// left them, so the forwarder has the callee's exact signature without declaring it. The
// references here also make sure the runtime is linked in whatever the JNI code itself calls.
// x86-64 only (the libraries are built for amd64 Linux only).
#define FOLDCP_CUDART(name)                                                              \
  asm(".pushsection .text\n"                                                             \
      ".globl foldcp_cudart_" #name "\n"                                                 \
      ".type foldcp_cudart_" #name ", @function\n"                                       \
      "foldcp_cudart_" #name ":\n"                                                       \
      "\tendbr64\n"                                                                      \
      "\tjmp " #name "\n"                                                                \
      ".size foldcp_cudart_" #name ", . - foldcp_cudart_" #name "\n"                     \
      ".popsection\n");
#include "cudart_shared.inc"
