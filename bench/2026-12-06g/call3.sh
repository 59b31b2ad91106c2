#!/bin/bash
# call 3 of 2026-12-06g (any card; one machine start for everything, the budget being short):
# call 2 (the fused RoPE's checks and batch_ab, stopped by 330 s), the K-sliced GEMM probe of
# NOTES-2026-12-06g section 4 (o and down at 8-128 rows: today's choice, then 2 and 4 K-slices
# with fp32 partials; ~20 s), then on an H200 call 1 (the in-flight sweep and bench_gpu.py bf16,
# no FP8). Pack as call 2 with EXTRA_BINS="build/voxtral_runner_before build/tests/time_gemm_algos".
# Prediction for the probe: o at 24 rows from ~1.4 TB/s (one split, 24 tiles) to >= 2.5 TB/s with
# 4 slices; down even or better than its split-K GEMM (its reduction not counted).
AB_LIMIT=330 bash .devscripts/call2.sh
source .devscripts/device-call.sh > /dev/null
for sh in o down; do
  for ks in 0 2 4; do
    if [ $ks = 0 ]; then a=(); else a=(--k-slices $ks); fi
    timeout 30 build/tests/time_gemm_algos --first "${a[@]}" --shape $sh 8 16 24 32 64 128 2>&1 | grep "M=" | \
      sed 's/| all:.*//' | tee -a $OUT/summary.txt
  done
done
SKIP_FP8=1 bash .devscripts/call1.sh
