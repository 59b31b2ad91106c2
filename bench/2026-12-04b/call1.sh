#!/bin/bash
# call 1: loadonly experiment, full checks, sanitizers on the split consumer
source .devscripts/common.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
T=build/tests/test_kernels_pdecode
L=build/tests/test_kernels_pdecode_loadonly
echo "== checks + timing (main)"; $T 2>&1 | tail -12
for r in 1 2; do
  for cfg in bf16-row fp8-row; do
    for e in - nocompute loadonly; do
      if [ $e = - ]; then v=""; else v="VOX_PDECODE_EXPERIMENT=$e"; fi
      printf "round %s %-9s %-9s " $r $cfg $e; env $v $L --timing-only $cfg 2>&1 | grep -E "us a step|us/step|step" | head -1
    done
  done
done
for tool in memcheck racecheck synccheck; do
  echo "== $tool (awkward shapes, every consumer)"
  extra=""; [ $tool = racecheck ] && extra="--racecheck-report analysis"
  VOX_PDECODE_WATCHDOG_S=600 timeout 170 compute-sanitizer --tool $tool $extra $T --no-timing awkward > $OUT/san-$tool.log 2>&1; echo "rc $?"
  tail -4 $OUT/san-$tool.log
done
