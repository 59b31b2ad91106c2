#!/bin/bash
# call 2 of 2026-12-06c (any card): SwiGLU units at one row (pdecode-glu-units.patch: a gate|up
# unit is gate rows 4i..4i+3 and up rows ffn + 4i.., its adder writes SwiGLU; down's staging loads
# ffn values and computes no SwiGLU). Checks first (kernel, tiny models at 1 and 4 rows), then the
# step against HEAD (983f325, `head0`) in alternating rounds, and the stamps.
# Prediction (call 1: noswiglu -3.4% FP8, -0.9% bf16; the pairs moved down's staging 5.3 -> 3.3 us):
# FP8 one row -3 to -4%, bf16 -0.5 to -1%; 4 rows unchanged (+-0.3%).
source .devscripts/device-call.sh
pdecode_checks
tiny_e2e 1 4
for r in 1 2; do
  for cfg in fp8-split bf16-split bf16-split-r4 fp8-row; do
    say "round $r $(printf '%-14s' $cfg) | head0 $(step build/tests/test_kernels_pdecode_head0 --timing-only $cfg | cut -d' ' -f1) | glu $(step build/tests/test_kernels_pdecode --timing-only $cfg | cut -d' ' -f1)"
  done
done
mkdir -p $OUT/st
for cfg in fp8-split bf16-split; do
  VOX_PDECODE_STAMPS_DIR=$OUT/st timeout 60 build/tests/test_kernels_pdecode --timing-only $cfg > /dev/null 2>&1
done
for f in $OUT/st/*.u64; do
  say "== $(basename $f)"
  python3 scripts/pdecode_stamps.py $f | tee -a $OUT/summary.txt | sed -n '1,9p'
done
say "end t $(el) s"
