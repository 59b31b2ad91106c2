#!/bin/bash
# call 3 of 2026-12-06c (any card): why the SwiGLU units did not pay in FP8 (call 2: +0.3%; the
# stamps put down's begin 1.5 us later after gate|up's last block). One binary
# (pdecode-glu-units-experiments.patch, `gluexp`), timing experiments: none (the SwiGLU units),
# gluplain (the adders combine gate and up with a product, no expf or division: is it the
# epilogue's arithmetic?), gluseparate (the units' row layout, gate and up stored as before and
# SwiGLU in down's staging: is it the layout's stream?); HEAD (`head0`) beside them; stamps of each.
source .devscripts/device-call.sh
G=build/tests/test_kernels_pdecode_gluexp
for r in 1 2; do
  for cfg in fp8-split bf16-split; do
    step_row "round $r $(printf '%-10s' $cfg) | head0 $(step build/tests/test_kernels_pdecode_head0 --timing-only $cfg | cut -d' ' -f1)" \
      VOX_PDECODE_EXPERIMENT $G --timing-only $cfg -- none gluplain gluseparate
  done
done
for x in none gluplain gluseparate; do
  mkdir -p $OUT/st-$x
  VOX_PDECODE_EXPERIMENT=$x VOX_PDECODE_STAMPS_DIR=$OUT/st-$x timeout 60 $G --timing-only fp8-split > /dev/null 2>&1
  for f in $OUT/st-$x/*.u64; do say "== $x $(basename $f)"; python3 scripts/pdecode_stamps.py $f | tee -a $OUT/summary.txt | sed -n '2,8p'; done
done
mkdir -p $OUT/st-head0
VOX_PDECODE_STAMPS_DIR=$OUT/st-head0 timeout 60 build/tests/test_kernels_pdecode_head0 --timing-only fp8-split > /dev/null 2>&1
for f in $OUT/st-head0/*.u64; do say "== head0 $(basename $f)"; python3 scripts/pdecode_stamps.py $f | tee -a $OUT/summary.txt | sed -n '2,8p'; done
say "end t $(el) s"
