#!/bin/bash
# call 3 of 2026-12-05h (not run: no device started after call 1): DOWN's finer dependencies,
# pdecode-fine-down.patch (gate|up counted by column chunks of DOWN's input, DOWN staging and
# taking its pages chunk by chunk; bf16, split consumer; VOX_PDECODE_FINE=0 is main's op-wide
# wait). Checks of the patched kernel, then kernel steps: main (head), the patch with FINE=0 and 1.
# Build: VARIANT_RUNNER=1 bash bench/2026-12-04e/build_variants.sh fine=bench/2026-12-05h/pdecode-fine-down.patch
# Pack: mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh
#   bench/2026-12-05h/call3.sh .devscripts/ && EXTRA_BINS="build/tests/test_kernels_pdecode_fine
#   build/tests/test_cuda_transcribe_fine" bash .devscripts/pack.sh
# ~4 min (+1 on an H200); LEAN=1 (~2.5 min, for a short device budget): the checks of the shapes
# whose down runs over several chunks only, the tiny bf16 model at 4 rows, one round.
# Prediction (call 1 of this session, H100: nowait-partial -5.6% bf16 at one row, -4% at 4 rows;
# nowait-attn -0.5%, so o and down hold ~5%): down about half of it, and the finer dependencies
# recover most of down's: -2 to -3% bf16 at one row, -1.5 to -2.5% at 4 and 8 rows; FP8 and
# FINE=0 as head (+-0.5%). Under 1% at one row: the chunked staging's waits and barriers cost what
# the dependencies give, and the patch is not worth its code.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode_fine
H=build/tests/test_kernels_pdecode
E=build/tests/test_cuda_transcribe_fine
if [ "${LEAN:-0}" = 1 ]; then
  for s in chunks "full width"; do
    timeout 150 $T --no-timing "$s" > "$OUT/checks-$s.txt" 2>&1
    say "checks '$s' rc $? $(tail -1 "$OUT/checks-$s.txt") (t $(el) s)"
    grep -E "FAIL|outside" "$OUT/checks-$s.txt" | head -5 | tee -a $OUT/summary.txt
  done
else
  timeout 300 $T --no-timing > $OUT/pdecode-checks.txt 2>&1
  say "test_kernels_pdecode (fine) rc $? $(tail -1 $OUT/pdecode-checks.txt) (t $(el) s)"
  grep -E "FAIL|outside" $OUT/pdecode-checks.txt | head -8 | tee -a $OUT/summary.txt
  VOX_PDECODE_FINE=0 timeout 120 $T --no-timing "full width" > $OUT/pdecode-checks-fine0.txt 2>&1
  say "checks FINE=0 full width rc $? $(tail -1 $OUT/pdecode-checks-fine0.txt)"
fi
for mr in tiny_model:4 tiny_model:1 tiny_model_fp8:1; do
  [ "${LEAN:-0}" = 1 ] && [ $mr != tiny_model:4 ] && continue
  VOX_PDECODE_ROWS=${mr#*:} timeout 100 $E build/${mr%:*} > $OUT/e2e-${mr/:/-}.txt 2>&1
  say "e2e ${mr%:*} rows ${mr#*:} rc $? $(grep -E 'checks' $OUT/e2e-${mr/:/-}.txt | tail -1) (t $(el) s)"
done
for r in 1 2; do
  [ "${LEAN:-0}" = 1 ] && [ $r = 2 ] && break
  for cfg in bf16-split bf16-split-r4 bf16-split-r8 fp8-split; do
    line="round $r $(printf '%-14s' $cfg) | head $(step $H --timing-only $cfg | cut -d' ' -f1)"
    for f in 0 1; do line="$line | fine=$f $(step env VOX_PDECODE_FINE=$f $T --timing-only $cfg | cut -d' ' -f1)"; done
    say "$line"
  done
done
# down's and o's shares of call 1's nowait-partial (the patch's experiments 7 and 8, at FINE=0:
# main's waits)
for cfg in bf16-split bf16-split-r4; do
  step_row "nowait $(printf '%-14s' $cfg)" VOX_PDECODE_EXPERIMENT env VOX_PDECODE_FINE=0 $T --timing-only $cfg -- none nowait-o nowait-down
  [ "${LEAN:-0}" = 1 ] && break
done
# on an H200 only: the in-flight cap (2026-12-05f/call9.sh, tuned on an H100 at 2 pages; the H200
# streams ~1.4x the bytes at about the same latency, so 3 may pay there), with the finer dependencies
only_on H200
for cfg in bf16-split fp8-split bf16-split-r4; do
  step_row "cap $(printf '%-14s' $cfg)" VOX_PDECODE_INFLIGHT $T --timing-only $cfg -- 0 2 3 4
done
