// libfoldcp_cp.so's own translation unit. The library is the C API of foldcp_trimul.h,
// foldcp_cp.h and foldcp_a2a.h, linked whole from the kernels' and the CP team's static
// libraries (native/CMakeLists.txt); src/cp/exports_capi.map keeps only the foldcp_* symbols
// visible. Nothing is defined here: a shared library needs at least one source of its own.
#include "foldcp_a2a.h"
#include "foldcp_cp.h"
#include "foldcp_trimul.h"
