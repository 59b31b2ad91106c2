#!/bin/bash
# call 1 (NOTES-2026-12-05c section 3): the persistent decode kernel at 2 to 8 rows, first run.
# Its checks (the kernel against the CPU reference at every shape, the rows shapes included),
# the tiny models end to end with batches through it (VOX_PDECODE_ROWS=8) and without, the
# full-size step at 1, 2, 4 and 8 rows against 5cec6a6's one-row kernel (base: the one-row path
# must not have moved), then batches of 4 and 8 copies of a 30 s clip end to end, rows 1 against
# 4 and 8.
# Built on the CPU machine first:
#   bash bench/2026-12-05c/build_base.sh          (build/tests/test_kernels_pdecode_base, build/base/)
#   EXTRA_BINS="build/tests/test_kernels_pdecode_base build/base/voxtral_runner" bash .devscripts/pack.sh
# (pack.sh and common.sh: bench/2026-12-04c/, copied to .devscripts/.) ~11 min.
source .devscripts/common.sh
t0=$(date +%s)
T=build/tests/test_kernels_pdecode
B=build/tests/test_kernels_pdecode_base
echo "== checks"; timeout 300 $T --no-timing > $OUT/checks.txt 2>&1; echo "rc $?"; tail -2 $OUT/checks.txt
grep -E "FAIL" $OUT/checks.txt | head -8
echo "== tiny end to end"
for m in tiny_model tiny_model_fp8; do
  for rows in 1 8; do
    printf "%s rows %s: " $m $rows
    VOX_PDECODE_ROWS=$rows timeout 150 build/tests/test_cuda_transcribe build/$m > $OUT/e2e-$m-$rows.txt 2>&1
    echo "rc $? $(tail -1 $OUT/e2e-$m-$rows.txt)"
    grep -E "FAIL" $OUT/e2e-$m-$rows.txt | head -3
  done
done
echo "t $(( $(date +%s) - t0 )) s"
for r in 1 2; do
  for dt in bf16 fp8; do
    printf "round %s %-4s base  1 row  " $r $dt; timeout 60 $B --timing-only $dt-split 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    for rows in 1 2 4 8; do
      cfg=$dt-split; [ $rows -gt 1 ] && cfg=$dt-split-r$rows
      printf "round %s %-4s new   %s rows " $r $dt $rows; timeout 60 $T --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    done
  done
done
echo "t $(( $(date +%s) - t0 )) s"
# the attention's splits (VOX_PDECODE_SPLITS; NOTES section 3): one row, split consumer
for sp in 1 4 8 16; do
  for dt in bf16 fp8; do
    printf "splits %-2s %-4s " $sp $dt; VOX_PDECODE_SPLITS=$sp timeout 60 $T --timing-only $dt-split 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
  done
done
echo "t $(( $(date +%s) - t0 )) s"
python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
echo "model after $(( $(date +%s) - t0 )) s"
python3 - <<'PY'
import wave
r = wave.open('tests/fixtures/tiny/audio/long.wav'); d = r.readframes(r.getnframes())
d = (d * 2)[:480000 * 2]
w = wave.open('/tmp/clip30.wav', 'wb'); w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(d); w.close()
PY
for n in 4 8; do
  python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --wav /tmp/clip30.wav \
    --batch-size $n --repeats $n --rounds 3 rows1=VOX_PDECODE_ROWS=1 rows$n=VOX_PDECODE_ROWS=$n 2>&1 | tail -14
done
echo "t $(( $(date +%s) - t0 )) s"
