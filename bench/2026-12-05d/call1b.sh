#!/bin/bash
# call 1b of 2026-12-05d (call 1 was cut off when the machine was taken back, and left ~990 s of
# device time): what decides the batched persistent decode, in ~8 min. Its checks against the CPU
# reference (every shape), the tiny models end to end through it (VOX_PDECODE_ROWS=8), the
# full-size step (base one row, new 1/4/8 rows, bf16 and FP8), racecheck at 8 rows full width.
# Each result is written to $OUT as it comes.
source .devscripts/common.sh
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
T=build/tests/test_kernels_pdecode
B=build/tests/test_kernels_pdecode_base
S=$OUT/summary.txt
say() { echo "$*" | tee -a $S; }
timeout 200 $T --no-timing > $OUT/checks.txt 2>&1; say "checks rc $? $(tail -1 $OUT/checks.txt) (t $(el) s)"
grep -E "FAIL" $OUT/checks.txt | head -8 | tee -a $S
for m in tiny_model tiny_model_fp8; do
  VOX_PDECODE_ROWS=8 timeout 100 build/tests/test_cuda_transcribe build/$m > $OUT/e2e-$m-8.txt 2>&1
  say "$m rows 8: rc $? $(tail -1 $OUT/e2e-$m-8.txt) (t $(el) s)"
  grep -E "FAIL" $OUT/e2e-$m-8.txt | head -3 | tee -a $S
done
step() { timeout 40 "$@" 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'; }
for dt in fp8 bf16; do
  say "$dt base 1 row  $(step $B --timing-only $dt-split)"
  for rows in 1 4 8; do
    cfg=$dt-split; [ $rows -gt 1 ] && cfg=$dt-split-r$rows
    say "$dt new  $rows rows $(step $T --timing-only $cfg)"
  done
done
say "t $(el) s"
if [ $(el) -lt 300 ]; then
  VOX_PDECODE_WATCHDOG_S=900 timeout $(( 500 - $(el) )) compute-sanitizer --tool racecheck --racecheck-report analysis \
    $T --no-timing "rows 8 full width fp8" split > $OUT/racecheck-rows8.log 2>&1
  say "racecheck rows 8 full width fp8 rc $? $(grep -E 'SUMMARY|checks,' $OUT/racecheck-rows8.log | tr '\n' ' ') (t $(el) s)"
fi
say "end t $(el) s"
