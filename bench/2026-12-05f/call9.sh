#!/bin/bash
# call 9 of 2026-12-05f: the in-flight cap on an H200 (more bandwidth a SM than the H100 of calls
# 7-8, so more bytes in flight may pay): kernel steps at caps 0, 2 (default), 3, 4. H200 only.
# Prediction: 2 or 3 best, -8 to -10% against 0 at one row (bf16).
source .devscripts/device-call.sh
only_on H200
T=build/tests/test_kernels_pdecode
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4; do
    step_row "round $r $(printf '%-14s' $cfg)" VOX_PDECODE_INFLIGHT $T --timing-only $cfg -- 0 2 3 4
  done
done
