#!/bin/bash
# call 1 (for the next device session): four pdecode variants against HEAD, in one call.
# Built on the CPU machine first:
#   bash bench/2026-12-04e/build_variants.sh \
#     pad=bench/2026-12-04e/pdecode-ring-padding.patch \
#     onebar=bench/2026-12-04e/pdecode-stage-one-barrier.patch \
#     half=bench/2026-12-04d/pdecode-half-pages.patch \
#     all=bench/2026-12-04e/pdecode-ring-padding.patch+bench/2026-12-04e/pdecode-stage-one-barrier.patch+bench/2026-12-04d/pdecode-half-pages.patch
#   nvcc -arch=sm_90a -o build/tests/tma_layout_probe bench/2026-12-04e/tma_layout_probe.cu
#   P="nvcc -arch=sm_90a -O3 -I kernels -I include bench/2026-12-04e/page_consumer_probe.cu -o build/tests/page_consumer_probe"
#   $P && git apply bench/2026-12-04e/pdecode-ring-padding.patch && ${P}_pad; git checkout kernels/pdecode.cu
#   EXTRA_BINS="$(ls build/tests/test_kernels_pdecode_* build/tests/page_consumer_probe* | tr '\n' ' ') build/tests/tma_layout_probe" bash .devscripts/pack.sh
# (pack.sh and common.sh: bench/2026-12-04c/, copied to .devscripts/). Then every variant's
# checks (908 at HEAD), and three rounds of the full-size step timing, HEAD and the variants
# interleaved. What each should gain: bench/NOTES-2026-12-04e.md section 2.
source .devscripts/common.sh
t0=$(date +%s)
T=build/tests/test_kernels_pdecode
echo "== TMA layout probe (section 3)"; timeout 60 build/tests/tma_layout_probe; echo "rc $?"
for b in page_consumer_probe page_consumer_probe_pad; do # HEAD's mma_vectors, then the patch's
  echo "== $b (section 4)"; timeout 120 build/tests/$b; echo "rc $?"
done
for v in pad onebar half all; do
  printf "== checks %-7s" $v; ${T}_$v --no-timing > $OUT/checks-$v.txt 2>&1; echo "rc $? $(tail -1 $OUT/checks-$v.txt)"
done
echo "t $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do
  for cfg in fp8-split bf16-split; do
    for v in head pad onebar half all; do
      [ $cfg = bf16-split ] && [ $v = half ] && continue # half pages exist only in FP8 rows of K = 3072
      X=${T}_$v; [ $v = head ] && X=$T
      printf "round %s %-10s %-7s " $r $cfg $v; $X --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    done
  done
done
echo "t $(( $(date +%s) - t0 )) s"
