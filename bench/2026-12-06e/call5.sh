#!/bin/bash
# call 5 of 2026-12-06e, H200 only, for the ~250 s of budget left: scripts/bench_gpu.py bf16 alone
# (budget 60 s, the default cap), issue 11's batch-1 figures. Prediction: ~2.03 ms/token, ~215 ms.
source .devscripts/device-call.sh
only_on H200
bench_run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 60
say "end t $(el) s"
