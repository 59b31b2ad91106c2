#!/usr/bin/env bash
# voxtral_export with broken inputs the exporter must refuse before writing: each case copies
# the tiny transformers checkpoint, breaks one thing, and expects exit 1, a message naming the
# file and the problem, and no output directory. Cases: a tekken.json the runner could not
# load although its special tokens are fine (no vocab, no config, a vocab entry without
# token_bytes, more ids than the decoder's vocab_size), a NaN in a weight; then bad arguments (an empty --out is
# exit 2 with nothing created). A last check exports the unbroken copy and runs it.
# Usage: test_export_bad_input.sh BUILD_DIR FIXTURES_DIR
set -u
build=$1
fixtures=$2
source "$(dirname "$0")/runner_common.sh"
command -v python3 >/dev/null || { echo "SKIPPED: no python3"; exit 77; }
tmp=$(mktemp -d /tmp/vox_cli_export_bad_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
R=(timeout 120 "$build/voxtral_export")

# broken NAME FILE PROBLEM PYTHON: copies the checkpoint to $tmp/NAME, runs PYTHON there (d is
# the directory), exports it to $tmp/NAME.model and expects exit 1 naming FILE and PROBLEM, and
# no $tmp/NAME.model.
broken() {
    local name=$1 file=$2 problem=$3 code=$4
    cp -r "$fixtures/tiny/checkpoint_hf" "$tmp/$name"
    python3 -c "import json, os; d='$tmp/$name'; $code" || { fail "$name: set-up failed"; return; }
    run 1 "$name" --from "$tmp/$name" --out "$tmp/$name.model"
    has "$tmp/$name.err" "$tmp/$name/$file"
    has "$tmp/$name.err" "$problem"
    checks=$((checks + 1))
    [ ! -e "$tmp/$name.model" ] || fail "$name: $tmp/$name.model was created"
}

# edit_tekken PYTHON: a statement on t, the loaded tekken.json, which is then written back
edit_tekken() { echo "p = d + '/tekken.json'; t = json.load(open(p)); $1; json.dump(t, open(p, 'w'))"; }

broken tekken_no_vocab tekken.json "vocab is missing" "$(edit_tekken "del t['vocab']")"
broken tekken_no_config tekken.json "config is missing" "$(edit_tekken "del t['config']")"
broken tekken_bad_entry tekken.json "vocab[5].token_bytes is missing" \
    "$(edit_tekken "t['vocab'][5] = {'rank': 5}")"
broken tekken_long_vocab tekken.json "the tokenizer has 1401 ids but $tmp/tekken_long_vocab/config.json's vocab_size is only 1400" \
    "$(edit_tekken "t['config']['default_vocab_size'] += 1")"

# a NaN in a weight: every transcript would be garbage (and an FP8 export would write scales the
# runner refuses); refused, naming the tensor
broken weight_nan model.safetensors "tensor 'language_model.model.norm.weight' has a NaN or infinity at element 0" "
import struct
p = d + '/model.safetensors'; b = bytearray(open(p, 'rb').read())
n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
k = 'language_model.model.norm.weight'; o = 8 + n + h[k]['data_offsets'][0]
nan = {'F32': b'\\x00\\x00\\xc0\\x7f', 'BF16': b'\\xc0\\x7f', 'F16': b'\\x00\\x7e'}[h[k]['dtype']]
b[o:o + len(nan)] = nan; open(p, 'wb').write(b)"

# an empty --out is a usage error, not a directory named by whatever follows in memory
run 2 empty_out --from "$fixtures/tiny/checkpoint_hf" --out ""
has "$tmp/empty_out.err" "--out must not be empty"

# the unbroken checkpoint exports and the runner loads the result
run 0 good --from "$fixtures/tiny/checkpoint_hf" --out "$tmp/good" -q
R=("$exe" -m "$tmp/good" -d cpu -n 4)
run 0 good_runs "$fixtures/tiny/audio/short.wav"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
