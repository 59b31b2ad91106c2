#!/bin/bash
# call 2 of 2026-12-06d (any card; call1.sh runs it where no H200 came): 2026-12-06c's call9.sh
# and the first of its call10.sh in one call, since machines were scarce this session (four
# starts failed before one came):
#  - the SwiGLU units in the batched instances (glub, pdecode-glu-units-batched.patch): every kernel
#    check, the tiny models at 2, 4 and 8 rows, then the step against main and nosw
#    (pdecode-no-switches-experiment.patch) at 1, 4 and 8 rows, two rounds;
#  - compute-sanitizer racecheck on the adding's lag (f2c278d) at one row FP8, full width, and at
#    4 rows FP8 with glub's batched code, as long as the 580 s leave room.
# Predictions (call9.sh's): checks pass; one row even (+-0.3%); batched -0 to -2%, FP8 8 rows
# most; nosw >= 1% faster at one row in both formats would take the switches out. Sanitizers: 0
# hazards (the slots' barriers order the lagged reads).
source .devscripts/device-call.sh
export VOX_PDECODE_WATCHDOG_S=900
V=build/tests/test_kernels_pdecode_glub
timeout 300 $V --no-timing > $OUT/checks-glub.txt 2>&1
say "glub kernel checks rc $? $(tail -1 $OUT/checks-glub.txt) (t $(el) s)"
grep -E "FAIL|outside" $OUT/checks-glub.txt | head -8 | tee -a $OUT/summary.txt
for m in tiny_model tiny_model_fp8; do
  for rows in 2 4 8; do
    VOX_PDECODE_ROWS=$rows timeout 100 build/tests/test_cuda_transcribe_glub build/$m > $OUT/e2e-glub-$m-$rows.txt 2>&1
    say "e2e glub $m rows $rows rc $? $(grep -E 'checks' $OUT/e2e-glub-$m-$rows.txt | tail -1)"
  done
done
for r in 1 2; do
  for cfg in fp8-split bf16-split fp8-split-r4 bf16-split-r4 fp8-split-r8 bf16-split-r8; do
    step_bins "round $r" $cfg main=build/tests/test_kernels_pdecode glub=$V nosw=build/tests/test_kernels_pdecode_nosw
  done
done
say "timing done t $(el) s"
sanitize racecheck 200 "full width fp8" split
SAN_BIN=$V sanitize racecheck 180 "rows 4 full width fp8" split
say "end t $(el) s"
