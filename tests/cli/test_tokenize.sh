#!/usr/bin/env bash
# voxtral_tokenize end to end: encode/decode round trips, --input, usage errors (exit 2), missing
# and malformed tokenizer files (exit 1, message naming the file).
# Usage: test_tokenize.sh BUILD_DIR FIXTURES_DIR
set -u
build=$1
fixtures=$2
exe=$build/voxtral_tokenize
if [ ! -x "$exe" ]; then
    echo "SKIPPED: $exe is not built"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/checks.sh"

# expect_exit CODE STDERR_SUBSTRING CMD...: the exit status, and a message on stderr
expect_exit() {
    local want=$1 msg=$2
    shift 2
    checks=$((checks + 1))
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$* exited $rc, want $want ($(cat "$tmp/err"))"
    elif [ -n "$msg" ] && ! grep -qF -- "$msg" "$tmp/err"; then
        fail "$*: stderr lacks '$msg': $(cat "$tmp/err")"
    fi
}

# The fixture tokenizer when present, else a byte-level one with a few merges made here.
tekken=$fixtures/tiny/tekken.json
if [ ! -f "$tekken" ]; then
    tekken=$tmp/tekken.json
    {
        printf '{"config": {"pattern": "[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?[\\\\p{Lu}\\\\p{Lt}\\\\p{Lm}\\\\p{Lo}\\\\p{M}]*[\\\\p{Ll}\\\\p{Lm}\\\\p{Lo}\\\\p{M}]+|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?[\\\\p{Lu}\\\\p{Lt}\\\\p{Lm}\\\\p{Lo}\\\\p{M}]+[\\\\p{Ll}\\\\p{Lm}\\\\p{Lo}\\\\p{M}]*|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n/]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+", '
        printf '"num_vocab_tokens": 260, "default_vocab_size": 270, "default_num_special_tokens": 10, "version": "v11"},\n"vocab": ['
        for i in $(seq 0 255); do
            # shellcheck disable=SC2059  # the format is the escape of byte i
            b64=$(printf "\\x$(printf %02x "$i")" | base64)
            printf '%s{"rank": %d, "token_bytes": "%s", "token_str": null}' "$([ "$i" -gt 0 ] && echo ,)" "$i" "$b64"
        done
        r=256
        for tok in "he" "ll" "hell" " w"; do
            printf ',{"rank": %d, "token_bytes": "%s", "token_str": "%s"}' "$r" "$(printf %s "$tok" | base64)" "$tok"
            r=$((r + 1))
        done
        printf '],\n"special_tokens": [{"rank": 0, "token_str": "<unk>", "is_control": true}, {"rank": 1, "token_str": "<s>", "is_control": true}]}\n'
    } >"$tekken"
fi

# Round trips through the executable.
for text in "hello world" "Hello, world! Ça va? 你好 🎉 12345" "  spaces   and	tabs  " "a" "<s> is text"; do
    checks=$((checks + 1))
    if ! ids=$("$exe" --tokenizer "$tekken" "$text" 2>"$tmp/err"); then
        fail "encoding '$text': $(cat "$tmp/err")"
        continue
    fi
    if ! [[ "$ids" =~ ^[0-9]+(\ [0-9]+)*$ ]]; then
        fail "encoding '$text' printed '$ids'"
        continue
    fi
    # shellcheck disable=SC2086  # the ids are separate arguments
    back=$("$exe" --tokenizer "$tekken" --decode $ids 2>"$tmp/err")
    [ "$back" = "$text" ] || fail "'$text' -> $ids -> '$back'"
    # --input (file and stdin) gives the same ids
    printf %s "$text" >"$tmp/text"
    [ "$("$exe" --tokenizer "$tekken" --input "$tmp/text")" = "$ids" ] || fail "--input FILE for '$text'"
    [ "$("$exe" --tokenizer "$tekken" --input - <"$tmp/text")" = "$ids" ] || fail "--input - for '$text'"
done

# A multi-line text through --input: newlines survive.
printf 'line one\nline two\r\n\n  indented\n' >"$tmp/lines"
ids=$("$exe" --tokenizer "$tekken" --input "$tmp/lines")
# shellcheck disable=SC2086
"$exe" --tokenizer "$tekken" --decode $ids >"$tmp/back"
printf '\n' >>"$tmp/lines" # --decode ends its output with a newline
checks=$((checks + 1))
cmp -s "$tmp/lines" "$tmp/back" || fail "multi-line round trip: $(od -c "$tmp/back" | head -3)"

# Empty text: an empty line.
checks=$((checks + 1))
[ "$("$exe" --tokenizer "$tekken" "")" = "" ] || fail "empty text"

# Help and version.
expect_exit 0 "" "$exe" --help
grep -q "usage: voxtral_tokenize" "$tmp/out" || fail "--help prints no usage"
expect_exit 0 "" "$exe" --version
grep -q "^voxtral_tokenize [0-9]" "$tmp/out" || fail "--version prints '$(cat "$tmp/out")'"

# Usage errors: exit 2.
expect_exit 2 "--tokenizer is required" "$exe" "text"
expect_exit 2 "unknown option" "$exe" --tokenizer "$tekken" --bogus "text"
expect_exit 2 "exactly one TEXT" "$exe" --tokenizer "$tekken"
expect_exit 2 "exactly one TEXT" "$exe" --tokenizer "$tekken" "a" "b"
expect_exit 2 "not a token id" "$exe" --tokenizer "$tekken" --decode 300 abc
expect_exit 2 "needs a value" "$exe" --tokenizer

# Bad files and bad input: exit 1, the message names the file.
expect_exit 1 "$tmp/missing.json" "$exe" --tokenizer "$tmp/missing.json" "text"
expect_exit 1 "$fixtures/bad_tekken/duplicate_token.json" \
    "$exe" --tokenizer "$fixtures/bad_tekken/duplicate_token.json" "text"
expect_exit 1 "$fixtures/bad_tekken/not_json.json" \
    "$exe" --tokenizer "$fixtures/bad_tekken/not_json.json" --decode 1
expect_exit 1 "$tmp/nothing.txt" "$exe" --tokenizer "$tekken" --input "$tmp/nothing.txt"
expect_exit 1 "not valid UTF-8" "$exe" --tokenizer "$tekken" "$(printf 'ab\377')"
expect_exit 1 "outside the vocabulary" "$exe" --tokenizer "$tekken" --decode 5 99999999
expect_exit 1 "outside the vocabulary" "$exe" --tokenizer "$tekken" --decode -1

echo "test_tokenize: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
