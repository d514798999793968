#!/usr/bin/env bash
# One-call GPU check for the single-GPU TriMul, meant for the device machine (one H200):
#   build (cmake, sm_90a, ptxas report) -> correctness tests -> our benchmark with per-stage
#   breakdown -> PyTorch peers (eager, torch.compile) with ours in the same process -> a short
#   table last. If the tests fail or crash, compute-sanitizer runs the quick tests.
# Logs go to $OUT (or /tmp/foldcp-gpu-check when OUT is unset).
# Usage: native/gpu-check.sh [--no-compile] [--no-peers] [--shapes "B,N,D;..."] [--deadline SECONDS]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${OUT:-/tmp/foldcp-gpu-check}"
mkdir -p "$out"
compile=1
peers=1
shapes="1,1024,128;1,2048,128;1,2048,256;1,4096,128;1,4096,256"
deadline=540
compile_max_n=2048
ncu_shape=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-compile) compile=0 ;;
    --no-peers) peers=0 ;;
    --shapes) shapes="$2"; shift ;;
    --deadline) deadline="$2"; shift ;;
    --compile-max-n) compile_max_n="$2"; shift ;;
    --ncu) ncu_shape="$2"; shift ;;        # profile the three kernels of one forward at B,N,D
    *) echo "unknown argument $1"; exit 2 ;;
  esac
  shift
done
t_start=$(date +%s)
left() { echo $(( deadline - ($(date +%s) - t_start) )); }
limit() { local l; l=$(left); (( l > $1 )) && l=$1; (( l < 5 )) && l=5; echo "$l"; }

bdir="$here/build"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,memory.total,temperature.gpu,power.draw \
  --format=csv 2>&1 | tee "$out/build.log"
gen=""
command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
echo "== build" | tee -a "$out/build.log"
{ cmake -S "$here" -B "$bdir" $gen -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DFOLDCP_PTXAS_VERBOSE=ON \
  && cmake --build "$bdir" -j "$(nproc)"; } >>"$out/build.log" 2>&1
build_rc=$?
grep -E "registers|spill" "$out/build.log" | paste - - | sed -E 's/ptxas info *: //g' | sort | uniq -c | head -40
if [[ $build_rc -ne 0 ]]; then
  tail -60 "$out/build.log"
  echo "BUILD FAILED"
  exit 1
fi
if command -v cuobjdump >/dev/null 2>&1; then
  echo "== SASS opcode histogram, tri_gemm_wgmma_kernel<true, true> (outgoing, TMA-store epilogue)" >>"$out/build.log"
  cuobjdump --dump-sass --function '_ZN6foldcp21tri_gemm_wgmma_kernelILb1ELb1EEEv14CUtensorMap_stS1_S1_NS_7ZTargetEiiii' \
    "$bdir/libfoldcp_native.so" 2>/dev/null | grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+[A-Z0-9_.]+' | awk '{print $2}' \
    | sed 's/\..*//' | sort | uniq -c | sort -rn | head -25 >>"$out/build.log"
fi
echo "== build ok ($(($(date +%s) - t_start)) s)"

echo "== tests"
timeout "$(limit 200)" "$bdir/foldcp_trimul_test" 2>&1 | tee "$out/test.log"
test_rc=${PIPESTATUS[0]}
if [[ $test_rc -ne 0 ]]; then
  echo "== tests failed (rc=$test_rc): compute-sanitizer on the quick cases"
  timeout "$(limit 150)" compute-sanitizer --tool memcheck --print-limit 20 "$bdir/foldcp_trimul_test" --quick \
    >"$out/sanitizer.log" 2>&1
  tail -40 "$out/sanitizer.log"
fi

echo "== benchmark (ours, per stage)"
timeout "$(limit 150)" "$bdir/foldcp_trimul_bench" --csv "$out/bench_ours.csv" --shapes "$shapes" 2>&1 | tee "$out/bench.log"


if [[ -n "$ncu_shape" ]] && command -v ncu >/dev/null 2>&1; then
  echo "== ncu on one forward at $ncu_shape ($(left) s left)"
  timeout "$(limit 150)" ncu --clock-control none -k 'regex:proj_in|proj_out|tri_gemm' -c 3 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
    --section ComputeWorkloadAnalysis --section LaunchStats \
    "$bdir/foldcp_trimul_bench" --shapes "$ncu_shape" >"$out/ncu.log" 2>&1
  grep -E "proj_|tri_gemm|Duration|Throughput|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued|Issue Slots Busy|Executed Ipc A|Theoretical Occ" "$out/ncu.log" | head -120
fi

if [[ $peers -eq 1 ]]; then
  echo "== PyTorch peers ($(left) s left)"
  extra=()
  [[ $compile -eq 0 ]] && extra+=(--no-compile)
  PYTHONUNBUFFERED=1 timeout "$(limit 400)" python3 "$root/bench/torch_peers.py" --lib "$bdir/libfoldcp_native.so" \
    --csv "$out/peers.csv" --shapes "$shapes" --compile-max-n "$compile_max_n" --budget-s "$(( $(left) - 10 ))" \
    "${extra[@]}" 2>&1 | tee "$out/peers.log"
fi

{
  echo
  echo "================ SUMMARY ($(($(date +%s) - t_start)) s) ================"
  grep -E "^(FAIL|PASS)" "$out/test.log" | awk '{print $1}' | sort | uniq -c | tr '\n' ' '
  echo
  grep -E "^FAIL" "$out/test.log" | head -10
  grep -E "^TESTS" "$out/test.log"
  grep -E "^(PASS|FAIL) +(outgoing|incoming)" "$out/peers.log" 2>/dev/null
  echo "-- ours per stage (ms)"
  cat "$out/bench.log" | grep -vE "^device"
  echo "-- vs peers"
  sed -n '/=== TriMul/,$p' "$out/peers.log" 2>/dev/null || true
} | tee "$out/summary.txt"
[[ $test_rc -eq 0 ]]
