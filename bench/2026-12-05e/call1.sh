#!/bin/bash
# call 1 of 2026-12-05e: the attention's later keys prefetched into L2 (kernels/pdecode.cu,
# FirstKeys::later) against main 15098b2 (test_kernels_pdecode_base, built by
# `BASE=15098b2 bash bench/2026-12-05c/build_base.sh`). The checks (every shape), the tiny models
# end to end at the new default (4 rows), at 8 and at 1; then the full-size step, base and new in
# alternating rounds at 1 / 4 / 8 rows, bf16 and FP8, and one row with VOX_PDECODE_SPLITS=1 (units
# of 440 keys: the direct test of the prefetch). Packed by bench/2026-12-04c/pack.sh with
# EXTRA_BINS="build/tests/test_kernels_pdecode_base build/base/voxtral_runner". ~4 min.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
B=build/tests/test_kernels_pdecode_base
timeout 200 $T --no-timing > $OUT/checks.txt 2>&1; say "checks rc $? $(tail -1 $OUT/checks.txt) (t $(el) s)"
grep -E "FAIL" $OUT/checks.txt | head -8 | tee -a $OUT/summary.txt
for rows in 4 8 1; do
  for m in tiny_model tiny_model_fp8; do
    VOX_PDECODE_ROWS=$rows timeout 100 build/tests/test_cuda_transcribe build/$m > $OUT/e2e-$m-$rows.txt 2>&1
    say "$m rows $rows: rc $? $(tail -1 $OUT/e2e-$m-$rows.txt) (t $(el) s)"
    grep -E "FAIL" $OUT/e2e-$m-$rows.txt | head -3 | tee -a $OUT/summary.txt
  done
done
for r in 1 2; do
  for cfg in fp8-split bf16-split fp8-split-r4 bf16-split-r4 fp8-split-r8 bf16-split-r8; do
    for X in $B $T; do
      say "round $r $(printf '%-14s' $cfg) $([ $X = $T ] && echo new || echo main) $(step $X --timing-only $cfg)"
    done
  done
  for X in $B $T; do
    say "round $r splits 1 bf16-split $([ $X = $T ] && echo new || echo main) $(VOX_PDECODE_SPLITS=1 step $X --timing-only bf16-split)"
  done
done
say "end t $(el) s"
