#!/bin/bash
# call 2 of 2026-12-05h: the stagings' cost (2026-12-05g/call3.sh, the marks variant), then on an
# H200 only scripts/bench_gpu.py bf16 and FP8 on main for the README's batch-1 table
# (2026-12-05e/call5.sh's two runs). ~3 min (+8 on an H200).
# Pack: mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh
#   bench/2026-12-05g/call3.sh bench/2026-12-05h/call2.sh .devscripts/ &&
#   EXTRA_BINS=build/tests/test_kernels_pdecode_marks bash .devscripts/pack.sh
source .devscripts/device-call.sh
bash .devscripts/call3.sh
only_on H200
bench_run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 120
bench_run gpu_fp8 scripts/bench_gpu.py --size full --dtype fp8 --reuse --hf-batched off --device cuda --runner-device cuda --build build --budget-s 90
