#!/usr/bin/env bash
# voxtral_runner when things fail under it (tiny fixture model, CPU backend):
#  - writing an output fails (a file-size limit, as ulimit -f sets; a full disk on stdout): that
#    file fails with the reason and its name, no temporary file is left, the others are written,
#    exit 1;
#  - a device error inside a batch (VOX_FAULT, the engine's test hook): a decoder step or encoder
#    group that keeps failing is run again in halves until the requests it fails on fail alone,
#    each named with the reason, and the others are written; a lost device ("sticky") fails what
#    it had in flight and what was left, each file reported; exit 1, and --output-dir never holds
#    a partial file;
#  - a device that has memory for fewer sequences than the batch (VOX_FAULT=seqs:K), or for fewer
#    encoder chunks at once (chunks:K): the batch shrinks instead of failing, every file is
#    written as without the fault, exit 0, and the run says so (stderr, --latency-json).
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

# only_outputs DIR NAME...: DIR holds exactly these files (no temporary ones)
only_outputs() {
    local dir=$1
    shift
    checks=$((checks + 1))
    [ "$(ls -A "$dir" | sort | tr '\n' ' ')" = "$( (($#)) && printf '%s\n' "$@" | sort | tr '\n' ' ')" ] ||
        fail "$dir holds '$(ls -A "$dir" | tr '\n' ' ')', want '$*'"
}

# -- writing an output fails ----------------------------------------------------------------------
# json outputs: long.wav's (408 tokens) is over 2 KiB, the others under 1. A file-size limit of
# 2 KiB (ulimit -f counts 1024-byte blocks): long.json cannot be written, the others are, whole.
# stderr goes through a pipe, which the limit does not cover.
inputs=("$audio/short.wav" "$audio/long.wav" "$audio/speech.flac")
checks=$((checks + 1))
(ulimit -f 2 && exec "${R[@]}" -o json -O "$tmp/fsize" "${inputs[@]}" 2>&1) | cat >"$tmp/fsize.err"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 1 ] || fail "file-size limit: exit $rc, want 1: $(cat "$tmp/fsize.err")"
has "$tmp/fsize.err" "voxtral_runner: $audio/long.wav: $tmp/fsize/long.json: cannot write: File too large"
has "$tmp/fsize.err" "2 of 3 files transcribed, 1 failed"
only_outputs "$tmp/fsize" short.json speech.json
for n in short speech; do # whole: one json line that ends the object
    check "file-size limit: $n.json whole" [ "$(wc -l <"$tmp/fsize/$n.json")" -eq 1 ]
    checks=$((checks + 1))
    tail -c 3 "$tmp/fsize/$n.json" | grep -q ']}' || fail "file-size limit: $n.json is cut short"
    if command -v python3 >/dev/null; then
        check "file-size limit: $n.json parses" python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/fsize/$n.json"
    fi
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

# -- a device error inside a batch (VOX_FAULT) ---------------------------------------------------
# Six inputs with the same audio, three in flight at a time (each needs 4 steps: its prompt, then
# 3 decode steps), so a step or group holds some of them and the others come before or after.
mkdir "$tmp/in"
batch=()
for i in $(seq 1 6); do
    ln -s "$(realpath "$audio/short.wav")" "$tmp/in/f$i.wav"
    batch+=("$tmp/in/f$i.wav")
done
F=("$exe" -m "$tmp/model" -d cpu -n 4 --batch-size 3 -o srt)
checks=$((checks + 1))
"${F[@]}" -O "$tmp/fault_ref" "$tmp/in/f1.wav" 2>"$tmp/fault_ref.err" ||
    fail "fault reference: $(cat "$tmp/fault_ref.err")"

