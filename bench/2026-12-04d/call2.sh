#!/bin/bash
# call 2: the split consumer's FP8 products on the E4M3 mma (m16n8k32): checks, then a timing A/B
# against main's binary (base), then the end-to-end A/B on the full FP8 model
source .devscripts/common.sh
t0=$(date +%s)
T=build/tests/test_kernels_pdecode
B=build/tests/test_kernels_pdecode_base
echo "== checks (new)"; $T --no-timing > $OUT/checks.txt 2>&1; echo "rc $?"; tail -2 $OUT/checks.txt; grep -c FAIL $OUT/checks.txt
echo "== tiny end to end"; for m in tiny_model tiny_model_fp8; do
  printf "%s: " $m; build/tests/test_cuda_transcribe build/$m 2>&1 | tail -1; done
echo "t $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do
  for cfg in fp8-split bf16-split; do
    for bin in $B $T; do
      printf "round %s %-10s %-5s " $r $cfg $([ $bin = $T ] && echo new || echo base); $bin --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'
    done
  done
done
echo "t $(( $(date +%s) - t0 )) s"
python3 scripts/make_random_model.py --size full --dtype fp8 --out models/full_fp8 --build build 2>&1 | tail -1
echo "model after $(( $(date +%s) - t0 )) s"
python3 - <<'PY'
import wave
r = wave.open('tests/fixtures/tiny/audio/long.wav'); d = r.readframes(r.getnframes())
d = (d * 2)[:480000 * 2]
w = wave.open('/tmp/clip30.wav', 'wb'); w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(d); w.close()
PY
python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full_fp8 --wav /tmp/clip30.wav \
  --repeats 5 --rounds 3 new=- base=RUNNER=build/base/voxtral_runner 2>&1 | tail -12
echo "t $(( $(date +%s) - t0 )) s"
