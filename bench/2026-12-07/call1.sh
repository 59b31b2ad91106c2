#!/bin/bash
# call 1 of 2026-12-07 (any card): whichever waiting call suits the card it gets.
# - H200: bench/2026-12-06g/call1.sh, the one-row kernel's in-flight sweep, then
#   scripts/bench_gpu.py bf16 and FP8 with the best setting (issues 11 and 10; its prediction is
#   in that file). The binaries are this session's (the K-sliced residual projections, which
#   only batched steps of 5 to 32 rows take: the one-file runs are main's).
# - Otherwise: call2.sh, the K-sliced residual projections' checks and A/B.
# Pack: `EXTRA_BINS="build/tests/test_kernels_norm build/tests/time_gemm_algos" bash .devscripts/pack.sh`; device-call.sh and
# 2026-12-06g's call1.sh (as call1-sweep.sh) and this day's call2.sh in .devscripts/.
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in
  *H200*) exec bash .devscripts/call1-sweep.sh ;;
  *) exec bash .devscripts/call2.sh ;;
esac
