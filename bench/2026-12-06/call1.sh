#!/bin/bash
# call 1 of 2026-12-06 (H200 only; main's binaries as packed for bench/2026-12-05h/call3.sh, runner
# and kernels of 1823a84): the in-flight cap of the persistent decode's ring on the card the
# targets are set for, then scripts/bench_gpu.py bf16 and FP8 (the README's batch-1 table is
# 2026-12-05e's H200 run, before the cap of 2 pages, which gained 10.6% a token on an H100).
# Predictions: cap 2 against 0 on the H200 -8 to -11% a step (as the H100); 3 within +-1.5% of 2
# (Little's law gives ~2.5 pages a block on the H200); bench_gpu bf16 2.334 -> ~2.10 ms/token,
# ~221 ms for 30 s + 100 tokens; FP8 1.846 -> ~1.72, ~183 ms.
# On another card (first run, result 2): the batch-1 prompt's FP8 GEMMs at 380 and 760 rows,
# outer-vector scales against plain products and bf16 (`time_gemm_algos MODE --first 380 760`
# for MODE in --fp8, --fp8-fp32 and none); measured once, now the call stops there.
# The cap sweep is call2.sh's (copy both into .devscripts/).
source .devscripts/call2.sh
bench_run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 140
say "t $(el) s"
# FP8 only where the call has time left for it (~4 min; the session's device budget runs short)
[ "$(el)" -lt "${FP8_BY_S:-300}" ] || { say "FP8 left out at t $(el) s"; exit 0; }
bench_run gpu_fp8 scripts/bench_gpu.py --size full --dtype fp8 --reuse --hf-batched off --device cuda --runner-device cuda --build build --budget-s 110
say "t $(el) s"
