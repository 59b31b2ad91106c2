#!/bin/bash
# call 1c of 2026-12-05d (not run: no device time was left): the end-to-end A/B of the batched
# persistent decode: the full-size model and decode_ab, 8 copies of a 30 s clip at --batch-size 8, rows 1 against 8.
source .devscripts/common.sh
t0=$(date +%s)
python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
echo "model after $(( $(date +%s) - t0 )) s"
python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full \
  --batch-size 8 --repeats 8 --rounds 2 rows1=VOX_PDECODE_ROWS=1 rows8=VOX_PDECODE_ROWS=8 2>&1 | tail -14 | tee $OUT/decode_ab.txt
echo "end t $(( $(date +%s) - t0 )) s"
