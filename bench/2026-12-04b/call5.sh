#!/bin/bash
# call 5: FP8 decode steps of 49..128 rows: plain FP8 products (scales by the consumer) vs outer-vector GEMMs
source .devscripts/common.sh
t0=$(date +%s)
python3 scripts/make_random_model.py --size full --dtype fp8 --out models/full_fp8 --build build 2>&1 | tail -1
echo "model after $(( $(date +%s) - t0 )) s"
build/tests/time_gemm_algos --fp8 --first 48 64 96 128 2>&1 | grep -v "^Device" 
build/tests/time_gemm_algos --fp8-fp32 --first 48 64 96 128 2>&1 | grep -v "^Device"
python3 - <<'PY'
import wave
r = wave.open('tests/fixtures/tiny/audio/long.wav'); d = r.readframes(r.getnframes())
d = (d * 2)[:480000 * 2]
w = wave.open('/tmp/clip30.wav', 'wb'); w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(d); w.close()
PY
python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full_fp8 --wav /tmp/clip30.wav --batch-size 64 --repeats 64 --rounds 2 outer=- plain=VOX_FP8_PLAIN_ROWS=128 2>&1 | tail -9
for arm in outer plain; do
  v=""; [ $arm = plain ] && v="VOX_FP8_PLAIN_ROWS=128"
  env $v VOX_STEP_TRACE=$OUT/trace-$arm.txt build/voxtral_runner -m models/full_fp8 --batch-size 64 --ignore-eos -n 40 $(for i in $(seq 64); do echo /tmp/clip30.wav; done) > /dev/null 2>&1
  echo "$arm trace: $(wc -l < $OUT/trace-$arm.txt) lines"; tail -3 $OUT/trace-$arm.txt
done
echo "total $(( $(date +%s) - t0 )) s"
