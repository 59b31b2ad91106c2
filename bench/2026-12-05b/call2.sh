#!/bin/bash
# call 2 (NOTES-2026-12-05b section 3): the split consumer's mma pairs (the unit's rows as the mma's
# m side twice over, x's two vectors as B's columns 0 and 1: half the mmas a page), alone (pairs),
# with FP8's input staged as fp16 values (x16: only the weights are widened), and with odd rows'
# vectors swapped as well (nc: no bank conflicts on the weights' loads), against HEAD:
# the page probe, each variant's kernel checks and tiny end to end, three interleaved rounds of
# the full-size step, then two arms for information (the page hand-over by one lane a warp, and
# the step without its products). Built on the CPU machine first:
#   VARIANT_RUNNER=1 bash bench/2026-12-04e/build_variants.sh pairs=bench/2026-12-05b/pdecode-mma-pairs.patch \
#       x16=bench/2026-12-05b/pdecode-mma-pairs.patch+bench/2026-12-05b/pdecode-mma-pairs-x16.patch \
#       nc=bench/2026-12-05b/pdecode-mma-pairs.patch+bench/2026-12-05b/pdecode-mma-pairs-x16.patch+bench/2026-12-05b/pdecode-mma-pairs-nc.patch
#   (the probe: the build lines at the top of bench/2026-12-05b/fp8_convert_probe.cu)
#   EXTRA_BINS="build/tests/fp8_convert_probe $(echo build/tests/test_kernels_pdecode_{pairs,x16,nc} build/tests/test_cuda_transcribe_{pairs,x16,nc} build/voxtral_runner_{pairs,x16,nc})" bash .devscripts/pack.sh
# (pack.sh and common.sh: bench/2026-12-04c/, copied to .devscripts/.)
source .devscripts/common.sh
t0=$(date +%s)
echo "== fp8_convert_probe"; timeout 60 build/tests/fp8_convert_probe
T=build/tests/test_kernels_pdecode
for v in pairs x16 nc; do
  printf "== checks %s " $v; timeout 150 ${T}_$v --no-timing > $OUT/checks-$v.txt 2>&1; echo "rc $? $(tail -1 $OUT/checks-$v.txt)"
  grep -E "FAIL" $OUT/checks-$v.txt | head -5
  for m in tiny_model tiny_model_fp8; do
    printf "tiny end to end %s %s: " $v $m; timeout 120 build/tests/test_cuda_transcribe_$v build/$m > $OUT/e2e-$v-$m.txt 2>&1; echo "rc $? $(tail -1 $OUT/e2e-$v-$m.txt)"
  done
done
echo "t $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do
  for cfg in fp8-split bf16-split; do
    for v in head pairs x16 nc; do
      [ $v = x16 ] && [ $cfg = bf16-split ] && continue # x16 changes FP8 only (nc's bf16 is pairs + nc)
      X=${T}_$v; [ $v = head ] && X=$T
      printf "round %s %-10s %-6s " $r $cfg $v; timeout 60 $X --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    done
  done
done
for v in head nc; do
  for cfg in fp8-split bf16-split; do
    X=${T}_$v; [ $v = head ] && X=$T
    printf "hand-over lane %-10s %-6s " $cfg $v; VOX_PDECODE_HANDOVER=lane timeout 60 $X --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    printf "no products    %-10s %-6s " $cfg $v; VOX_PDECODE_EXPERIMENT=nocompute timeout 60 $X --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
  done
done
echo "t $(( $(date +%s) - t0 )) s"
