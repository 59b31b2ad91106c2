#!/bin/bash
# call 1: the prompt order on the H200 (largest budget first vs admission order), then
# bench_batch.py --dtype fp8 on main
source .devscripts/common.sh
t0=$(date +%s)
python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
echo "model after $(( $(date +%s) - t0 )) s"
python3 scripts/batch_ab.py --runner build/voxtral_runner --model models/full --rounds 2 \
  def=- adm=VOX_PREFILL_ORDER=admission > $OUT/batch_ab-order.txt 2>&1; echo "rc $?"
cat $OUT/batch_ab-order.txt | tail -20
echo "t $(( $(date +%s) - t0 )) s"
rm -rf models/full
BENCH_GIT_REV=26cdf91 python3 scripts/bench_batch.py --size full --dtype fp8 --device cuda --runner-device cuda --build build \
  --out $OUT/bench-fp8 --budget-s 330 --deadline-s 360 > $OUT/bench-fp8.log 2>&1; echo "rc $?"
tail -3 $OUT/bench-fp8.log
sed -n '/## Summary/,/## Steps/p' $OUT/bench-fp8/results.md
echo "t $(( $(date +%s) - t0 )) s"
