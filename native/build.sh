#!/usr/bin/env bash
# Builds the CPU backend's kernels (cpu/build.sh: gcc alone) and the CUDA kernels with CMake
# where the toolchains are present; says why and skips where not.
# Usage: build.sh <build-dir> [skip=true|false] [java-home] [jni-resources-dir]
#   java-home:          JDK whose include/jni.h the JNI library compiles against (Maven passes
#                       ${java.home}); without one, CMake looks at JAVA_HOME and FindJNI.
#   jni-resources-dir:  where libfoldcp_cpu.so and libfoldcp_jni.so are staged for the operators jar, as
#                       <dir>/amd64/Linux/libfoldcp_jni.so (the layout spark-rapids-jni uses:
#                       ${os.arch}/${os.name}/). Emptied first, so a build that does not produce
#                       the library (no nvcc, no JNI headers, skip) never ships a stale one.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build_dir="${1:-$here/build}"
skip="${2:-false}"
java_home="${3:-${JAVA_HOME:-}}"
jni_resources="${4:-}"
tag="[fold-cp native]"
jni_lib="libfoldcp_jni.so"
cp_lib="libfoldcp_cp_jni.so"   # the CP library: built only where NVSHMEM is found (CMakeLists.txt)
cpu_lib="libfoldcp_cpu.so"     # the CPU kernels: gcc only, no CUDA (cpu/build.sh)
if [[ -n "$jni_resources" ]]; then
  rm -f "$jni_resources/amd64/Linux/$jni_lib" "$jni_resources/amd64/Linux/$cp_lib" "$jni_resources/amd64/Linux/$cpu_lib"
  mkdir -p "$jni_resources"
fi
if [[ "$skip" == "true" ]]; then
  echo "$tag skipped: -Dfoldcp.native.skip=true (the operators jar gets no $cpu_lib and no $jni_lib)"
  exit 0
fi
# The CPU library first: it needs neither nvcc nor CMake, and every machine runs the CPU backend.
bash "$here/cpu/build.sh" "$build_dir-cpu" "$java_home" "$jni_resources"
if ! command -v nvcc >/dev/null 2>&1; then
  echo "$tag skipped: nvcc not found on PATH (the GPU route's $jni_lib is not built; the CPU backend needs only $cpu_lib)"
  exit 0
fi
if ! command -v cmake >/dev/null 2>&1; then
  echo "$tag skipped: cmake not found on PATH (the operators jar gets no $jni_lib)"
  exit 0
fi
mkdir -p "$build_dir"
echo "$tag building with $(nvcc --version | tail -1) into $build_dir"
# Only what the jar carries: the JNI libraries (the tests, the benchmark and libfoldcp_native.so
# are bin/gpu-run's, built on the device). Each target compiles the kernels on its own, and stage
# 3 alone is 256 kernels (issue 27).
cmake_args=(-S "$here" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$(command -v nvcc)"
            -DFOLDCP_BUILD_TESTS=OFF)
if [[ -n "$java_home" ]]; then
  cmake_args+=(-DFOLDCP_JAVA_HOME="$java_home")
fi
cmake "${cmake_args[@]}" >"$build_dir.log" 2>&1 \
  || { cat "$build_dir.log"; echo "$tag cmake configure failed"; exit 1; }
rm -f "$build_dir/$jni_lib" "$build_dir/$cp_lib"  # relinked below when its target exists; never left over from an older configure
targets=()
grep -q 'fold-cp: JNI headers in .*building libfoldcp_jni.so' "$build_dir.log" && targets+=(--target foldcp_jni)
grep -q 'fold-cp: and libfoldcp_cp_jni.so' "$build_dir.log" && targets+=(--target foldcp_cp_jni)
if [[ ${#targets[@]} -gt 0 ]]; then
  cmake --build "$build_dir" -j 2 "${targets[@]}" >>"$build_dir.log" 2>&1 \
    || { cat "$build_dir.log"; echo "$tag build failed"; exit 1; }
fi
echo "$tag built: $(cd "$build_dir" && ls *.so 2>/dev/null | tr '\n' ' ')"

system_libs="libcuda.so.1 libc.so.6 libstdc++.so.6 libm.so.6 libgcc_s.so.1 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2"
# check_and_stage LIB "EXTRA ALLOWED" WHY: fails unless every NEEDED entry of LIB is a system library
# or in EXTRA ALLOWED, then stages LIB for the operators jar.
check_and_stage() {
  local lib="$1" extra="$2" why="$3"
  if command -v readelf >/dev/null 2>&1; then
    local needed
    needed="$(readelf -d "$build_dir/$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
    for dep in $needed; do
      if [[ " $system_libs $extra " != *" $dep "* ]]; then
        echo "$tag $lib needs $dep: $why"
        exit 1
      fi
    done
    echo "$tag $lib needs: $needed"
  fi
  if [[ -n "$jni_resources" ]]; then
    mkdir -p "$jni_resources/amd64/Linux"
    cp "$build_dir/$lib" "$jni_resources/amd64/Linux/$lib"
    echo "$tag staged $jni_resources/amd64/Linux/$lib for the operators jar"
  fi
}

if [[ ! -f "$build_dir/$jni_lib" ]]; then
  echo "$tag $jni_lib not built: $(grep -h 'fold-cp: no JNI headers' "$build_dir.log" | sed 's/^-- fold-cp: //' | head -1)"
  exit 0
fi
# The JNI library must load with nothing but the system libraries: the CUDA runtime is linked
# statically and opens libcuda.so.1 itself (dlopen) at its first call.
check_and_stage "$jni_lib" "" "only libcuda and the C/C++ system libraries are allowed (static CUDA runtime)"

# The CP library: NVSHMEM's host library and our JNI library are its extra NEEDED entries (the
# Java side loads both first: NVSHMEM's from where it finds it, libfoldcp_jni.so from the jar,
# whose kernels, layers and CUDA runtime the CP library uses; the loader matches the NEEDED name
# to the loaded copy's SONAME). No CUDA runtime of its own, so no other entry is allowed.
if [[ ! -f "$build_dir/$cp_lib" ]]; then
  echo "$tag $cp_lib not built: $(grep -h 'fold-cp: NVSHMEM not found\|fold-cp: no JNI build' "$build_dir.log" | sed 's/^-- fold-cp: //' | head -1) (the GPU CP route needs it; everything else works without)"
  exit 0
fi
check_and_stage "$cp_lib" "libnvshmem_host.so.3 $jni_lib" "only NVSHMEM's host library, $jni_lib, libcuda and the C/C++ system libraries are allowed"
