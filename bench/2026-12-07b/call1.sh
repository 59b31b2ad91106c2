#!/bin/bash
# call 1 of 2026-12-07b (any card): the waiting call that suits the card it gets.
# - H200: bench/2026-12-06g/call1.sh (as call1-sweep.sh), the one-row kernel's in-flight sweep,
#   then scripts/bench_gpu.py bf16 and FP8 with the best setting (issues 11 and 10; the
#   prediction is in that file).
# - Otherwise: bench/2026-12-07/call3.sh with LIMIT=560, the K-sliced residual projections'
#   second form: checks, the 24-row A/B and the 128 mixed files (issue 9; prediction there).
# Pack: `mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh
# bench/2026-12-07b/call1.sh .devscripts/ && cp bench/2026-12-06g/call1.sh .devscripts/call1-sweep.sh
# && cp bench/2026-12-07/call3.sh .devscripts/ && EXTRA_BINS=build/tests/test_kernels_norm bash .devscripts/pack.sh`.
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in
  *H200*) exec bash .devscripts/call1-sweep.sh ;;
  *) LIMIT=560 exec bash .devscripts/call3.sh ;;
esac
