#!/bin/bash
# call 1 (for the next device session), bench/NOTES-2026-12-04e.md sections 2-4, in one call:
# the two probes, then four pdecode variants against HEAD (checks, then three interleaved rounds of
# the full-size step timing), then the wgmma consumer (its checks, then its timing beside the split
# consumer of the same binary and of HEAD), each wgmma run under a timeout (a page wait has no
# watchdog: a tensor copy whose bytes fall short would hang it). Built on the CPU machine first:
#   bash bench/2026-12-04e/build_variants.sh \
#     pad=bench/2026-12-04e/pdecode-ring-padding.patch \
#     onebar=bench/2026-12-04e/pdecode-stage-one-barrier.patch \
#     half=bench/2026-12-04d/pdecode-half-pages.patch \
#     all=bench/2026-12-04e/pdecode-ring-padding.patch+bench/2026-12-04e/pdecode-stage-one-barrier.patch+bench/2026-12-04d/pdecode-half-pages.patch \
#     wg=bench/2026-12-04e/pdecode-wgmma-consumer.patch
#   nvcc -arch=sm_90a -o build/tests/tma_layout_probe bench/2026-12-04e/tma_layout_probe.cu
#   P="nvcc -arch=sm_90a -O3 -I kernels -I include bench/2026-12-04e/page_consumer_probe.cu -o build/tests/page_consumer_probe"
#   $P && git apply bench/2026-12-04e/pdecode-ring-padding.patch && ${P}_pad; git checkout kernels/pdecode.cu
#   EXTRA_BINS="$(for v in pad onebar half all wg; do printf 'build/tests/test_kernels_pdecode_%s ' $v; done)build/tests/tma_layout_probe build/tests/page_consumer_probe build/tests/page_consumer_probe_pad" bash .devscripts/pack.sh
# (pack.sh and common.sh: bench/2026-12-04c/, copied to .devscripts/.)
source .devscripts/common.sh
t0=$(date +%s)
T=build/tests/test_kernels_pdecode
echo "== TMA layout probe (section 3)"; timeout 60 build/tests/tma_layout_probe; rc3=$?; echo "rc $rc3"
for b in page_consumer_probe page_consumer_probe_pad; do # HEAD's mma_vectors, then the patch's
  echo "== $b (section 4)"; timeout 120 build/tests/$b; echo "rc $?"
done
for v in pad onebar half all; do
  printf "== checks %-7s" $v; timeout 150 ${T}_$v --no-timing > $OUT/checks-$v.txt 2>&1; echo "rc $? $(tail -1 $OUT/checks-$v.txt)"
done
echo "t $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do
  for cfg in fp8-split bf16-split; do
    for v in head pad onebar half all; do
      [ $cfg = bf16-split ] && [ $v = half ] && continue # half pages exist only in FP8 rows of K = 3072
      X=${T}_$v; [ $v = head ] && X=$T
      printf "round %s %-10s %-7s " $r $cfg $v; timeout 60 $X --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    done
  done
done
echo "t $(( $(date +%s) - t0 )) s"
# the wgmma consumer: 16 tensor copies a page unless the probe accepted the 3-D map in full
[ $rc3 = 0 ] || export VOX_PDECODE_MAP_RANK=2
echo "== wgmma consumer, map rank ${VOX_PDECODE_MAP_RANK:-3}"
timeout 120 ${T}_wg --no-timing "" wg > $OUT/checks-wg.txt 2>&1; echo "checks rc $? $(tail -1 $OUT/checks-wg.txt)"
grep -E "FAIL|mean" $OUT/checks-wg.txt | head -20
for r in 1 2 3; do
  for cfg in fp8-wg fp8-split bf16-wg bf16-split; do
    printf "round %s %-10s wg-build " $r $cfg; timeout 60 ${T}_wg --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
  done
done
echo "t $(( $(date +%s) - t0 )) s"
