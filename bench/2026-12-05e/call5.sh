#!/bin/bash
# call 5 of 2026-12-05e: on an H200, scripts/bench_gpu.py bf16 and --dtype fp8 on main (the
# README's batch-1 table is 2026-12-04's: the 24 KB pages and the mma pairs are not in it), as
# bench/2026-12-04c/call5.sh with budgets cut to fit one 10-minute command; on another card, the
# mixed batch of call4.sh only. Runner: main (683dd17's code).
source .devscripts/device-call.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bench_run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 150
  bench_run gpu_fp8 scripts/bench_gpu.py --size full --dtype fp8 --reuse --hf-batched off --device cuda --runner-device cuda --build build --budget-s 120
else
  bash .devscripts/call4.sh
fi
