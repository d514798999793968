#!/usr/bin/env bash
# Builds the CUDA kernels with CMake where the toolchain is present; says why and skips where not.
# Usage: build.sh <build-dir> [skip=true|false]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build_dir="${1:-$here/build}"
skip="${2:-false}"
tag="[fold-cp native]"
if [[ "$skip" == "true" ]]; then
  echo "$tag skipped: -Dfoldcp.native.skip=true"
  exit 0
fi
if ! command -v nvcc >/dev/null 2>&1; then
  echo "$tag skipped: nvcc not found on PATH (the CPU backend needs no native code)"
  exit 0
fi
if ! command -v cmake >/dev/null 2>&1; then
  echo "$tag skipped: cmake not found on PATH"
  exit 0
fi
mkdir -p "$build_dir"
echo "$tag building with $(nvcc --version | tail -1) into $build_dir"
cmake -S "$here" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" >"$build_dir.log" 2>&1 \
  || { cat "$build_dir.log"; echo "$tag cmake configure failed"; exit 1; }
cmake --build "$build_dir" -j 2 >>"$build_dir.log" 2>&1 || { cat "$build_dir.log"; echo "$tag build failed"; exit 1; }
echo "$tag built: $(cd "$build_dir" && ls *.so 2>/dev/null | tr '\n' ' ')"
