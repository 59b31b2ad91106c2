#!/bin/bash
# call 2 (NOTES-2026-12-05 section 5): 24 KB ring pages (FP8 units of K = 3072 one page) against
# HEAD: the variant's kernel checks and tiny end to end, then three interleaved rounds of the
# full-size step. Built on the CPU machine first:
#   VARIANT_RUNNER=1 bash bench/2026-12-04e/build_variants.sh p24=bench/2026-12-05/pdecode-24k-pages.patch
#   bash bench/2026-12-04e/build_variants.sh p24n3=bench/2026-12-05/pdecode-24k-pages-3inflight.patch
#   EXTRA_BINS="build/tests/test_kernels_pdecode_p24 build/tests/test_kernels_pdecode_p24n3 build/tests/test_cuda_transcribe_p24 build/voxtral_runner_p24" bash .devscripts/pack.sh
# (p24n3: the split consumer's loads of a page in two turns of 3 a lane, 6 accumulators: no spills.)
# (pack.sh and common.sh: bench/2026-12-04c/, copied to .devscripts/.)
source .devscripts/common.sh
t0=$(date +%s)
T=build/tests/test_kernels_pdecode
for v in p24 p24n3; do
  printf "== checks %s " $v; timeout 150 ${T}_$v --no-timing > $OUT/checks-$v.txt 2>&1; echo "rc $? $(tail -1 $OUT/checks-$v.txt)"
  grep -E "FAIL" $OUT/checks-$v.txt | head -5
done
for m in tiny_model tiny_model_fp8; do
  printf "tiny end to end %s: " $m; timeout 120 build/tests/test_cuda_transcribe_p24 build/$m > $OUT/e2e-$m.txt 2>&1; echo "rc $? $(tail -1 $OUT/e2e-$m.txt)"
done
echo "t $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do
  for cfg in fp8-split bf16-split fp8-row bf16-row; do
    for v in head p24 p24n3; do
      [ $r = 3 ] && [ ${cfg#*-} = row ] && continue
      [ $v = p24n3 ] && [ ${cfg#*-} = row ] && continue # the same row consumer as p24
      X=${T}_$v; [ $v = head ] && X=$T
      printf "round %s %-10s %-6s " $r $cfg $v; timeout 60 $X --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    done
  done
done
echo "t $(( $(date +%s) - t0 )) s"
