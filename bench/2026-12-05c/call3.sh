#!/bin/bash
# call 3 (NOTES-2026-12-05c section 5): 2026-12-05b's mma pairs ported onto main's one-row
# instance (pdecode-pairs-on-main.patch; the batched instances keep their rows in A), checked and
# timed against main in the same call, so that a win of 2026-12-05b's call 2 (the pairs on their
# 5cec6a6 base) can land without another round. Built on the CPU machine first:
#   VARIANT_RUNNER=1 bash bench/2026-12-04e/build_variants.sh pairsm=bench/2026-12-05c/pdecode-pairs-on-main.patch
#   EXTRA_BINS="build/tests/test_kernels_pdecode_pairsm build/tests/test_cuda_transcribe_pairsm build/voxtral_runner_pairsm" bash .devscripts/pack.sh
# ~5 min.
source .devscripts/common.sh
t0=$(date +%s)
T=build/tests/test_kernels_pdecode
V=${T}_pairsm
printf "== checks pairsm "; timeout 300 $V --no-timing > $OUT/checks-pairsm.txt 2>&1; echo "rc $? $(tail -1 $OUT/checks-pairsm.txt)"
grep -E "FAIL" $OUT/checks-pairsm.txt | head -5
for m in tiny_model tiny_model_fp8; do
  printf "tiny end to end pairsm %s: " $m; timeout 150 build/tests/test_cuda_transcribe_pairsm build/$m > $OUT/e2e-pairsm-$m.txt 2>&1; echo "rc $? $(tail -1 $OUT/e2e-pairsm-$m.txt)"
done
echo "t $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do
  for cfg in fp8-split bf16-split; do
    for X in $T $V; do
      printf "round %s %-10s %-6s " $r $cfg $([ $X = $T ] && echo main || echo pairsm); timeout 60 $X --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    done
  done
done
echo "t $(( $(date +%s) - t0 )) s"
