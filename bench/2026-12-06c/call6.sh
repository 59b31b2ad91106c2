#!/bin/bash
# call 6 of 2026-12-06c (any card): the adder's lag and the one-row SwiGLU units compiled in (no
# run-time switches: call 5's switches alone cost 3% FP8). The tree (pdecode-add-lag-everywhere-glu.patch:
# both), `lagonly` (the lag, SwiGLU in down's staging as before), HEAD (`head0`). Checks of the
# tree first (kernel, tiny models at 1, 4 and 8 rows).
# Prediction from call 5's same-binary ratios (lag -3.8%, SwiGLU units with it -2.9% FP8):
# FP8 one row -5 to -7% against head0, bf16 -0 to -1%; batched -0.5 to -1%.
source .devscripts/device-call.sh
pdecode_checks
tiny_e2e 1 4 8
for r in 1 2; do
  for cfg in fp8-split bf16-split fp8-split-r4 bf16-split-r4 fp8-split-r8 bf16-split-r8; do
    say "round $r $(printf '%-14s' $cfg) | head0 $(step build/tests/test_kernels_pdecode_head0 --timing-only $cfg | cut -d' ' -f1) | lagglu $(step build/tests/test_kernels_pdecode --timing-only $cfg | cut -d' ' -f1) | lagonly $(step build/tests/test_kernels_pdecode_lagonly --timing-only $cfg | cut -d' ' -f1)"
  done
done
say "end t $(el) s"
