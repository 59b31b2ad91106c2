#!/bin/bash
# call 5 of 2026-12-06c (any card): the adder's lag (NOTES-2026-12-06c section 3). Call 4 put the
# SwiGLU units' cost in their epilogue's arithmetic (+1.9% FP8 against a plain product), far more
# than 62 SwiGLUs a block take: each unit's adder waits for the slowest warp's sums, adds, and then
# is itself the slowest warp of the next unit, so the epilogues run one after another on the op's
# chain. VOX_PDECODE_ADD_LAG=1: a unit is added after its adder's products of the next unit.
# pdecode-add-lag-glu-experiment.patch (the tree's build): VOX_PDECODE_GLU=0/1 (the SwiGLU units),
# VOX_PDECODE_ADD_LAG=0/1; HEAD (`head0`) beside. Checks with both on (kernel, tiny models 1, 4).
# Prediction: lag -2 to -4% FP8 one row, -1 to -2% bf16; with the SwiGLU units on top a further
# -2 to -3% FP8 (call 1's noswiglu -3.4% less what the adders' SwiGLU still costs off the chain).
source .devscripts/device-call.sh
export VOX_PDECODE_ADD_LAG=1
pdecode_checks
tiny_e2e 1 4
unset VOX_PDECODE_ADD_LAG
T=build/tests/test_kernels_pdecode
v() { step env VOX_PDECODE_GLU=$1 VOX_PDECODE_ADD_LAG=$2 $T --timing-only $3 | cut -d' ' -f1; }
for r in 1 2; do
  for cfg in fp8-split bf16-split fp8-split-r4 bf16-split-r4 bf16-split-r8; do
    say "round $r $(printf '%-14s' $cfg) | head0 $(step build/tests/test_kernels_pdecode_head0 --timing-only $cfg | cut -d' ' -f1) | glu0 lag0 $(v 0 0 $cfg) | glu0 lag1 $(v 0 1 $cfg) | glu1 lag0 $(v 1 0 $cfg) | glu1 lag1 $(v 1 1 $cfg)"
  done
done
mkdir -p $OUT/st
VOX_PDECODE_ADD_LAG=1 VOX_PDECODE_STAMPS_DIR=$OUT/st timeout 60 $T --timing-only fp8-split > /dev/null 2>&1
for f in $OUT/st/*.u64; do say "== glu1 lag1 $(basename $f)"; python3 scripts/pdecode_stamps.py $f | tee -a $OUT/summary.txt | sed -n '2,8p'; done
say "end t $(el) s"
