#!/bin/bash
# call 7 of 2026-12-06c (any card): the lag for FP8 and the batched instances only (kLag; one-row
# bf16 adds each unit at once as before, call 5 put the lag at +0.25% there), with the SwiGLU
# units: the tree, against HEAD (`head0`) and call 6's lag everywhere (`lagglu`). Checks of the
# tree first (kernel; tiny models at 1 and 4 rows). Prediction: FP8 as lagglu (-2.4% one row),
# bf16 one row -0.3 to -0.5% against head0 (the SwiGLU units alone, call 5).
source .devscripts/device-call.sh
pdecode_checks
tiny_e2e 1 4
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4; do
    say "round $r $(printf '%-14s' $cfg) | head0 $(step build/tests/test_kernels_pdecode_head0 --timing-only $cfg | cut -d' ' -f1) | tree $(step build/tests/test_kernels_pdecode --timing-only $cfg | cut -d' ' -f1) | lagglu $(step build/tests/test_kernels_pdecode_lagglu --timing-only $cfg | cut -d' ' -f1)"
  done
done
say "end t $(el) s"
