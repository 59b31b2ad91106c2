#!/bin/bash
# call 1 of 2026-12-06 (H200 only; main's binaries as packed for bench/2026-12-05h/call3.sh, runner
# and kernels of 1823a84): the in-flight cap of the persistent decode's ring on the card the
# targets are set for, then scripts/bench_gpu.py bf16 and FP8 (the README's batch-1 table is
# 2026-12-05e's H200 run, before the cap of 2 pages, which gained 10.6% a token on an H100).
# Predictions: cap 2 against 0 on the H200 -8 to -11% a step (as the H100); 3 within +-1.5% of 2
# (Little's law gives ~2.5 pages a block on the H200); bench_gpu bf16 2.334 -> ~2.10 ms/token,
# ~221 ms for 30 s + 100 tokens; FP8 1.846 -> ~1.72, ~183 ms.
# On another card (an H100 is what comes most often): the batch-1 prompt's FP8 GEMMs instead, at
# 380 rows (a 30 s prompt), outer-vector scales (what prefill runs: FP8_PLAIN_ROWS = 128) against
# plain FP8 products (float32 out; the scale pass after them is not in these figures) and bf16.
# Prediction: plain 30-40% under outer vectors, which would cut FP8 prefill (5.3 ms, as bf16's)
# by ~1.5 ms: a reason to raise FP8_PLAIN_ROWS past 380 if the scale pass costs less.
source .devscripts/device-call.sh
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  for mode in --fp8 --fp8-fp32 ""; do
    say "== time_gemm_algos $mode --first 380 760"
    timeout 60 build/tests/time_gemm_algos $mode --first 380 760 2>&1 | tail -12 | tee -a $OUT/summary.txt
  done
  exit 0
fi
H=build/tests/test_kernels_pdecode
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4; do
    step_row "round $r cap $(printf '%-14s' $cfg)" VOX_PDECODE_INFLIGHT $H --timing-only $cfg -- 0 2 3 4
  done
done
bench_run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 140
say "t $(el) s"
bench_run gpu_fp8 scripts/bench_gpu.py --size full --dtype fp8 --reuse --hf-batched off --device cuda --runner-device cuda --build build --budget-s 110
say "t $(el) s"
