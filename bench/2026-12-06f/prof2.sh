source .devscripts/device-call.sh
W=models/full/clip30.wav
[ -f $W ] || python3 - <<'PY'
import numpy as np, wave
sr = 16000; t = np.arange(30 * sr) / sr
x = (0.3 * np.sin(2 * np.pi * 220 * t) * 32767 + np.random.default_rng(1).normal(0, 300, t.size)).astype(np.int16)
with wave.open("models/full/clip30.wav", "wb") as f:
    f.setnchannels(1); f.setsampwidth(2); f.setframerate(sr); f.writeframes(x.tobytes())
PY
files=$(for i in $(seq 24); do echo -n "$W "; done)
VOX_STEP_TRACE=/tmp/st.txt build/voxtral_runner -m models/full -d cuda --batch-size 24 -n 60 --ignore-eos $files > /dev/null 2>&1
grep ' step ' /tmp/st.txt | tail -5 | tee -a $OUT/summary.txt
cp /tmp/st.txt $OUT/steptrace.txt
timeout 300 ncu --metrics gpu__time_duration.sum --launch-skip 9000 --launch-count 700 --csv build/voxtral_runner -m models/full -d cuda --batch-size 24 -n 60 --ignore-eos $files > /tmp/ncu.csv 2>/tmp/ncu.err
say "ncu rc $? (t $(el) s)"; tail -3 /tmp/ncu.err | tee -a $OUT/summary.txt
xz -c /tmp/ncu.csv > $OUT/ncu.csv.xz
python3 - <<'PY' | tee -a $OUT/summary.txt
import csv, collections, io
txt = open('/tmp/ncu.csv').read()
i = txt.find('"ID"')
rows = list(csv.DictReader(io.StringIO(txt[i:])))
ks = [(int(r['ID']), r['Kernel Name'], float(r['Metric Value']), r['Metric Unit']) for r in rows if r['Metric Name'] == 'gpu__time_duration.sum']
unit = ks[0][3] if ks else ''
print(len(ks), 'kernels, unit', unit)
idx = [j for j, k in enumerate(ks) if 'embed' in k[1]]
print('embed at', idx[:6])
steps = [ks[a:b] for a, b in zip(idx, idx[1:])]
for s in steps[:3]: print('step kernels', len(s), 'busy', sum(k[2] for k in s))
cat = collections.defaultdict(lambda: [0.0, 0])
for s in steps:
    for k in s:
        c = cat[k[1][:70]]; c[0] += k[2]; c[1] += 1
n = max(1, len(steps))
for k, (d, c) in sorted(cat.items(), key=lambda x: -x[1][0]):
    print(f"{k:70s} {c/n:5.1f} {d/n:10.1f}")
PY
say "end t $(el) s"
