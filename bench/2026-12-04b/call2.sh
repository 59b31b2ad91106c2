#!/bin/bash
# call 2: mma consumer removed, split's slots ordered: checks, A/B timing vs base, sanitizers
source .devscripts/common.sh
pwd
T=build/tests/test_kernels_pdecode
B=build/tests/test_kernels_pdecode_base
echo "== checks (new)"; $T --no-timing 2>&1 | tail -1
echo "== tiny end to end"; for m in tiny_model tiny_model_fp8; do for c in - split; do
  if [ $c = - ]; then v=""; else v="VOX_PDECODE_CONSUMER=$c"; fi
  printf "%s %s: " $m $c; env $v build/tests/test_cuda_transcribe build/$m 2>&1 | tail -1; done; done
for r in 1 2 3; do
  for cfg in bf16-row fp8-row bf16-split fp8-split; do
    for bin in $B $T; do
      printf "round %s %-10s %-5s " $r $cfg $([ $bin = $T ] && echo new || echo base); $bin --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    done
  done
done
for tool in memcheck racecheck synccheck; do
  echo "== $tool (awkward shapes, both consumers)"
  extra=""; [ $tool = racecheck ] && extra="--racecheck-report analysis"
  VOX_PDECODE_WATCHDOG_S=600 timeout 170 compute-sanitizer --tool $tool $extra $T --no-timing awkward > $OUT/san-$tool.log 2>&1; echo "rc $?"
  tail -3 $OUT/san-$tool.log
done
