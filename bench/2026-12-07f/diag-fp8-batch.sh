source .devscripts/device-call.sh
aud=$PWD/tests/fixtures/tiny/audio
mkdir -p /tmp/in; i=0
for f in short.wav long.wav speech.flac short.wav speech.ogg long.wav; do i=$((i + 1)); ln -sf "$aud/$f" /tmp/in/f$i.${f##*.}; done
ins=$(ls /tmp/in/* | sort)
m=tiny_model_fp8
for cfg in "b6" "b3" "b1" "b6 seqs:4" "b6 rows0" "b3 rows0"; do
  set -- $cfg; bs=${1#b}; env=""
  [ "${2:-}" = "seqs:4" ] && env="VOX_FAULT=seqs:4"
  [ "${2:-}" = "rows0" ] && env="VOX_PDECODE_ROWS=1"
  env $env build/voxtral_runner -m build/$m -d cuda --batch-size $bs --ignore-eos -n 24 -o json --logprobs 2 $ins > /tmp/d-$bs-${2:-x}.json 2>/dev/null
done
python3 - <<'PY'
import json, glob
def load(p): return [json.loads(l) for l in open(p)]
ref = load('/tmp/d-6-x.json')
for p in sorted(glob.glob('/tmp/d-*.json')):
    b = load(p); out = []
    for x, y in zip(ref, b):
        if x['tokens'] == y['tokens']: out.append('='); continue
        i = next(i for i, (u, v) in enumerate(zip(x['tokens'], y['tokens'])) if u != v)
        lp = x['logprobs'][i]['top_logprobs']
        out.append(f"@{i} margin {lp[0]['logprob'] - lp[1]['logprob']:.4f}")
    print(p, ' | '.join(out))
PY
