#!/bin/bash
# call 6 of 2026-12-05e (prepared for the next session, not run): is an attention key group's
# ~3.6 us its arithmetic or its loads? (NOTES-2026-12-05e section 4.) One variant binary,
# test_kernels_pdecode_noscore, built with
#   bash bench/2026-12-04e/build_variants.sh noscore=bench/2026-12-05e/pdecode-noscore-experiment.patch
# (packed with EXTRA_BINS=build/tests/test_kernels_pdecode_noscore): VOX_PDECODE_EXPERIMENT=noscore
# loads every group's keys and values but skips the scores, the softmax and P@V (wrong numbers;
# the timing is what counts), against the same binary without it, in alternating rounds: one row
# with units of 440 keys (VOX_PDECODE_SPLITS=1: 13 more groups a warp), one row at the default,
# 4 and 8 rows; then the stamps at 4 rows with and without. The patch leaves the production
# instance's registers and spills as they are (ptxas: 167 registers, 16 / 16 bytes).
# Prediction: arithmetic-bound, the 440-key units go from ~4340 us (H100; main) toward ~3000 and
# the 4-row attention's "keys done" - "first keys scored" from ~11 us to ~3; load-bound, under
# 10% of either moves. ~2 min.
source .devscripts/device-call.sh
V=build/tests/test_kernels_pdecode_noscore
for r in 1 2; do
  for cfg in bf16-split bf16-split-r4 bf16-split-r8 fp8-split-r4; do
    for x in off noscore; do
      say "round $r $(printf '%-14s' $cfg) $x $(VOX_PDECODE_EXPERIMENT=$([ $x = off ] && echo none || echo noscore) step $V --timing-only $cfg)"
    done
  done
  for x in off noscore; do
    say "round $r splits 1 bf16-split $x $(VOX_PDECODE_SPLITS=1 VOX_PDECODE_EXPERIMENT=$([ $x = off ] && echo none || echo noscore) step $V --timing-only bf16-split)"
  done
done
for x in none noscore; do
  mkdir -p $OUT/st-$x
  VOX_PDECODE_EXPERIMENT=$x VOX_PDECODE_STAMPS_DIR=$OUT/st-$x timeout 40 $V --timing-only bf16-split-r4 > /dev/null 2>&1
  for f in $OUT/st-$x/*.u64; do python3 scripts/pdecode_stamps.py $f | head -22; done > $OUT/stamps-$x.txt 2>&1
  say "$(grep -E 'step|keys done|first keys' $OUT/stamps-$x.txt | tr -s ' ' | tr '\n' ';')"
done
say "end t $(el) s"
