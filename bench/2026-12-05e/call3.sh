#!/bin/bash
# call 3 of 2026-12-05e: the key groups' block-table entries loaded once a unit, a lane a group
# (kernels/pdecode.cu attention_unit: lane_block), against main 15098b2
# (test_kernels_pdecode_base): the checks (every shape), the tiny models end to end, then the
# full-size step in alternating rounds (1 / 4 / 8 rows, bf16 and FP8; one row with
# VOX_PDECODE_SPLITS=1). Packed as call 1. ~3 min.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
B=build/tests/test_kernels_pdecode_base
timeout 200 $T --no-timing > $OUT/checks.txt 2>&1; say "checks rc $? $(tail -1 $OUT/checks.txt) (t $(el) s)"
grep -E "FAIL|outside" $OUT/checks.txt | head -8 | tee -a $OUT/summary.txt
for m in tiny_model tiny_model_fp8; do
  timeout 100 build/tests/test_cuda_transcribe build/$m > $OUT/e2e-$m.txt 2>&1
  say "$m: rc $? $(tail -1 $OUT/e2e-$m.txt) (t $(el) s)"
done
for r in 1 2; do
  for cfg in bf16-split-r4 fp8-split-r4 bf16-split-r8 fp8-split-r8 bf16-split fp8-split; do
    for X in $B $T; do
      say "round $r $(printf '%-14s' $cfg) $([ $X = $T ] && echo new || echo main) $(step $X --timing-only $cfg)"
    done
  done
  for X in $B $T; do
    say "round $r splits 1 bf16-split $([ $X = $T ] && echo new || echo main) $(VOX_PDECODE_SPLITS=1 step $X --timing-only bf16-split)"
  done
done
say "end t $(el) s"
