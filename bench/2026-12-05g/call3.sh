#!/bin/bash
# call 3 of 2026-12-05g: what an op costs besides its wait: the staging of its input (RMSNorm,
# SwiGLU, FP8's row scale and codes), from a block's begin to its input staged, per op, with the
# waits (main) and without them (nofence, whose FP8 step is still ~1.3x the weights' floor).
# Build: bash bench/2026-12-04e/build_variants.sh marks=bench/2026-12-05g/pdecode-stage-marks-experiment.patch
# then EXTRA_BINS=build/tests/test_kernels_pdecode_marks in the pack (main's pdecode_stamps.py prints the marks).
# Prediction: staging 1-2 us an op with waits (its loads queue behind the ring's copies), 0.5-1
# without; FP8 more than bf16 by one reduction (the row's max). If the four projections' staging
# sums to >= 4 us a layer in FP8, staging is the next thing to shorten (precomputed sums of
# squares, fewer barriers), worth ~0.1 ms a token.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode_marks
for x in none nofence; do
  mkdir -p $OUT/stamps-$x
  for cfg in bf16-split fp8-split bf16-split-r4; do
    VOX_PDECODE_EXPERIMENT=$x VOX_PDECODE_STAMPS_DIR=$OUT/stamps-$x timeout 60 $T --timing-only $cfg > /dev/null 2>&1
  done
  for f in $OUT/stamps-$x/*.u64; do
    say "== $x $(basename $f)"
    python3 scripts/pdecode_stamps.py $f | tee -a $OUT/summary.txt | sed -n '1,20p'
  done
done
