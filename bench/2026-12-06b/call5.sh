#!/bin/bash
# call 5 of 2026-12-06b (any card): the head cap as landed (kHeadInflight = 1 page for an op's
# first head_pages: 4 bf16 / 8 FP8 pages at one row, the 6-page ring in the batched instances;
# VOX_PDECODE_INFLIGHT_HEAD=0 is the kernel before it): every kernel check, the tiny models end to
# end at 1, 4 and 8 rows, the kernel step against 0, then the runner on full-size random models
# (decode_ab, one 30 s clip, 100 tokens, batch 1 and 4, bf16 and FP8).
# Predictions (H100, calls 1-4): step bf16 -0.7%, FP8 -5.6%, 4 rows bf16 -3.8%, FP8 -0.7%, 8 rows
# bf16 -1.9%; decode ms/token about the same shares (the step is ~97% of a token's decode).
source .devscripts/device-call.sh
pdecode_checks
tiny_e2e 1 4 8
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4 bf16-split-r8; do
    step_row "round $r $(printf '%-14s' $cfg) head" VOX_PDECODE_INFLIGHT_HEAD build/tests/test_kernels_pdecode --timing-only $cfg -- 0 "" 0 ""
  done
done
say "t $(el) s"
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
for bs in 1 4; do
  python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --batch-size $bs --repeats 4 \
    --rounds 2 head=- nohead=VOX_PDECODE_INFLIGHT_HEAD=0 2>&1 | tail -9 | tee -a $OUT/summary.txt
done
say "t $(el) s"
[ -d models/full_fp8 ] || python3 scripts/make_random_model.py --size full --dtype fp8 --out models/full_fp8 --build build 2>&1 | tail -1
say "fp8 model after $(el) s"
python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full_fp8 --batch-size 1 --repeats 4 \
  --rounds 2 head=- nohead=VOX_PDECODE_INFLIGHT_HEAD=0 2>&1 | tail -9 | tee -a $OUT/summary.txt
say "end t $(el) s"
