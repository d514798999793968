#!/usr/bin/env bash
# Spark GPU discovery script: prints the GPUs of this machine as a Spark ResourceInformation
# JSON, e.g. {"name": "gpu", "addresses": ["0","1"]}. Honours CUDA_VISIBLE_DEVICES when set, so
# that a container or a scheduler that restricts devices is respected. Prints an empty list
# (not an error) when there is no GPU, so that executors still start and the CPU route runs.
set -euo pipefail
addresses=()
if [[ -n "${CUDA_VISIBLE_DEVICES:-}" ]]; then
  IFS=',' read -r -a addresses <<<"${CUDA_VISIBLE_DEVICES}"
elif command -v nvidia-smi >/dev/null 2>&1; then
  while IFS= read -r idx; do
    [[ -n "$idx" ]] && addresses+=("$(echo "$idx" | tr -d ' ')")
  done < <(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null || true)
fi
json=""
for a in "${addresses[@]+"${addresses[@]}"}"; do
  json+="${json:+,}\"$a\""
done
echo "{\"name\": \"gpu\", \"addresses\": [${json}]}"
