#!/bin/bash
# call 1 of 2026-12-05g: which op boundaries hold the persistent decode step back, before building
# finer dependencies (bench/NOTES-2026-12-05g.md). VOX_PDECODE_EXPERIMENT=nowait-partial drops the
# waits an op could replace by a wait for a part of the op before (the attention for its kv group's
# q|k|v, o for the attention's groups, down for gate|up's columns); nowait-norm drops the others
# (q|k|v, gate|up and lm_head wait for whole rows: their RMSNorm); nowait drops all (timing only:
# the logits are wrong in all three). Kernel steps, the default cap, two rounds.
# Prediction (H100 figures of 2026-12-05f: nowait -10.7% bf16, -16.4% FP8, -20% at 4 rows):
# nowait-partial about 60% of nowait's gain (-6% bf16, -10% FP8), nowait-norm the rest; if
# nowait-partial gains under 3%, finer dependencies are not worth building.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4; do
    step_row "round $r $(printf '%-14s' $cfg)" VOX_PDECODE_EXPERIMENT $T --timing-only $cfg -- none nowait nowait-partial nowait-norm
  done
done
