#!/bin/bash
# call 3 (for the next device session): the batching benchmark on main, fp8 decoder, transformers in
# the same run: the README's batch table has not been measured with the prompt order (largest
# token budget first, NOTES-2026-12-04d section 1: batch_ab's tone clips only); its FP8 row is 2026-12-01's
source .devscripts/common.sh
git log -1 --format='%h %s' 2>/dev/null | head -1
python3 scripts/bench_batch.py --size full --dtype fp8 --device cuda --runner-device cuda --build build \
  --out $OUT/bench --budget-s 430 --deadline-s 460 > $OUT/bench.log 2>&1; echo "rc $?"
tail -5 $OUT/bench.log
sed -n '/## Summary/,/## Steps/p' $OUT/bench/results.md
