#!/bin/bash
# call 3 of 2026-12-07b (any card), for a call with little device time left (~300 s):
# - H200: the one-row in-flight cap 2 / 3 / 4 at main's heads (bf16, FP8, bf16 at 4 rows; two
#   rounds, ~20 s), then the full model and scripts/decode_ab.py on 30 s + 100 tokens: main
#   (cap 2) against cap 3, bf16 (issue 11's decode figure on its card; prediction in
#   bench/2026-12-06g/call1.sh: cap 3 -1 to -4% at one row, 2.156 -> ~2.07-2.12 ms/token).
# - Otherwise: bench/2026-12-07/call3.sh (the K-sliced residual projections' checks and 24-row
#   A/B; LIMIT adds the mixed files).
# Pack: as call 1, this file in .devscripts/ as call3-lite.sh (call3.sh there is 2026-12-07's).
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in
  *H200*) ;;
  *) LIMIT=${LIMIT:-0} exec bash .devscripts/call3.sh ;;
esac
source .devscripts/device-call.sh
cap_sweep
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --repeats 4 --rounds 2 \
  cap2=- cap3=VOX_PDECODE_INFLIGHT=3 cap4=VOX_PDECODE_INFLIGHT=4 2>&1 | tee $OUT/decode_ab.txt | tail -12
say "end t $(el) s"
