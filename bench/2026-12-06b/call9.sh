#!/bin/bash
# call 9 of 2026-12-06b, PREPARED FOR THE NEXT SESSION, NOT RUN (any card; first thing):
# 1. the checks of 315c9d6's landed form (the batched instances' pairs and published maxima were
#    restructured after calls 6-8 and not run again), tiny models at 1, 4 and 8 rows;
# 2. the step: b6b1df5 (`base`: main with bench/2026-12-06b/pdecode-before-pairs.patch, made against 099bf3e), main, and
#    the pairs at one row (`pairs1`: pdecode-pairs-one-row-experiment.patch; the one-row split
#    consumer takes gate|up's pairs, its staging keeps its own FP8 reduction);
# 3. decode_ab at batch 8 with VOX_PDECODE_ROWS=8 against the default 4 (the 8-row step is now
#    under the op-by-op path's ~4.2 ms on an H100: NOTES-2026-12-06b section 3).
# Build and pack:
#   bash bench/2026-12-04e/build_variants.sh base=bench/2026-12-06b/pdecode-before-pairs.patch \
#        pairs1=bench/2026-12-06b/pdecode-pairs-one-row-experiment.patch
#   mkdir -p .devscripts && cp bench/device-call.sh .devscripts/ && cp bench/2026-12-06b/call9.sh .devscripts/ (and pack.sh)
#   EXTRA_BINS="build/tests/test_kernels_pdecode_base build/tests/test_kernels_pdecode_pairs1" bash .devscripts/pack.sh
# Predictions (H100): checks 3326 / 0 failed, 463 and 196 / 0 failed at every row count; one row
# main = base +-0.3%; 4 and 8 rows main as call 8 (bf16 4 rows ~3125, FP8 8 rows ~4900); pairs1
# one row bf16 -0.5%, FP8 -2 to -3% against main (call 7's pairs against no pairs), or, if the one-
# row loss of calls 6-8 came with the pairs themselves, +1 to +2%; decode_ab rows8 -5 to -10% of
# the decode stage at batch 8.
source .devscripts/device-call.sh
pdecode_checks
tiny_e2e 1 4 8
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4 bf16-split-r8 fp8-split-r8; do
    say "round $r $(printf '%-14s' $cfg) | base $(step build/tests/test_kernels_pdecode_base --timing-only $cfg | cut -d' ' -f1) | main $(step build/tests/test_kernels_pdecode --timing-only $cfg | cut -d' ' -f1) | pairs1 $(step build/tests/test_kernels_pdecode_pairs1 --timing-only $cfg | cut -d' ' -f1)"
  done
done
say "t $(el) s"
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --batch-size 8 --repeats 8 \
  --rounds 2 rows4=- rows8=VOX_PDECODE_ROWS=8 2>&1 | tail -9 | tee -a $OUT/summary.txt
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in *H200*) source bench/2026-12-06/call2.sh ;; esac
say "end t $(el) s"
