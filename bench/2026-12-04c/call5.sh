#!/bin/bash
# call 5: bench_gpu.py bf16 and fp8 at 60aa0c0 (end to end = the stage sum)
source .devscripts/common.sh
run() { # name, script args...
  local name=$1; shift
  python3 "$@" --out /tmp/$name > /tmp/$name.log 2>&1; echo "$name rc $?"
  mkdir -p $OUT/$name; cp /tmp/$name/results.md /tmp/$name/results.json $OUT/$name/ 2>/dev/null
  cp /tmp/$name.log $OUT/$name/ 2>/dev/null
  sed -n '/## Summary/,/## /p' /tmp/$name/results.md | head -40
}
run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 200
run gpu_fp8 scripts/bench_gpu.py --size full --dtype fp8 --reuse --hf-batched off --device cuda --runner-device cuda --build build --budget-s 160
