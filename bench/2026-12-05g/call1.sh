#!/bin/bash
# call 1 of 2026-12-05g: which op boundaries hold the persistent decode step back, before building
# finer dependencies (bench/NOTES-2026-12-05g.md). VOX_PDECODE_EXPERIMENT (timing only: the logits
# are wrong under each):
#   nowait-partial  drops the waits an op could replace by a wait for a part of the op before, in
#                   bf16: the attention (its kv group's q|k|v), o (the attention's groups), down
#                   (gate|up's columns);
#   nowait-attn     drops the attention's only: in FP8, o's and down's inputs are quantized with a
#                   whole row's scale, so only the attention could start on a part;
#   nowait-norm     drops the others (q|k|v, gate|up, lm_head: their RMSNorm needs whole rows);
#   nowait          drops all.
# Kernel steps at the default cap, two rounds.
# Prediction (H100 of 2026-12-05f: nowait -10.7% bf16, -16.4% FP8, -20% at 4 rows): nowait-partial
# about 60% of nowait's gain in bf16 (-6%), nowait-attn a third of it (-3 to -5%), nowait-norm
# the rest. Under 3% for nowait-partial (bf16) / nowait-attn (FP8): finer dependencies are not
# worth building.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4; do
    step_row "round $r $(printf '%-14s' $cfg)" VOX_PDECODE_EXPERIMENT $T --timing-only $cfg -- none nowait nowait-partial nowait-attn nowait-norm
  done
done
