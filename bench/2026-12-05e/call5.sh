#!/bin/bash
# call 5 of 2026-12-05e: on an H200, scripts/bench_gpu.py bf16 and --dtype fp8 on main (the
# README's batch-1 table is 2026-12-04's: the 24 KB pages and the mma pairs are not in it), as
# bench/2026-12-04c/call5.sh with budgets cut to fit one 10-minute command; on another card, the
# mixed batch of call4.sh only. Runner: main (683dd17's code).
source .devscripts/common.sh
run() { # name, script args...
  local name=$1; shift
  python3 "$@" --out /tmp/$name > /tmp/$name.log 2>&1; echo "$name rc $?"
  mkdir -p $OUT/$name; cp /tmp/$name/results.md /tmp/$name/results.json $OUT/$name/ 2>/dev/null
  cp /tmp/$name.log $OUT/$name/ 2>/dev/null
  sed -n '/## Summary/,/## /p' /tmp/$name/results.md | head -30
}
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 150
  run gpu_fp8 scripts/bench_gpu.py --size full --dtype fp8 --reuse --hf-batched off --device cuda --runner-device cuda --build build --budget-s 120
else
  VOX_CALL_NESTED=1 bash .devscripts/call4.sh
fi
