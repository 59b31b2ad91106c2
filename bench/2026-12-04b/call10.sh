#!/bin/bash
# call 10: racecheck and synccheck at the full width (the split consumer, the default; and the row one)
source .devscripts/common.sh
T=build/tests/test_kernels_pdecode
for tool in racecheck synccheck; do
  extra=""; [ $tool = racecheck ] && extra="--racecheck-report analysis"
  f=$OUT/san-$tool-full_width.log
  VOX_PDECODE_WATCHDOG_S=600 timeout 85 compute-sanitizer --tool $tool $extra $T --no-timing "full width" > $f 2>&1; echo "== $tool full width rc $?"
  grep -E "checks|SUMMARY|outside" $f | tail -3
done
