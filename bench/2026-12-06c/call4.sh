#!/bin/bash
# call 4 of 2026-12-06c (any card): is it the SwiGLU units' row layout that costs (call 3:
# gluseparate +3% FP8)? `glucontig`: the units' epilogue as the SwiGLU units' but on 8
# consecutive weight rows (wrong results, timing only: what gate|up stored interleaved by 4 rows
# at load time would run at). Prediction if the layout is the cost: glucontig ~ head0 - 2%.
source .devscripts/device-call.sh
G=build/tests/test_kernels_pdecode_gluexp
for r in 1 2 3; do
  for cfg in fp8-split bf16-split; do
    step_row "round $r $(printf '%-10s' $cfg) | head0 $(step build/tests/test_kernels_pdecode_head0 --timing-only $cfg | cut -d' ' -f1)" \
      VOX_PDECODE_EXPERIMENT $G --timing-only $cfg -- none glucontig gluplain
  done
done
mkdir -p $OUT/st-c
VOX_PDECODE_EXPERIMENT=glucontig VOX_PDECODE_STAMPS_DIR=$OUT/st-c timeout 60 $G --timing-only fp8-split > /dev/null 2>&1
for f in $OUT/st-c/*.u64; do say "== glucontig $(basename $f)"; python3 scripts/pdecode_stamps.py $f | tee -a $OUT/summary.txt | sed -n '2,8p'; done
say "end t $(el) s"
