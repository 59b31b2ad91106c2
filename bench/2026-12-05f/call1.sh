#!/bin/bash
# call 1 of 2026-12-05f: main with the staged keys (bench/2026-12-05e/pdecode-keys-staged.patch,
# now in kernels/pdecode.cu) end to end on the tiny models at 4 (default), 8 and 1 rows; how much
# the op boundaries' waits and release fences cost now (VOX_PDECODE_EXPERIMENT=nowait / nofence,
# wrong numbers, the same binary; NOTES-2026-12-03e measured 2424 -> 2204 / 2107 us on the kernel
# of then); and the mixed batch of bench/2026-12-05e/call4.sh (48 files of 3-30 s, rows 4 vs 1).
# Predictions: tiny checks 463 / 196, 0 failed at each rows; nowait and nofence -7 to -13% at one
# row (the bound on a cheaper hand-off, which the LL patch of NOTES-2026-12-03e section 5 would
# chase); the mixed batch's decode -1 to -3% at rows 4 (only the tail's steps have <= 4 rows).
# ~6 min.
source .devscripts/device-call.sh
for m in tiny_model tiny_model_fp8; do
  for rows in 4 8 1; do
    VOX_PDECODE_ROWS=$rows timeout 100 build/tests/test_cuda_transcribe build/$m > $OUT/e2e-$m-$rows.txt 2>&1
    say "e2e $m rows $rows rc $? $(grep -E 'checks' $OUT/e2e-$m-$rows.txt | tail -1) (t $(el) s)"
  done
done
T=build/tests/test_kernels_pdecode
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4; do
    for x in none nowait nofence; do
      say "round $r $(printf '%-14s' $cfg) $(printf '%-8s' $x) $(VOX_PDECODE_EXPERIMENT=$x step $T --timing-only $cfg)"
    done
  done
done
bash .devscripts/call4.sh
