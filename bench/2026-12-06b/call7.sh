#!/bin/bash
# call 7 of 2026-12-06b (any card): call 6's change kept for the batched instances only (Params::
# pairs: gate|up's epilogue writes SwiGLU, down's FP8 staging takes the published maxima), the
# one-row instance as before except o's FP8 staging, which takes the attention's published maxima
# at every row count. VOX_PDECODE_PAIRS=1 turns the pairs on at one row (call 6's default).
# base: main at b6b1df5 in the same call. Predictions (H100 kernel step): one row bf16 = base
# (+-0.3%), FP8 -0.3 to -1% (o's reduction gone); 4 and 8 rows as call 6 (-4 to -26%); pairs at
# one row as call 6 (+1.2 to +1.8%).
source .devscripts/device-call.sh
pdecode_checks
tiny_e2e 1 4
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4 bf16-split-r8 fp8-split-r8 fp8-row; do
    say "round $r $(printf '%-14s' $cfg) | base $(step build/tests/test_kernels_pdecode_base --timing-only $cfg | cut -d' ' -f1) | new $(step build/tests/test_kernels_pdecode --timing-only $cfg | cut -d' ' -f1) | new pairs $(VOX_PDECODE_PAIRS=1 step build/tests/test_kernels_pdecode --timing-only $cfg | cut -d' ' -f1)"
  done
done
say "end t $(el) s"
