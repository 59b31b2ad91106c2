#!/usr/bin/env bash
# voxtral_runner with a broken model directory (CPU backend): each case copies the tiny model,
# breaks one thing, and expects exit 2, a message naming the file and the problem, and nothing
# on stdout (each run under a 60 s timeout: a hang fails). Cases: voxtral.json or tekken.json
# with data after the JSON value, a tokenizer whose vocabulary is longer than the decoder's
# vocab_size, a layer count in voxtral.json far beyond the blob's layers (an error naming the
# tensor, not "out of memory") or below them (part of the network would run); a FIFO in place
# of voxtral.json, tekken.json or a blob (refused, never waited on) and tekken.json linked to
# /dev/zero (never read without end); shapes the fixed front end cannot feed (80 mel bins: was an
# abort), a context too short for one chunk's prompt (was a failure of every file), an empty
# pre-tokenizer pattern (dropped all text), a special-token id in voxtral.json that tekken.json
# gives another token (every prompt built wrong). Then a text decoder holding NaN or infinite values:
# each file fails alone (exit 1); and a context that cuts a transcript short (a warning).
# Usage: test_runner_bad_model.sh BUILD_DIR FIXTURES_DIR
set -u
build=$1
fixtures=$2
audio=$fixtures/tiny/audio
source "$(dirname "$0")/runner_common.sh"
tmp=$(mktemp -d /tmp/vox_cli_bad_model_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export_tiny_model "$tmp/model"
command -v python3 >/dev/null || { echo "SKIPPED: no python3"; exit 77; }

# model_copy NAME PYTHON: the model copied to $tmp/NAME, then PYTHON run there (d is the
# directory); fails (status 1) when PYTHON does.
model_copy() {
    rm -rf "$tmp/$1"
    cp -r "$tmp/model" "$tmp/$1"
    python3 -c "import json, os; d = '$tmp/$1'; $2" || { fail "$1: set-up failed"; return 1; }
}

# empty_stdout NAME: the run NAME printed nothing on standard output.
empty_stdout() {
    checks=$((checks + 1))
    [ ! -s "$tmp/$1.out" ] || fail "$1: stdout is not empty: $(head -c 500 "$tmp/$1.out")"
}

# broken NAME FILE PROBLEM PYTHON: a model_copy NAME PYTHON, then expects exit 2 naming FILE and
# PROBLEM, and an empty stdout.
broken() {
    local name=$1 file=$2 problem=$3
    model_copy "$name" "$4" || return
    R=(timeout 60 "$exe" -m "$tmp/$name" -d cpu -n 4)
    run 2 "$name" "$audio/short.wav"
    has "$tmp/$name.err" "$tmp/$name/$file"
    has "$tmp/$name.err" "$problem"
    empty_stdout "$name"
}

# edit_manifest / edit_tekken PYTHON: a statement on m (voxtral.json) or t (tekken.json), loaded
# and then written back
edit_manifest() { echo "p = d + '/voxtral.json'; m = json.load(open(p)); $1; json.dump(m, open(p, 'w'))"; }
edit_tekken() { echo "p = d + '/tekken.json'; t = json.load(open(p)); $1; json.dump(t, open(p, 'w'))"; }

# the unbroken copy loads
R=("$exe" -m "$tmp/model" -d cpu -n 4)
run 0 good "$audio/short.wav"

broken manifest_trailing voxtral.json "data after the JSON value" \
    "open(d + '/voxtral.json', 'a').write('garbage')"
broken manifest_two_objects voxtral.json "data after the JSON value" \
    "open(d + '/voxtral.json', 'a').write('{}')"
broken tekken_trailing tekken.json "data after the value" \
    "open(d + '/tekken.json', 'a').write('garbage')"
broken tekken_long_vocab tekken.json "the tokenizer has 1401 ids but the decoder's vocab_size" \
    "$(edit_tekken "t['config']['default_vocab_size'] += 1")"
broken decoder_layers_huge text_decoder.safetensors "text_decoder.layers in voxtral.json is 2147483647" \
    "$(edit_manifest "m['text_decoder']['layers'] = 2147483647")"
broken encoder_layers_huge audio_encoder.safetensors "audio_encoder.layers in voxtral.json is 2000000000" \
    "$(edit_manifest "m['audio_encoder']['layers'] = 2000000000")"

broken decoder_layers_fewer text_decoder.safetensors "has tensors of layer 1" \
    "$(edit_manifest "m['text_decoder']['layers'] = 1")"
for f in voxtral.json tekken.json text_decoder.safetensors; do
    broken "fifo_${f%%.*}" "$f" "not a regular file" "os.remove(d + '/$f'); os.mkfifo(d + '/$f')"
done
broken tekken_dev_zero tekken.json "not a regular file" \
    "os.remove(d + '/tekken.json'); os.symlink('/dev/zero', d + '/tekken.json')"
broken mel_bins_80 voxtral.json "audio_encoder.num_mel_bins is 80" \
    "$(edit_manifest "m['audio_encoder']['num_mel_bins'] = 80")"
broken context_short voxtral.json "max_position_embeddings is 40" \
    "$(edit_manifest "m['text_decoder']['max_position_embeddings'] = 40")"
broken tekken_empty_pattern tekken.json "config.pattern is empty" \
    "$(edit_tekken "t['config']['pattern'] = ''")"
broken special_id_moved voxtral.json "tokenizer.transcribe is 35, but" \
    "$(edit_manifest "m['tokenizer']['transcribe'] = 35")"
broken special_id_renamed voxtral.json "tokenizer.eos is 2, but" \
    "$(edit_tekken "t['special_tokens'][2]['token_str'] = '[EOS_OLD]'; t['special_tokens'][5]['token_str'] = '</s>'")"

# A text decoder holding NaN or infinite values (the exporter refuses such a checkpoint; a blob
# damaged after the export, or a model that overflows): every file fails on its own with a
# message naming it, exit 1, nothing on stdout (was: NaN logits read as token id 0, exit 0).
# damage TENSOR VALUE COUNT: the first COUNT elements (0: all) of a text decoder tensor
damage() {
    echo "import json, struct; p = d + '/text_decoder.safetensors'; f = open(p, 'r+b')
n = struct.unpack('<Q', f.read(8))[0]; t = json.loads(f.read(n))['$1']
a, b = t['data_offsets']; v = struct.pack('<f', float('$2'))
v = {'F32': v, 'BF16': v[2:]}[t['dtype']]; c = $3 or (b - a) // len(v)
f.seek(8 + n + a); f.write(v * c)"
}
for case in "nan_final_norm norm.weight nan 0" "inf_lm_head lm_head.weight inf 4"; do
    set -- $case
    model_copy "$1" "$(damage "$2" "$3" "$4")" || continue
    R=(timeout 60 "$exe" -m "$tmp/$1" -d cpu -n 4)
    run 1 "$1" "$audio/short.wav" "$audio/speech.flac"
    for f in short.wav speech.flac; do
        has "$tmp/$1.err" "$audio/$f: the model's logits are not finite (NaN or infinite) at output token 1"
    done
    has "$tmp/$1.err" "0 of 2 files transcribed, 2 failed"
    empty_stdout "$1"
done

# A context that cuts a file's token budget short (voxtral.json's max_position_embeddings 390:
# room for 10 tokens after a 30 s chunk's prompt): the transcript that runs into it comes with a
# warning naming the cut (was: silently cut), exit 0; one that ends within it, none.
model_copy context_390 "$(edit_manifest "m['text_decoder']['max_position_embeddings'] = 390")"
R=(timeout 60 "$exe" -m "$tmp/context_390" -d cpu --ignore-eos -o json)
run 0 context_cut -n 50 "$audio/short.wav"
has "$tmp/context_cut.err" "$audio/short.wav: warning: the transcript stops at the end of the model's context (390 positions: 380 of the prompt, 10 generated, 50 asked): the token budget asked is more than the context holds"
has "$tmp/context_cut.out" '"warnings":["the transcript stops at the end of the model'"'"'s context'
# long.wav (47 s) is two chunks, ~758 prompt positions: in a context of 770 its prompt is what
# leaves no room, and the warning names --segment (each piece then has a one-chunk prompt)
model_copy context_770 "$(edit_manifest "m['text_decoder']['max_position_embeddings'] = 770")"
R=(timeout 60 "$exe" -m "$tmp/context_770" -d cpu --ignore-eos -o json)
run 0 context_long -n 50 "$audio/long.wav"
has "$tmp/context_long.err" "$audio/long.wav: warning: the transcript stops at the end of the model's context (770 positions: "
has "$tmp/context_long.err" "50 asked): audio this long needs --segment"
R=(timeout 60 "$exe" -m "$tmp/context_390" -d cpu --ignore-eos -o json)
run 0 context_fits -n 8 "$audio/short.wav"
checks=$((checks + 1))
! grep -q "warning" "$tmp/context_fits.err" || fail "context_fits: $(cat "$tmp/context_fits.err")"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
