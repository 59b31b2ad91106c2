#!/bin/bash
# call 4 of 2026-12-05e: the new default (decode-only steps of up to 4 rows through the persistent
# kernel) on a mixed batch, where only the tail's steps have that few rows: 48 files of 3 to 30 s
# cut from long.wav (lengths evenly spaced, shuffled), --ignore-eos at the default token budget,
# VOX_PDECODE_ROWS=4 (default) against 1, alternating rounds; the run's stage sums from
# --latency-json. Runner: main + the default (packed as call 1). ~4 min with the model.
source .devscripts/device-call.sh
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
mkdir -p /tmp/mixed
python3 - <<'PY'
import random, wave
with wave.open("tests/fixtures/tiny/audio/long.wav", "rb") as src:
    params, n_all = src.getparams(), src.getnframes()
    frames = src.readframes(n_all)
n = 48
secs = [3 + 27 * i / (n - 1) for i in range(n)]
random.Random(20261205).shuffle(secs)
for k, s in enumerate(secs):
    m = int(s * 16000)
    off = random.Random(k).randrange(0, n_all - m) if n_all > m else 0
    with wave.open(f"/tmp/mixed/mixed_{k:03d}.wav", "wb") as w:
        w.setparams(params)
        w.writeframes(frames[off * 2:(off + m) * 2])
PY
for r in 1 2; do
  for rows in 4 1; do
    VOX_PDECODE_ROWS=$rows build/voxtral_runner -m models/full -d cuda --ignore-eos -o json \
      --latency-json /tmp/lat.json /tmp/mixed/*.wav > /tmp/out.json 2>/tmp/err.txt
    rc=$?
    say "round $r rows $rows rc $rc $(python3 -c '
import json; r = json.load(open("/tmp/lat.json")); m = r["latency_ms"]
print("decode %.1f prefill %.1f encoder %.1f stages %.1f wall %.1f ms" % (m.get("text_decoder_decode", 0),
      m.get("text_decoder_prefill", 0), m.get("audio_encoder", 0), m.get("total", 0), r.get("wall_ms", 0)))')"
    [ $rc = 0 ] || tail -3 /tmp/err.txt | tee -a $OUT/summary.txt
  done
done
say "end t $(el) s"
