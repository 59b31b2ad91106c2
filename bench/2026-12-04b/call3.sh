#!/bin/bash
# call 3: end to end, persistent row vs split vs graph, bf16 and FP8 full-size random models
source .devscripts/common.sh
t0=$(date +%s)
python3 scripts/make_random_model.py --size full --out models/full --build build --keep-checkpoint 2>&1 | tail -2
build/voxtral_export --from models/full-checkpoint --out models/full_fp8 --dtype fp8 2>&1 | tail -1
echo "models ready after $(( $(date +%s) - t0 )) s"
python3 - <<'PY'
import wave
r = wave.open('tests/fixtures/tiny/audio/long.wav'); d = r.readframes(r.getnframes())
d = (d * 2)[:480000 * 2]
w = wave.open('/tmp/clip30.wav', 'wb'); w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(d); w.close()
PY
for m in full full_fp8; do
  echo "== $m"
  python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/$m --wav /tmp/clip30.wav --repeats 5 --rounds 3 row=- split=VOX_PDECODE_CONSUMER=split graph=VOX_DECODE=graph 2>&1 | tail -14
done
echo "total $(( $(date +%s) - t0 )) s"
