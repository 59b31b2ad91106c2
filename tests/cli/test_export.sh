#!/usr/bin/env bash
# voxtral_export on the command line: the tiny transformers and Mistral fixtures export to the
# same model, --dtype bf16 halves the weights, and broken checkpoints or arguments fail with a
# non-zero exit, a message naming the file, and no voxtral.json.
# $1: build directory, $2: tests/fixtures.
set -u
BUILD=$1
FIXTURES=$2
EXPORT=$BUILD/voxtral_export
HF=$FIXTURES/tiny/checkpoint_hf
MISTRAL=$FIXTURES/tiny/checkpoint_mistral

if [ ! -x "$EXPORT" ]; then echo "SKIPPED: $EXPORT not built"; exit 77; fi
if [ ! -d "$HF" ] || [ ! -d "$MISTRAL" ]; then
    echo "SKIPPED: no tiny checkpoints in $FIXTURES/tiny (scripts/make_reference.py makes them)"
    exit 77
fi

TMP=$(mktemp -d /tmp/vox_cli_export_XXXXXX)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run EXPECTED_STATUS NAME args...: runs voxtral_export, keeps stdout+stderr in $TMP/NAME.log
run() {
    local want=$1 name=$2
    shift 2
    "$EXPORT" "$@" >"$TMP/$name.log" 2>&1
    local got=$?
    [ "$got" -eq "$want" ] || fail "$name: exit $got, want $want: $(cat "$TMP/$name.log")"
}

expect_log() { grep -qF -- "$2" "$TMP/$1.log" || fail "$1: no '$2' in: $(cat "$TMP/$1.log")"; }

# -- success: both layouts, same files but the manifest's source --------------------------------
run 0 hf --from "$HF" --out "$TMP/hf"
run 0 mistral --from "$MISTRAL" --out "$TMP/mistral"
expect_log hf "wrote $TMP/hf/audio_encoder.safetensors"
expect_log hf "exported transformers checkpoint"
expect_log mistral "exported mistral checkpoint"
for f in voxtral.json audio_encoder.safetensors token_embedding.safetensors \
         text_decoder.safetensors tekken.json; do
    [ -f "$TMP/hf/$f" ] || fail "hf: no $f"
    [ -f "$TMP/mistral/$f" ] || fail "mistral: no $f"
done
for f in token_embedding.safetensors text_decoder.safetensors tekken.json; do
    cmp -s "$TMP/hf/$f" "$TMP/mistral/$f" || fail "$f differs between the layouts"
done
cmp -s "$HF/tekken.json" "$TMP/hf/tekken.json" || fail "tekken.json not copied verbatim"
diff <(grep -v -e '"layout"' -e '"path"' "$TMP/hf/voxtral.json") \
     <(grep -v -e '"layout"' -e '"path"' "$TMP/mistral/voxtral.json") >/dev/null ||
    fail "manifests differ beyond the source"
ls -A "$TMP/hf" | grep -q '\.tmp$' && fail "temporary files left in $TMP/hf"

# -- --dtype bf16: every weight half the size (positions stay F32), quiet mode -------------------
run 0 bf16 --from "$HF" --out "$TMP/bf16" --dtype bf16 --quiet
[ -s "$TMP/bf16.log" ] && fail "--quiet printed: $(cat "$TMP/bf16.log")"
grep -q '"dtype":[[:space:]]*"BF16"' "$TMP/bf16/voxtral.json" || fail "bf16: manifest dtype"
f32=$(stat -c %s "$TMP/hf/text_decoder.safetensors")
b16=$(stat -c %s "$TMP/bf16/text_decoder.safetensors")
[ $((b16 * 2)) -lt $((f32 + 4096)) ] && [ $((b16 * 2)) -gt $((f32 - 8192)) ] ||
    fail "bf16 text_decoder is $b16 bytes, f32 $f32"

# -- --dtype fp8: the decoder's linear layers F8_E4M3 + row scales, the scheme in the manifest ---
run 0 fp8 --from "$HF" --out "$TMP/fp8" --dtype fp8
expect_log fp8 "decoder linear layers FP8 E4M3"
grep -q '"scheme":[[:space:]]*"fp8_dynamic"' "$TMP/fp8/voxtral.json" || fail "fp8: no scheme in the manifest"
cmp -s "$TMP/hf/audio_encoder.safetensors" "$TMP/fp8/audio_encoder.safetensors" ||
    fail "fp8: the audio encoder changed"
