#!/bin/bash
# call 3: racecheck of the split consumer (the default) at the full width, bf16 and FP8
source .devscripts/common.sh
T=build/tests/test_kernels_pdecode
echo "== plain run of the filter (no tool)"; $T --no-timing "full width" split 2>&1 | tail -2
echo "== racecheck, full width, split consumer"
date +%T
VOX_PDECODE_WATCHDOG_S=900 timeout 500 compute-sanitizer --tool racecheck --racecheck-report analysis \
  $T --no-timing "full width" split > $OUT/racecheck-full-split.log 2>&1; echo "rc $?"
date +%T
grep -c "^PASS\|ok " $OUT/racecheck-full-split.log; tail -6 $OUT/racecheck-full-split.log
