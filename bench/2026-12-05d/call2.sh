#!/bin/bash
# call 2 of 2026-12-05d (not run yet; call 1b ran racecheck at 8 rows, full width, FP8: 0
# hazards): the rest of compute-sanitizer on the batched persistent decode, in one 10-minute
# command, each tool started only when the elapsed time leaves it room: memcheck on 7 rows with
# down in chunks, synccheck on 3 rows at awkward sizes, racecheck at 4 rows (whole staging).
source .devscripts/common.sh
X=build/tests/test_kernels_pdecode
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
export VOX_PDECODE_WATCHDOG_S=900
run() { # tool, seconds, shape
  local tool=$1 secs=$2 shape=$3 log=$OUT/$1-${3// /-}.log extra=
  [ $(( $(el) + secs )) -gt 580 ] && { echo "skip $tool $shape (t $(el) s)"; return; }
  [ $tool = racecheck ] && extra="--racecheck-report analysis"
  timeout $secs compute-sanitizer --tool $tool $extra $X --no-timing "$shape" split > $log 2>&1
  echo "$tool $shape rc $? $(grep -E 'SUMMARY|checks,' $log | tr '\n' ' ') (t $(el) s)"
}
run memcheck 90 "rows 7 ffn chunks fp8"
run synccheck 90 "rows 3 awkward"
run racecheck 200 "rows 4 full width fp8"
run memcheck 60 "rows 3 awkward fp8"
echo "end t $(el) s"
