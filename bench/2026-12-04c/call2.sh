#!/bin/bash
# call 2: bench_gpu.py bf16 and fp8 on c59ecdd (its first try stopped at an argument bench_gpu.py does not take, --deadline-s, removed here; call 4 ran this script again after 1ecf4d1)
source .devscripts/common.sh
run() { # name, script args...
  local name=$1; shift
  python3 "$@" --out /tmp/$name > /tmp/$name.log 2>&1; echo "$name rc $?"
  mkdir -p $OUT/$name; cp /tmp/$name/results.md /tmp/$name/results.json $OUT/$name/ 2>/dev/null
  cp /tmp/$name.log $OUT/$name/ 2>/dev/null
  sed -n '/## Summary/,/## /p' /tmp/$name/results.md | head -40
}
run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 200
run gpu_fp8 scripts/bench_gpu.py --size full --dtype fp8 --reuse --device cuda --runner-device cuda --build build --budget-s 160
