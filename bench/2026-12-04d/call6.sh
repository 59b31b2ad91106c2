#!/bin/bash
# call 6: ring rows rotated by 64 bytes a row (no 8-way bank conflicts on the split consumer's
# 16-byte loads): checks, tiny end to end, then timing against HEAD (e4m3), every consumer
source .devscripts/common.sh
t0=$(date +%s)
T=build/tests/test_kernels_pdecode
echo "== checks (rot)"; $T --no-timing > $OUT/checks.txt 2>&1; echo "rc $?"; tail -1 $OUT/checks.txt
echo "== tiny end to end"; for m in tiny_model tiny_model_fp8; do for c in - row; do
  if [ $c = - ]; then v=""; else v="VOX_PDECODE_CONSUMER=$c"; fi
  printf "%s %s: " $m $c; env $v build/tests/test_cuda_transcribe build/$m 2>&1 | tail -1; done; done
echo "t $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do
  for cfg in fp8-split bf16-split fp8-row bf16-row; do
    for bin in e4m3 rot; do
      [ $r = 3 ] && [ ${cfg#*-} = row ] && continue
      case $bin in e4m3) X=${T}_e4m3;; rot) X=$T;; esac
      printf "round %s %-10s %-5s " $r $cfg $bin; $X --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    done
  done
done
echo "t $(( $(date +%s) - t0 )) s"
