#!/bin/bash
# call 9 of 2026-12-06c, PREPARED FOR THE NEXT SESSION, NOT RUN (any card): the SwiGLU units in the
# batched instances in place of the pairs (pdecode-glu-units-batched.patch, against f2c278d): one
# mechanism for every split-consumer instance, no gate sums carried from unit to unit, each unit
# added by its own warp (nth % 8, not one warp for both units of a pair), FP8 row maxima published
# from the units' adders. The one-row instances' sm_90 code is main's (22-23 instructions reordered,
# none added: scripts/pdecode_sass.py f2c278d); the batched ones shrink 1% (8 rows
# 15432 -> 15312 instructions at head_dim 128, 4 rows 13368 -> 13208).
# Build and pack:
#   VARIANT_RUNNER=1 bash bench/2026-12-04e/build_variants.sh glub=bench/2026-12-06c/pdecode-glu-units-batched.patch \
#        nosw=bench/2026-12-06c/pdecode-no-switches-experiment.patch
#   mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh bench/2026-12-06c/call9.sh .devscripts/
#   EXTRA_BINS="build/tests/test_kernels_pdecode_glub build/tests/test_cuda_transcribe_glub build/tests/test_kernels_pdecode_nosw" bash .devscripts/pack.sh
# Also timed: `nosw` (pdecode-no-switches-experiment.patch), main with the timing experiments'
# and VOX_PDECODE_HANDOVER's run-time branches taken out (56 instructions fewer an instance; call
# 5 of 2026-12-06c found two more run-time switches costing 3% FP8 with both off). If nosw is >= 1%
# faster at one row in both formats, those switches should leave the production kernel.
# Checks first (every kernel check; the tiny models at 2, 3, 4, 5 and 8 rows with the variant's
# test_cuda_transcribe), then the step against main at 1, 2, 4 and 8 rows.
# Prediction: checks pass; one row even (+-0.3%); batched -0 to -2% (the pairs' adding bursts on one
# warp; the lag already hides most epilogues), FP8 8 rows most.
source .devscripts/device-call.sh
V=build/tests/test_kernels_pdecode_glub
timeout 300 $V --no-timing > $OUT/checks-glub.txt 2>&1
say "glub kernel checks rc $? $(tail -1 $OUT/checks-glub.txt) (t $(el) s)"
grep -E "FAIL|outside" $OUT/checks-glub.txt | head -8 | tee -a $OUT/summary.txt
for m in tiny_model tiny_model_fp8; do
  for rows in 2 3 4 5 8; do
    VOX_PDECODE_ROWS=$rows timeout 100 build/tests/test_cuda_transcribe_glub build/$m > $OUT/e2e-glub-$m-$rows.txt 2>&1
    say "e2e glub $m rows $rows rc $? $(grep -E 'checks' $OUT/e2e-glub-$m-$rows.txt | tail -1)"
  done
done
for r in 1 2; do
  for cfg in fp8-split bf16-split fp8-split-r2 bf16-split-r2 fp8-split-r4 bf16-split-r4 fp8-split-r8 bf16-split-r8; do
    say "round $r $(printf '%-14s' $cfg) | main $(step build/tests/test_kernels_pdecode --timing-only $cfg | cut -d' ' -f1) | glub $(step $V --timing-only $cfg | cut -d' ' -f1) | nosw $(step build/tests/test_kernels_pdecode_nosw --timing-only $cfg | cut -d' ' -f1)"
  done
done
say "end t $(el) s"
