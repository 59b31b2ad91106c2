#!/bin/bash
# calls 2 and 3 (for the next device session): the batching benchmark on main, transformers in the
# same run, `call2.sh bf16` then `call2.sh fp8` (~7 min each): the README's batch table has not
# been measured with the prompt order (largest token budget first, NOTES-2026-12-04d section 1:
# batch_ab's tone clips only), and its FP8 row is 2026-12-01's.
source .devscripts/common.sh
dtype=${1:?bf16 or fp8}
git log -1 --format='%h %s' 2>/dev/null | head -1
python3 scripts/bench_batch.py --size full --dtype $dtype --device cuda --runner-device cuda --build build \
  --out $OUT/bench --budget-s 430 --deadline-s 460 > $OUT/bench.log 2>&1; echo "rc $?"
tail -5 $OUT/bench.log
sed -n '/## Summary/,/## Steps/p' $OUT/bench/results.md
