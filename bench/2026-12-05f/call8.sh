#!/bin/bash
# call 8 of 2026-12-05f: the in-flight cap as landed (kInflightPages = 2, VOX_PDECODE_INFLIGHT):
# every kernel check, the tiny models end to end, synccheck on the awkward shapes, then the
# runner on the full-size random model, one 30 s clip, 100 tokens (decode_ab, batch 1 and 4),
# the default (2 pages) against 0 (every free page, the old behaviour) and 3.
# Predictions: 3326 checks / 463 / 196, 0 failed; synccheck 0 errors; decode at batch 1 -10%
# (bf16; call 7's kernel step 2980 -> 2670 us on an H100), at 4 rows -3%.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
timeout 200 $T --no-timing > $OUT/checks.txt 2>&1; say "checks rc $? $(tail -1 $OUT/checks.txt) (t $(el) s)"
grep -E "FAIL|outside" $OUT/checks.txt | head -8 | tee -a $OUT/summary.txt
for m in tiny_model tiny_model_fp8; do
  for rows in 4 1; do
    VOX_PDECODE_ROWS=$rows timeout 100 build/tests/test_cuda_transcribe build/$m > $OUT/e2e-$m-$rows.txt 2>&1
    say "e2e $m rows $rows rc $? $(grep -E 'checks' $OUT/e2e-$m-$rows.txt | tail -1) (t $(el) s)"
  done
done
VOX_PDECODE_WATCHDOG_S=900 timeout 120 compute-sanitizer --tool synccheck $T --no-timing "awkward" split > $OUT/synccheck.log 2>&1
say "synccheck awkward rc $? $(grep -E 'SUMMARY|checks,' $OUT/synccheck.log | tr '\n' ' ') (t $(el) s)"
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --batch-size 1 --repeats 4 \
  --rounds 2 cap2=- cap0=VOX_PDECODE_INFLIGHT=0 cap3=VOX_PDECODE_INFLIGHT=3 2>&1 | tail -12 | tee -a $OUT/summary.txt
python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --batch-size 4 --repeats 4 \
  --rounds 2 cap2=- cap0=VOX_PDECODE_INFLIGHT=0 2>&1 | tail -9 | tee -a $OUT/summary.txt
say "end t $(el) s"
