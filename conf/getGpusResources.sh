#!/usr/bin/env bash
# Spark GPU discovery script: prints the GPUs of this machine as a Spark ResourceInformation
# JSON, e.g. {"name": "gpu", "addresses": ["0","1"]}. Honours CUDA_VISIBLE_DEVICES when set, so
# that a container or a scheduler that restricts devices is respected. Prints an empty list
# (not an error) when there is no GPU, so that executors still start and the CPU route runs.
# FOLDCP_GPU_CLAIM_DIR: one GPU per Worker on a host with several Workers (below).
set -euo pipefail
addresses=()
if [[ -n "${CUDA_VISIBLE_DEVICES:-}" ]]; then
  IFS=',' read -r -a addresses <<<"${CUDA_VISIBLE_DEVICES}"
elif command -v nvidia-smi >/dev/null 2>&1; then
  while IFS= read -r idx; do
    [[ -n "$idx" ]] && addresses+=("$(echo "$idx" | tr -d ' ')")
  done < <(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null || true)
fi
# Several Workers on one host (Spark's local-cluster, or one standalone Worker per GPU): each
# Worker runs this script once and would otherwise report every GPU, so that their executors
# could land on the same one. With FOLDCP_GPU_CLAIM_DIR set (a folder shared by the Workers of
# the host, empty when they start), each call claims the first GPU nobody has claimed yet (mkdir
# is atomic) and reports only that one; a call that finds none left reports an empty list.
if [[ -n "${FOLDCP_GPU_CLAIM_DIR:-}" ]]; then
  mkdir -p "$FOLDCP_GPU_CLAIM_DIR"
  claimed=()
  for a in "${addresses[@]+"${addresses[@]}"}"; do
    if mkdir "$FOLDCP_GPU_CLAIM_DIR/gpu-$a" 2>/dev/null; then
      claimed=("$a")
      break
    fi
  done
  addresses=("${claimed[@]+"${claimed[@]}"}")
fi
json=""
for a in "${addresses[@]+"${addresses[@]}"}"; do
  json+="${json:+,}\"$a\""
done
echo "{\"name\": \"gpu\", \"addresses\": [${json}]}"
