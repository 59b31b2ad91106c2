#!/bin/bash
# call 2 (NOTES-2026-12-05c section 3), after call 1 passes: compute-sanitizer on the batched
# instances, as 2026-12-05b/call3.sh runs it on the one-row split consumer: racecheck at the
# full width (4 and 8 rows: the stage's rows, the chunks' re-staging, the per-row barriers),
# memcheck and synccheck at the awkward and chunked shapes. Packed as call 1 (the same binaries).
source .devscripts/common.sh
X=build/tests/test_kernels_pdecode
t0=$(date +%s)
export VOX_PDECODE_WATCHDOG_S=900
for shape in "rows 4 full width fp8" "rows 8 full width fp8"; do
  log=$OUT/racecheck-${shape// /-}.log
  timeout 240 compute-sanitizer --tool racecheck --racecheck-report analysis $X --no-timing "$shape" split \
    > $log 2>&1; echo "racecheck $shape rc $? $(grep -E 'RACECHECK SUMMARY|checks,' $log | tr '\n' ' ')"
done
for tool in memcheck synccheck; do
  for shape in "rows 3 awkward" "rows 7 ffn chunks fp8"; do
    log=$OUT/$tool-${shape// /-}.log
    timeout 150 compute-sanitizer --tool $tool $X --no-timing "$shape" split > $log 2>&1
    echo "$tool $shape rc $? $(grep -E 'ERROR SUMMARY|checks,' $log | tr '\n' ' ')"
  done
done
echo "t $(( $(date +%s) - t0 )) s"
