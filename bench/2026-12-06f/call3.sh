#!/bin/bash
# call 3 of 2026-12-06f, H200 only (elsewhere it stops at once), for a budget under call3.sh's
# ~600 s: scripts/bench_gpu.py bf16 alone on main's build (cap 2, the default), transformers in
# the same run: issue 11's decode and 30 s + 100 tokens figures (predicted ~2.03 ms/token and
# ~215 ms, NOTES-2026-12-06d section 5). Pack: `mkdir -p .devscripts && cp bench/device-call.sh
# bench/2026-12-04c/pack.sh bench/2026-12-06f/call3.sh .devscripts/ && bash .devscripts/pack.sh`.
source .devscripts/device-call.sh
only_on H200
bench_run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 110
say "end t $(el) s"
