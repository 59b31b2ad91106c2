#!/bin/bash
# call 5: FP8 split consumer timing, three builds: base (26cdf91), e4m3 (4703f3a, HEAD), v2 (x as
# fp16 again, fp16 mmas each from zero, sums added in fp32: no widening of x); then
# bench_gpu.py --dtype fp8 on HEAD
source .devscripts/common.sh
t0=$(date +%s)
T=build/tests/test_kernels_pdecode
echo "== checks (v2)"; ${T}_v2 --no-timing "full width" split 2>&1 | tail -1
for r in 1 2 3; do
  for bin in base e4m3 v2; do
    case $bin in base) X=${T}_base;; e4m3) X=$T;; v2) X=${T}_v2;; esac
    printf "round %s fp8-split %-5s " $r $bin; $X --timing-only fp8-split 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
  done
done
echo "t $(( $(date +%s) - t0 )) s"
name=gpu_fp8
BENCH_GIT_REV=4703f3a timeout 420 python3 scripts/bench_gpu.py --size full --dtype fp8 --hf-batched off --device cuda --runner-device cuda --build build --budget-s 300 \
  --out /tmp/$name > /tmp/$name.log 2>&1; echo "$name rc $?"
mkdir -p $OUT/$name; cp /tmp/$name/results.md /tmp/$name/results.json $OUT/$name/ 2>/dev/null
cp /tmp/$name.log $OUT/$name/ 2>/dev/null
sed -n '/## Summary/,/## /p' /tmp/$name/results.md | head -40
echo "t $(( $(date +%s) - t0 )) s"
