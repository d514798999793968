#!/usr/bin/env bash
# Builds libfoldcp_cpu.so, the CPU backend's native kernels, with gcc alone (no CUDA, no CMake).
# Usage: build.sh <build-dir> [java-home] [jni-resources-dir] (java-home: JAVA_HOME, else javac's JDK)
# Stages the library as <jni-resources-dir>/amd64/Linux/libfoldcp_cpu.so for the operators jar.
# Where there is no gcc or no JNI header it says why and builds nothing: the CPU backend then
# runs its pure-Java kernels.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build_dir="$1"
java_home="${2:-${JAVA_HOME:-}}"
if [[ -z "$java_home" ]] && command -v javac >/dev/null 2>&1; then
  java_home="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"
fi
jni_resources="${3:-}"
tag="[fold-cp native cpu]"
lib="libfoldcp_cpu.so"
cc="${CC:-gcc}"
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "$tag skipped: $cc not found on PATH (the CPU backend runs its pure-Java kernels)"
  exit 0
fi
if [[ ! -f "$java_home/include/jni.h" ]]; then
  echo "$tag skipped: no JNI header at $java_home/include/jni.h (the CPU backend runs its pure-Java kernels)"
  exit 0
fi
mkdir -p "$build_dir"
# -ffp-contract=off: no multiply-add is fused unless the source says fma (the kernels' results
# must equal the Java path's bit for bit). Each variant's file gets its own instruction set;
# cpu_jni.c, which runs first and picks the variant, gets none beyond x86-64.
flags=(-O3 -fPIC -std=gnu11 -ffp-contract=off -fno-math-errno -Wall -Wextra -I"$here"
       -I"$java_home/include" -I"$java_home/include/linux")
"$cc" "${flags[@]}" -mavx512f -mfma -mavx2 -c "$here/kernels_avx512.c" -o "$build_dir/kernels_avx512.o"
"$cc" "${flags[@]}" -mavx2 -mfma -c "$here/kernels_avx2.c" -o "$build_dir/kernels_avx2.o"
"$cc" "${flags[@]}" -mavx2 -c "$here/copy_avx2.c" -o "$build_dir/copy_avx2.o"
"$cc" "${flags[@]}" -c "$here/cpu_jni.c" -o "$build_dir/cpu_jni.o"
"$cc" -shared -Wl,--no-undefined -Wl,-z,noexecstack -o "$build_dir/$lib" \
  "$build_dir/cpu_jni.o" "$build_dir/kernels_avx512.o" "$build_dir/kernels_avx2.o" "$build_dir/copy_avx2.o" -lm
echo "$tag built $build_dir/$lib with $("$cc" --version | head -1)"
if [[ -n "$jni_resources" ]]; then
  mkdir -p "$jni_resources/amd64/Linux"
  cp "$build_dir/$lib" "$jni_resources/amd64/Linux/$lib"
  echo "$tag staged $jni_resources/amd64/Linux/$lib for the operators jar"
fi
