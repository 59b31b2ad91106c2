#!/bin/bash
# call 2 of 2026-12-05e: memcheck on the prefetch's addresses (rows 8 and one row, awkward
# shapes), then end to end at the full size (decode_ab): batches of 2, 3 and 4 copies of the 30 s
# clip, the new default (persistent kernel up to 4 rows) against VOX_PDECODE_ROWS=1 (op by op),
# and main's runner (build/base/voxtral_runner, 15098b2) at 4 rows. ~5 min.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
for f in "rows 8" "awkward"; do
  VOX_PDECODE_WATCHDOG_S=900 timeout 150 compute-sanitizer --tool memcheck $T --no-timing "$f" split > "$OUT/memcheck-$f.log" 2>&1
  say "memcheck $f rc $? $(grep -E 'SUMMARY|checks,' "$OUT/memcheck-$f.log" | tr '\n' ' ') (t $(el) s)"
done
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
for b in 2 3 4; do
  python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --batch-size $b --repeats $b \
    --rounds 2 new=VOX_PDECODE_ROWS=4 rows1=VOX_PDECODE_ROWS=1 2>&1 | tail -9 | tee -a $OUT/summary.txt
done
python3 scripts/decode_ab.py --runner build/base/voxtral_runner --model models/full --batch-size 4 --repeats 4 \
  --rounds 2 main_rows4=VOX_PDECODE_ROWS=4 2>&1 | tail -9 | tee -a $OUT/summary.txt
say "end t $(el) s"
