#!/bin/bash
# call 8 of 2026-12-06b (any card): call 7 found the one-row instance 2.5% (bf16) and 5.1% (FP8)
# slower than base with or without the pairs, so the loss is in what both share: every consumer
# thread computed its op's first unit (a modulo by the grid) again for each unit (block_unit), and
# o's FP8 staging waited for the published maximum before its data loads went out (the scale was
# computed first). Both fixed (BlockUnits made once an op; the scale after the first loads).
# Predictions (H100 kernel step): one row bf16 within +-0.5% of base, FP8 -0.5 to -1.5%; with
# pairs at one row bf16 -0.5%, FP8 -2 to -3% (call 7: pairs were 0.5% / 3% faster than without);
# batched as call 7.
source .devscripts/device-call.sh
pdecode_checks
tiny_e2e 1 4
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r8 fp8-row; do
    say "round $r $(printf '%-14s' $cfg) | base $(step build/tests/test_kernels_pdecode_base --timing-only $cfg | cut -d' ' -f1) | new $(step build/tests/test_kernels_pdecode --timing-only $cfg | cut -d' ' -f1) | new pairs $(VOX_PDECODE_PAIRS=1 step build/tests/test_kernels_pdecode --timing-only $cfg | cut -d' ' -f1)"
  done
done
say "end t $(el) s"
