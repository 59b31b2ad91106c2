#!/bin/bash
# call 9: what the staging costs (timing only): default, FP8 without quantizing, no staging at all
source .devscripts/common.sh
X=build/tests/test_kernels_pdecode_stagexp
for r in 1 2; do
  for cfg in bf16-split fp8-split fp8-row; do
    for e in - noquant nostage; do
      [ $cfg = bf16-split ] && [ $e = noquant ] && continue
      if [ $e = - ]; then v=""; else v="VOX_PDECODE_EXPERIMENT=$e"; fi
      printf "round %s %-10s %-8s " $r $cfg $e; env $v $X --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    done
  done
done