# fault SPEC: the batch into a directory with VOX_FAULT=SPEC. Exit 1; every input either written,
# whole, or reported failed with the injected fault named, never both; at least one of each; the
# summary counts them; nothing else in the directory.
fault() {
    local spec=$1 out=$tmp/fault_${1//:/_} written=0 failed=0 i f
    VOX_FAULT=$spec "${F[@]}" -O "$out" "${batch[@]}" >"$out.out" 2>"$out.err"
    local rc=$?
    checks=$((checks + 1))
    [ "$rc" -eq 1 ] || fail "VOX_FAULT=$spec: exit $rc, want 1: $(cat "$out.err")"
    for i in $(seq 1 6); do
        f=$tmp/in/f$i.wav
        local w=0 r=0
        [ -e "$out/f$i.srt" ] && w=1
        grep -qF "voxtral_runner: $f: " "$out.err" &&
            grep -F "voxtral_runner: $f: " "$out.err" | grep -qF "injected fault (VOX_FAULT=$spec)" && r=1
        checks=$((checks + 1))
        [ $((w + r)) -eq 1 ] || fail "VOX_FAULT=$spec: f$i.wav written $w, reported failed $r"
        if [ "$w" -eq 1 ]; then
            check "VOX_FAULT=$spec: f$i.srt whole" cmp -s "$out/f$i.srt" "$tmp/fault_ref/f1.srt"
        fi
        written=$((written + w))
        failed=$((failed + r))
    done
    checks=$((checks + 1))
    [ "$written" -ge 1 ] && [ "$failed" -ge 1 ] ||
        fail "VOX_FAULT=$spec: $written written, $failed failed: $(cat "$out.err")"
    has "$out.err" "$written of 6 files transcribed, $failed failed;"
    only_outputs "$out" $(for i in $(seq 1 6); do [ -e "$out/f$i.srt" ] && echo "f$i.srt"; done)
    echo "VOX_FAULT=$spec: $written written, $failed failed"
}
# A step fails, and every step that holds one of its requests: the device works on, the steps
# run again in halves, and the step's requests fail alone; the others are written.
fault step:3
has "$tmp/fault_step_3.err" "a decoder step failed: cpu: decoder step "
has "$tmp/fault_step_3.err" "failed on a device that worked on (out of memory?) and ran again smaller"
# An encoder group fails: its requests fail (encoded in halves, down to one, first), the others
# are written.
fault encode:2
# The device is lost at step 6, once the first requests are done: those stay written, what was in
# flight and what was left fail, each file reported.
fault step:6:sticky
has "$tmp/fault_step_6_sticky.err" "the device is lost"
# the summary lists the failed inputs again in input order (they fail in the order the engine
# gives up its sequences, last admitted first)
check "VOX_FAULT=step:6:sticky: the summary's failures in input order" python3 -c '
import sys
names = [l[len("  failed: "):].split(": ", 1)[0] for l in open(sys.argv[1]) if l.startswith("  failed: ")]
assert len(names) >= 2 and names == sorted(names, key=lambda n: int(n.rsplit("/f", 1)[1][:-4])), names
' "$tmp/fault_step_6_sticky.err"
# A device with memory for at most K sequences a step: steps of more fail (as out of memory),
# and the batch shrinks instead: every file written, the same as without the fault.
for k in 1 2; do
    out=$tmp/fault_seqs_$k
    checks=$((checks + 1))
    VOX_FAULT=seqs:$k "${F[@]}" -O "$out" --latency-json "$out.json" "${batch[@]}" >"$out.out" 2>"$out.err"
    rc=$?
    [ "$rc" -eq 0 ] || fail "VOX_FAULT=seqs:$k: exit $rc, want 0: $(cat "$out.err")"
    for i in $(seq 1 6); do
        check "VOX_FAULT=seqs:$k: f$i.srt as without the fault" cmp -s "$out/f$i.srt" "$tmp/fault_ref/f1.srt"
    done
    only_outputs "$out" f1.srt f2.srt f3.srt f4.srt f5.srt f6.srt
    has "$out.err" "6 of 6 files transcribed, 0 failed"
    has "$out.err" "and ran again smaller (decoder steps down to "
    if command -v python3 >/dev/null; then
        check "VOX_FAULT=seqs:$k: --latency-json counts the shrinks" python3 -c '
import json, sys
b = json.load(open(sys.argv[1]))["batch"]
k = int(sys.argv[2])
assert b["shrinks"] >= 1 and 1 <= b["smallest_step_limit"] <= k, b' "$out.json" "$k"
    fi
done
# The limit doubles back after 64 steps that succeed: with room for one sequence, a run of more
# steps than that shrinks again each time it tries two.
checks=$((checks + 1))
VOX_FAULT=seqs:1 "${F[@]}" -n 70 --latency-json "$tmp/regrow.json" "${batch[@]:0:2}" >/dev/null 2>"$tmp/regrow.err" ||
    fail "VOX_FAULT=seqs:1 -n 70: $(cat "$tmp/regrow.err")"
if command -v python3 >/dev/null; then
    check "VOX_FAULT=seqs:1 -n 70: the limit grew back and shrank again" python3 -c '
import json, sys
b = json.load(open(sys.argv[1]))["batch"]
assert b["shrinks"] >= 2 and b["smallest_step_limit"] == 1, b' "$tmp/regrow.json"
fi
# Room for one encoder chunk at once: groups of several files go in halves, and long.wav (47 s,
# two chunks; json, so one piece, not segments) alone a chunk at a time; every file written as
# without the fault (json with log-probabilities: the same to the last digit on the CPU).
mixed=("$audio/long.wav" "$tmp/in/f1.wav" "$tmp/in/f2.wav" "$audio/speech.flac")
C=("$exe" -m "$tmp/model" -d cpu -n 4 --batch-size 3 --ignore-eos -o json --logprobs 2)
checks=$((checks + 1))
"${C[@]}" -O "$tmp/chunks_ref" "${mixed[@]}" 2>"$tmp/chunks_ref.err" || fail "chunks reference: $(cat "$tmp/chunks_ref.err")"
checks=$((checks + 1))
VOX_FAULT=chunks:1 VOX_STEP_TRACE="$tmp/chunks.trace" "${C[@]}" -O "$tmp/chunks" --latency-json "$tmp/chunks.json" \
    "${mixed[@]}" >/dev/null 2>"$tmp/chunks.err" || fail "VOX_FAULT=chunks:1: $(cat "$tmp/chunks.err")"
for n in long f1 f2 speech; do
    check "VOX_FAULT=chunks:1: $n.json as without the fault" same_json "$tmp/chunks/$n.json" "$tmp/chunks_ref/$n.json"
done
has "$tmp/chunks.trace" "failed encode chunks 2 then_chunks 1"
has "$tmp/chunks.err" "4 of 4 files transcribed, 0 failed"
has "$tmp/chunks.err" "failed on a device that worked on (out of memory?) and ran again smaller;"
if command -v python3 >/dev/null; then
    check "VOX_FAULT=chunks:1: --latency-json counts the shrinks" python3 -c '
import json, sys
b = json.load(open(sys.argv[1]))["batch"]
assert b["shrinks"] >= 1 and b["smallest_step_limit"] == 0, b' "$tmp/chunks.json"
fi
# Without a fault nothing shrinks, and nothing is said.
checks=$((checks + 1))
"${F[@]}" -O "$tmp/noshrink" --latency-json "$tmp/noshrink.json" "${batch[@]}" >/dev/null 2>"$tmp/noshrink.err" ||
    fail "no fault: $(cat "$tmp/noshrink.err")"
checks=$((checks + 1))
! grep -q "ran again smaller" "$tmp/noshrink.err" || fail "no fault, yet: $(cat "$tmp/noshrink.err")"
if command -v python3 >/dev/null; then
    check "no fault: no shrinks in --latency-json" python3 -c '
import json, sys
b = json.load(open(sys.argv[1]))["batch"]
assert b["shrinks"] == 0 and b["smallest_step_limit"] == 0, b' "$tmp/noshrink.json"
fi
# a hook that is not understood stops the run before anything starts
VOX_FAULT=step:0 run 1 fault_bad "$audio/short.wav"
has "$tmp/fault_bad.err" "VOX_FAULT=step:0: expected step:N or encode:N"

echo "test_runner_faults: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
