#!/bin/bash
# call 1 of 2026-12-06d (any card): on an H200, scripts/bench_gpu.py bf16 and FP8 on main (the
# README's batch-1 table predates the cap, the head and the adding's lag: the decode figures of
# issues 10 and 11 were last measured on an H200 on 2026-12-05e); elsewhere, call2.sh (2026-12-06c's
# call9.sh, the SwiGLU units in the batched instances and the switch-free kernel, then a racecheck).
# Pack: bench/NOTES-2026-12-06c.md section 5, with this directory's scripts in .devscripts/.
# Prediction on an H200, from the H100 steps since 12-05e (cap -10.6%, head -1.7%, lag -0.5%):
# bf16 decode 2.334 -> ~2.04 ms/token, 30 s + 100 tokens 244 -> ~215 ms; FP8 1.846 -> ~1.59.
source .devscripts/device-call.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bench_run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 150
  bench_run gpu_fp8 scripts/bench_gpu.py --size full --dtype fp8 --reuse --hf-batched off --device cuda --runner-device cuda --build build --budget-s 120
else
  bash .devscripts/call2.sh
fi
