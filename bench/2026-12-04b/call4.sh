#!/bin/bash
# call 4: the split consumer as the default: checks, timing + stamps, sanitizers, tiny end to end
source .devscripts/common.sh
T=build/tests/test_kernels_pdecode
$T > $OUT/pdecode-full.txt 2>&1; echo "full run rc $?"; grep -E "checks|us a step|stamped|^  [a-z|]+ +wait" $OUT/pdecode-full.txt
for m in tiny_model tiny_model_fp8; do for c in - row; do
  if [ $c = - ]; then v=""; else v="VOX_PDECODE_CONSUMER=$c"; fi
  printf "%s %s: " $m $c; env $v build/tests/test_cuda_transcribe build/$m 2>&1 | tail -1; done; done
for tool in memcheck racecheck synccheck; do
  for shape in awkward "full width"; do
    [ "$shape" = "full width" ] && [ $tool != memcheck ] && continue
    extra=""; [ $tool = racecheck ] && extra="--racecheck-report analysis"
    f=$OUT/san-$tool-${shape// /_}.log
    VOX_PDECODE_WATCHDOG_S=600 timeout 200 compute-sanitizer --tool $tool $extra $T --no-timing "$shape" > $f 2>&1; echo "== $tool $shape rc $?"
    grep -E "checks|SUMMARY|outside" $f | tail -3
  done
done
