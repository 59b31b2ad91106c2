#!/bin/bash
# call 7 of 2026-12-05e (prepared for the next session; ran as call 2 of 2026-12-05f, NOTES-2026-12-05f section 1; after call6.sh, and worth its
# time only if call 6 finds the key groups load-bound): an attention unit's later keys staged
# into shared memory by cp.async, a batch at a time (pdecode-keys-staged.patch: one round trip a
# batch of up to 96 keys at 4 rows, 64 at 8, where each group of 4 keys a warp took one), built as
#   bash bench/2026-12-04e/build_variants.sh kstage=bench/2026-12-05e/pdecode-keys-staged.patch
# and packed with EXTRA_BINS=build/tests/test_kernels_pdecode_kstage. The production one-row
# head_dim-128 instance has no room for a batch and keeps its per-group loads (ptxas: 168
# registers, 12 / 12 bytes of spills, main 167 and 16 / 16); the batched instances spill more
# (4 rows 84 / 96 bytes against 12 / 12; 8 rows 88 / 140 against 44 / 48). The head_dim-64 shapes
# take the staging at one row too, so the checks cover both.
# Prediction, if call 6 says load-bound: 4 rows bf16 3718 -> ~3450 us (H100; the key phase's 11 us a
# layer to ~3), 8 rows 5078 -> ~4650, one row with VOX_PDECODE_SPLITS=1 unchanged (no room), one
# row at the default within noise. ~4 min.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
V=build/tests/test_kernels_pdecode_kstage
timeout 200 $V --no-timing > $OUT/checks.txt 2>&1; say "checks kstage rc $? $(tail -1 $OUT/checks.txt) (t $(el) s)"
grep -E "FAIL|outside" $OUT/checks.txt | head -8 | tee -a $OUT/summary.txt
VOX_PDECODE_WATCHDOG_S=900 timeout 200 compute-sanitizer --tool racecheck --racecheck-report analysis \
  $V --no-timing "rows 4" split > $OUT/racecheck-rows4.log 2>&1
say "racecheck kstage rows 4 rc $? $(grep -E 'SUMMARY|checks,' $OUT/racecheck-rows4.log | tr '\n' ' ') (t $(el) s)"
for r in 1 2; do
  for cfg in bf16-split-r4 fp8-split-r4 bf16-split-r8 fp8-split-r8 bf16-split fp8-split; do
    for X in $T $V; do
      say "round $r $(printf '%-14s' $cfg) $([ $X = $T ] && echo main || echo kstage) $(step $X --timing-only $cfg)"
    done
  done
done
say "end t $(el) s"
