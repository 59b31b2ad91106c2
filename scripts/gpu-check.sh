#!/usr/bin/env bash
# On a GPU machine: runs every GPU test binary of a build and the tiny-model end-to-end check
# (CPU vs CUDA ids), logs each to LOG_DIR, and prints one summary table.
# usage: scripts/gpu-check.sh BUILD_DIR [LOG_DIR]
set -uo pipefail
B=${1:?usage: gpu-check.sh BUILD_DIR [LOG_DIR]}
L=${2:-$(mktemp -d)}
mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
summary=()
# run NAME BINARY [ARGS...]: one test binary, its log in $L/NAME.log, a summary line
run() {
  local name=$1
  shift
  local start rc secs last
  start=$(date +%s.%N)
  "$@" > "$L/$name.log" 2>&1
  rc=$?
  secs=$(python3 -c "print($(date +%s.%N) - $start)")
  last=$(grep -E "checks, [0-9]+ failed|SKIPPED" "$L/$name.log" | tail -1)
  summary+=("$(printf '%-34s rc=%-3s %6.1fs  %s' "$name" "$rc" "$secs" "$last")")
}
for t in "$B"/tests/test_kernels_* "$B"/tests/test_cuda_*; do
  [ -x "$t" ] && run "$(basename "$t")" "$t"
done
# the tiny model's FP8 export (ctest's export_tiny_model_fp8 makes it), end to end on the GPU
if [ -x "$B/tests/test_cuda_transcribe" ] && [ -f "$B/tiny_model_fp8/voxtral.json" ]; then
  run test_cuda_transcribe_fp8 "$B/tests/test_cuda_transcribe" "$B/tiny_model_fp8"
fi
echo
echo "GPU test summary:"
printf '  %s\n' "${summary[@]}"
