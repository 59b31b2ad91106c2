#!/bin/bash
# call 6 of 2026-12-06b (any card): gate|up's epilogue writes SwiGLU, and FP8 inputs come with
# their row maxima. gate|up's units are dealt in pairs (gate rows i..i+7, then up rows i..i+7, to
# one block, added by one warp), whose adder writes act = SwiGLU(gate, up) (the same roundings),
# so down's staging loads half the bytes and computes no SwiGLU (every block did all 8192 of them,
# an expf and a division each); the attention's writers and gate|up's adders publish their output
# rows' max |value| (atomicMax on counters zeroed each step), so o's and down's FP8 staging quantize
# as the values arrive, with no block-wide reduction and no second pass.
# base: main at b6b1df5 (test_kernels_pdecode_base, voxtral_runner_base), in the same call.
# Predictions (H100 kernel step): FP8 one row -3 to -5% (down's staging was its longest, FP8's
# o and down lose a reduction each), bf16 one row -1 to -2%, 4 rows -2 to -4%; every check and
# the tiny models at 1/4/8 rows pass (the results are the same bits: same roundings, exact maxima).
source .devscripts/device-call.sh
pdecode_checks
tiny_e2e 1 4 8
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4 bf16-split-r8 fp8-split-r8 bf16-row fp8-row; do
    say "round $r $(printf '%-14s' $cfg) | base $(step build/tests/test_kernels_pdecode_base --timing-only $cfg | cut -d' ' -f1) | new $(step build/tests/test_kernels_pdecode --timing-only $cfg | cut -d' ' -f1)"
  done
done
say "t $(el) s"
[ -d models/full_fp8 ] || python3 scripts/make_random_model.py --size full --dtype fp8 --out models/full_fp8 --build build 2>&1 | tail -1
say "fp8 model after $(el) s"
python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full_fp8 --batch-size 1 --repeats 4 \
  --rounds 2 new=- base=RUNNER=build/voxtral_runner_base 2>&1 | tail -9 | tee -a $OUT/summary.txt
say "end t $(el) s"
