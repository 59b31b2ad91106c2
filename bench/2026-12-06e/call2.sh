#!/bin/bash
# call 2 of 2026-12-06e (any card): where a batch-1 token's wall time goes, with and without the
# step ahead. RAN ONCE (results/2-call2); the step ahead was reverted afterwards (0701dee): on main
# both modes run the same code. Call 1's decode_ab saw the decode stage unchanged (2.6717 against 2.6714 ms/token on
# an H100: the stage is the device time between a step's marks, which never held the host's turn)
# but the run's wall 39 ms shorter over 4 files of 100 tokens. Here, per step, from VOX_STEP_TRACE
# (each line: wall ms since the line before, `gap`, and the step's device ms): one 30 s file, 300
# tokens, 3 runs a mode alternating; and the process wall of -n 50 against -n 300 (the difference
# over 250 tokens: wall per token). Prediction: with the step ahead the wall per step is within
# ~10 us of the device's (the choose and stats kernels and the copies are in the device time or
# between marks); without it ~40-100 us more.
source .devscripts/device-call.sh
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
W=models/full/clip30.wav
[ -f $W ] || python3 - <<'PY'
import numpy as np, wave
sr = 16000; t = np.arange(30 * sr) / sr
x = (0.3 * np.sin(2 * np.pi * 220 * t) * 32767).astype(np.int16)
with wave.open("models/full/clip30.wav", "wb") as f:
    f.setnchannels(1); f.setsampwidth(2); f.setframerate(sr); f.writeframes(x.tobytes())
PY
for r in 1 2 3; do
  for mode in ahead noahead; do
    e=""; [ $mode = noahead ] && e="VOX_NO_STEP_AHEAD=1"
    rm -f /tmp/tr_$mode.txt
    env $e VOX_STEP_TRACE=/tmp/tr_$mode.txt build/voxtral_runner -m models/full -d cuda -n 300 --ignore-eos $W > /dev/null 2>&1
    # the last engine's decode-only steps (after the first 5): median gap and device ms, us
    line=$(python3 - /tmp/tr_$mode.txt <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if " step " in l]
# the last engine (its clock restarts): lines after the last drop of `at`
last = 0
for i in range(1, len(rows)):
    if float(rows[i][2]) < float(rows[i - 1][2]): last = i
rows = [r for r in rows[last:] if r[r.index("rows") + 1] == "1" and r[r.index("decode") + 1] == "1"][5:]
g = [float(r[4]) * 1e3 for r in rows]; d = [float(r[r.index("gpu_ms") + 1]) * 1e3 for r in rows]
print(f"{len(rows)} steps, wall a step {statistics.median(g):.1f} us, device {statistics.median(d):.1f} us, host's turn {statistics.median([a - b for a, b in zip(g, d)]):.1f} us")
PY
)
    say "round $r $mode: $line"
  done
done
for r in 1 2; do
  for mode in ahead noahead; do
    e=""; [ $mode = noahead ] && e="VOX_NO_STEP_AHEAD=1"
    t=()
    for n in 50 300; do
      s=$(date +%s%N); env $e build/voxtral_runner -m models/full -d cuda -n $n --ignore-eos $W > /dev/null 2>&1; t+=($(( ($(date +%s%N) - s) / 1000000 )))
    done
    say "round $r $mode: process wall -n 50 ${t[0]} ms, -n 300 ${t[1]} ms: $(( (t[1] - t[0]) * 4 )) us a token"
  done
done
say "end t $(el) s"
