#!/bin/bash
# call 1 of 2026-12-06c (any card): what the one-row stagings cost (NOTES-2026-12-06c section 1).
# 2026-12-06b's call 10 (the stage marks, results 10) put them at 13.5 us a layer in FP8 (q|k|v
# 2.98, o 1.99, gate|up 3.18, down 5.31, medians) and 8.3 in bf16, of a 53.5 / 78.6 us layer.
# Whether they are on the step's critical path: the step with each part of the staging skipped
# (timing experiments, wrong results; pdecode-staging-experiment.patch, marks included):
# nostage (none of it), loadonly (the L2 loads and copies, no RMSNorm pass, no FP8 reduction or
# codes), noquant (no FP8 reduction or codes), noswiglu (down's SwiGLU arithmetic left out).
# Then the pairs at one row with the marks (pm): which op lost 4% in FP8 (call 9).
# Build: bash bench/2026-12-04e/build_variants.sh stx=bench/2026-12-06c/pdecode-staging-experiment.patch \
#   pm=bench/2026-12-06b/pdecode-pairs-one-row-experiment.patch+bench/2026-12-05g/pdecode-stage-marks-experiment.patch
# Pack with EXTRA_BINS="build/tests/test_kernels_pdecode_stx build/tests/test_kernels_pdecode_pm".
# Predictions: nostage -10 to -16% FP8 and -4 to -5% bf16 if staging is wholly on the chain;
# less by what the ring hides. noswiglu: -1 to -2% (132 blocks each compute 8192 SwiGLUs).
source .devscripts/device-call.sh
S=build/tests/test_kernels_pdecode_stx
for r in 1 2; do
  for cfg in fp8-split bf16-split; do
    step_row "round $r $(printf '%-10s' $cfg)" VOX_PDECODE_EXPERIMENT $S --timing-only $cfg -- none nostage loadonly noquant noswiglu
  done
done
for b in stx pm; do
  mkdir -p $OUT/st-$b
  for cfg in fp8-split bf16-split; do
    VOX_PDECODE_STAMPS_DIR=$OUT/st-$b timeout 60 build/tests/test_kernels_pdecode_$b --timing-only $cfg > /dev/null 2>&1
  done
  for f in $OUT/st-$b/*.u64; do
    say "== $b $(basename $f)"
    python3 scripts/pdecode_stamps.py $f | tee -a $OUT/summary.txt | sed -n '1,14p'
  done
done
say "end t $(el) s"