# tiny decoder: 2 layers of 147456 linear weights (4 bytes -> 1, plus 4 bytes a row of scales)
# beside 1400 x 128 of lm_head and a few norms, all F32
f8=$(stat -c %s "$TMP/fp8/text_decoder.safetensors")
want=$((f32 - 2 * 147456 * 3 + 2 * (256 + 128 + 512 + 128) * 4))
[ "$f8" -gt $((want - 8192)) ] && [ "$f8" -lt $((want + 8192)) ] ||
    fail "fp8 text_decoder is $f8 bytes, expected about $want (f32 $f32)"

# -- broken checkpoints: exit 1, message naming the file, no voxtral.json ------------------------
mkdir "$TMP/no_tekken"
cp "$HF/config.json" "$HF/model.safetensors" "$TMP/no_tekken/"
run 1 no_tekken --from "$TMP/no_tekken" --out "$TMP/no_tekken.out"
expect_log no_tekken "$TMP/no_tekken/tekken.json: cannot open"
[ -e "$TMP/no_tekken.out/voxtral.json" ] && fail "no_tekken: voxtral.json written"

mkdir "$TMP/bad_config"
cp "$HF/model.safetensors" "$HF/tekken.json" "$TMP/bad_config/"
echo '{"model_type": "voxtral", "audio_config": ' >"$TMP/bad_config/config.json"
run 1 bad_config --from "$TMP/bad_config" --out "$TMP/bad_config.out"
expect_log bad_config "$TMP/bad_config/config.json: invalid JSON"
[ -e "$TMP/bad_config.out/voxtral.json" ] && fail "bad_config: voxtral.json written"

mkdir "$TMP/no_weights"
cp "$MISTRAL/params.json" "$MISTRAL/tekken.json" "$TMP/no_weights/"
run 1 no_weights --from "$TMP/no_weights" --out "$TMP/no_weights.out"
expect_log no_weights "$TMP/no_weights/consolidated.safetensors"

mkdir "$TMP/empty"
run 1 empty --from "$TMP/empty" --out "$TMP/empty.out"
expect_log empty "not a Voxtral checkpoint"
run 1 missing --from "$TMP/nowhere" --out "$TMP/nowhere.out"
expect_log missing "$TMP/nowhere: cannot open checkpoint directory"

# An export whose checkpoint is broken leaves an existing model as it was.
run 1 over_existing --from "$TMP/no_tekken" --out "$TMP/hf"
[ -f "$TMP/hf/voxtral.json" ] || fail "a failed export removed an existing model's manifest"

# -- bad arguments: exit 2 -----------------------------------------------------------------------
run 2 no_out --from "$HF"
expect_log no_out "--from and --out are required"
run 2 bad_dtype --from "$HF" --out "$TMP/x" --dtype f16
expect_log bad_dtype "--dtype must be keep, f32, bf16 or fp8"
run 2 bad_layout --from "$HF" --out "$TMP/x" --layout gguf
run 2 unknown --from "$HF" --out "$TMP/x" --frobnicate
run 0 help --help
expect_log help "usage: voxtral_export"

# --layout picks the layout when a directory holds both (as the published repository does).
mkdir "$TMP/both"
cp "$HF"/config.json "$HF"/model.safetensors "$MISTRAL"/params.json \
   "$MISTRAL"/consolidated.safetensors "$HF"/tekken.json "$TMP/both/"
run 0 both_auto --from "$TMP/both" --out "$TMP/both_auto"
expect_log both_auto "exported transformers checkpoint"
run 0 both_mistral --from "$TMP/both" --out "$TMP/both_mistral" --layout mistral
expect_log both_mistral "exported mistral checkpoint"
cmp -s "$TMP/both_mistral/text_decoder.safetensors" "$TMP/hf/text_decoder.safetensors" ||
    fail "--layout mistral: text_decoder differs"

if [ "$failures" -ne 0 ]; then
    echo "test_export.sh: $failures failed (outputs kept in $TMP)"
    exit 1
fi
rm -rf "$TMP"
echo "test_export.sh: all passed"
