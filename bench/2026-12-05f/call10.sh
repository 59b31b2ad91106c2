#!/bin/bash
# call 10 of 2026-12-05f: with the in-flight cap (a3c50bd), what is left for a fence-free
# hand-off (NOTES-2026-12-03e's LL words)? pdecode-end-stamps-experiment.patch on main (variant
# `endst`): relaxed (waits, no release), unordered (waits, neither release nor acquire) and
# nofence (no waits either) beside main, one row and 4 rows; and the cap at 8 rows (2 and 0),
# where the 4-row default may move if the 8-row kernel comes near op by op (4.18 ms a step on an
# H100 end to end, NOTES-2026-12-05e section 3). Predictions: relaxed/unordered -2 to -4% at one
# row (the fence was ~5 us a boundary before the cap, the queue behind it now shorter); 8 rows
# cap 2 -3 to -5% against 0 (its step ~4.9 ms with the staged keys: still above op by op).
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
E=build/tests/test_kernels_pdecode_endst
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4; do
    line="round $r $(printf '%-14s' $cfg) main $(step $T --timing-only $cfg | cut -d' ' -f1)"
    for x in relaxed unordered nofence; do
      line="$line | $x $(VOX_PDECODE_EXPERIMENT=$x step $E --timing-only $cfg | cut -d' ' -f1)"
    done
    say "$line"
  done
  for cfg in bf16-split-r8 fp8-split-r8; do
    say "round $r $(printf '%-14s' $cfg) cap2 $(step $T --timing-only $cfg | cut -d' ' -f1) | cap0 $(VOX_PDECODE_INFLIGHT=0 step $T --timing-only $cfg | cut -d' ' -f1) | cap3 $(VOX_PDECODE_INFLIGHT=3 step $T --timing-only $cfg | cut -d' ' -f1)"
  done
done
say "end t $(el) s"
