#!/bin/bash
# call 3 (NOTES-2026-12-05b section 5), after call 2, for the variant that lands (pairs or x16):
# compute-sanitizer on its split consumer, as NOTES-2026-12-04b section 2 and 04c section 3 ran
# it on main (the unit barrier's arrivals changed: 64 a phase, lanes (r, 0)): racecheck at the
# full width, memcheck and synccheck at the awkward shapes. Packed as call 2 (the same binaries).
#   bash bench/2026-12-05b/call3.sh x16
source .devscripts/common.sh
v=${1:?pairs or x16}
X=build/tests/test_kernels_pdecode_$v
t0=$(date +%s)
export VOX_PDECODE_WATCHDOG_S=900
timeout 240 compute-sanitizer --tool racecheck --racecheck-report analysis $X --no-timing "full width" split \
  > $OUT/racecheck-full-width-$v.log 2>&1; echo "racecheck full width rc $? $(grep -E 'RACECHECK SUMMARY|checks,' $OUT/racecheck-full-width-$v.log | tr '\n' ' ')"
for tool in memcheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool $X --no-timing awkward split > $OUT/$tool-awkward-$v.log 2>&1
  echo "$tool awkward rc $? $(grep -E 'ERROR SUMMARY|checks,' $OUT/$tool-awkward-$v.log | tr '\n' ' ')"
done
echo "t $(( $(date +%s) - t0 )) s"
