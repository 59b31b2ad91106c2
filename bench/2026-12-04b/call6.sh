#!/bin/bash
# call 6: FP8 plain-product row limit at 128 and 256 sequences
source .devscripts/common.sh
t0=$(date +%s)
python3 scripts/make_random_model.py --size full --dtype fp8 --out models/full_fp8 --build build 2>&1 | tail -1
echo "model after $(( $(date +%s) - t0 )) s"
build/tests/time_gemm_algos --fp8 --first 160 192 256 2>&1 | grep -E "^(qkv|o |gate|down)"
build/tests/time_gemm_algos --fp8-fp32 --first 160 192 256 2>&1 | grep -E "^(qkv|o |gate|down)"
python3 - <<'PY'
import wave
r = wave.open('tests/fixtures/tiny/audio/long.wav'); d = r.readframes(r.getnframes())
d = (d * 2)[:480000 * 2]
w = wave.open('/tmp/clip30.wav', 'wb'); w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(d); w.close()
PY
for B in 128 256; do
  echo "== batch $B, $B copies"
  python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full_fp8 --wav /tmp/clip30.wav --batch-size $B --repeats $B --rounds 2 l48=VOX_FP8_PLAIN_ROWS=48 l128=VOX_FP8_PLAIN_ROWS=128 l256=VOX_FP8_PLAIN_ROWS=256 2>&1 | tail -5
  echo "t $(( $(date +%s) - t0 )) s"
done
