#!/bin/bash
# call 4: FP8 split consumer, three builds: base (26cdf91: x as fp16, fp16 mmas, 2 vectors a lane in
# flight), e4m3 (4703f3a: mma.sync m16n8k32 E4M3, 4 in flight), new (x as fp16, fp16 mmas, 4 in
# flight): checks of new, then three rounds of the full-size timing
source .devscripts/common.sh
t0=$(date +%s)
T=build/tests/test_kernels_pdecode
echo "== checks (new)"; $T --no-timing > $OUT/checks.txt 2>&1; echo "rc $?"; tail -1 $OUT/checks.txt
echo "== tiny end to end"; for m in tiny_model tiny_model_fp8; do
  printf "%s: " $m; build/tests/test_cuda_transcribe build/$m 2>&1 | tail -1; done
echo "== skinny (shares the E4M3 mma helper)"; build/tests/test_kernels_skinny 2>&1 | tail -1
echo "t $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do
  for cfg in fp8-split bf16-split; do
    for bin in base e4m3 new; do
      [ $cfg = bf16-split ] && [ $bin = e4m3 ] && continue
      case $bin in base) X=${T}_base;; e4m3) X=${T}_e4m3;; new) X=$T;; esac
      printf "round %s %-10s %-5s " $r $cfg $bin; $X --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    done
  done
done
echo "t $(( $(date +%s) - t0 )) s"
