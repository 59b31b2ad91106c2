#!/bin/bash
# call 1: the batching benchmark on main (bf16), transformers in the same run
source .devscripts/common.sh
git log -1 --format='%h %s' 2>/dev/null | head -1
python3 scripts/bench_batch.py --size full --device cuda --runner-device cuda --build build \
  --out $OUT/bench --budget-s 430 --deadline-s 460 > $OUT/bench.log 2>&1; echo "rc $?"
tail -5 $OUT/bench.log
sed -n '/## Summary/,/## Steps/p' $OUT/bench/results.md
