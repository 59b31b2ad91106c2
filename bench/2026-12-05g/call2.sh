#!/bin/bash
# call 2 of 2026-12-05g, the first call of a session that gets a device (on whatever card comes):
# main's checks, then call 1 (which boundaries hold the step back), then, on an H200 only, the
# in-flight cap sweep of 2026-12-05f/call9.sh. ~4 min (+1 on an H200).
# Predictions: test_kernels_pdecode 0 failed (3326 checks), tiny end to end bf16 463 / FP8 196
# checks 0 failed at rows 4 and 1; call 1's as it says; on an H200, cap 2 or 3 best, -8 to -10%
# against 0 at one row (bf16).
# Pack: mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh
#   bench/2026-12-05g/call1.sh bench/2026-12-05g/call2.sh bench/2026-12-05f/call9.sh .devscripts/
#   && bash .devscripts/pack.sh
source .devscripts/device-call.sh
pdecode_checks
tiny_e2e 4 1
bash .devscripts/call1.sh
bash .devscripts/call9.sh
