#!/bin/bash
# call 8 of 2026-12-06c, PREPARED FOR THE NEXT SESSION, NOT RUN (any card): f2c278d (the adding's
# lag and the one-row SwiGLU units) end to end, against 983f325's kernel (`before`:
# pdecode-before-lag.patch, made against f2c278d). The kernel steps of calls 6-7 say: one row FP8
# -2.2%, bf16 -0.5%; 4 rows FP8 -0.5%, bf16 +0.7%; 8 rows FP8 -2.5%, bf16 -0.7%.
# Build and pack:
#   VARIANT_RUNNER=1 bash bench/2026-12-04e/build_variants.sh before=bench/2026-12-06c/pdecode-before-lag.patch
#   mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh bench/2026-12-06c/call8.sh .devscripts/
#   EXTRA_BINS="build/voxtral_runner_before build/tests/test_kernels_pdecode_before" bash .devscripts/pack.sh
# Predictions (decode is ~97% a step): decode_ab FP8 batch 1 -2%, bf16 batch 1 -0.5%, bf16 batch
# 4 +0.5% (a sequence's ms/token). On an H200 the FP8 figure is issue 10's (1.846 ms/token on
# 2026-12-05e, before the cap, the head and this).
source .devscripts/device-call.sh
for cfg in fp8-split bf16-split; do
  say "step $(printf '%-10s' $cfg) | before $(step build/tests/test_kernels_pdecode_before --timing-only $cfg | cut -d' ' -f1) | main $(step build/tests/test_kernels_pdecode --timing-only $cfg | cut -d' ' -f1)"
done
[ -d models/full_fp8 ] || python3 scripts/make_random_model.py --size full --dtype fp8 --out models/full_fp8 --build build 2>&1 | tail -1
say "fp8 model after $(el) s"
python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full_fp8 --batch-size 1 --repeats 4 \
  --rounds 2 main=- before=RUNNER=build/voxtral_runner_before 2>&1 | tail -9 | tee -a $OUT/summary.txt
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "bf16 model after $(el) s"
for bs in 1 4; do
  python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --batch-size $bs --repeats 4 \
    --rounds 2 main=- before=RUNNER=build/voxtral_runner_before 2>&1 | tail -9 | tee -a $OUT/summary.txt
done
say "end t $(el) s"
