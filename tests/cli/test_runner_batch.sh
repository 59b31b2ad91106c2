#!/usr/bin/env bash
# voxtral_runner batching many files at once (tiny fixture model, CPU backend, where a batched
# transcript equals the one-file transcript exactly):
#  - standard output keeps input order although files complete out of order (the longest file
#    first: its default token budget, 32 + 8 per second, makes it finish last; prompts cut into
#    40-row chunks), each text equal to the file transcribed alone, a bad file inside the batch
#    reported and skipped;
#  - VOX_STEP_TRACE: a line for each step the report counts and each encoder group;
#  - VOX_ENCODER_GROUP=1: encoder groups of one piece, the same transcripts;
#  - --output-dir during a batch: every file written, the same texts;
#  - segments batched with whole files of another run: the same cues as segmenting alone;
#  - --batch-size: its effect in the latency report, bad values are usage errors.
# Usage: test_runner_batch.sh BUILD_DIR FIXTURES_DIR
set -u
build=$1
fixtures=$2
audio=$fixtures/tiny/audio
bad=$fixtures/bad_audio
source "$(dirname "$0")/runner_common.sh"
tmp=$(mktemp -d /tmp/vox_cli_batch_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export_tiny_model "$tmp/model"
R=("$exe" -m "$tmp/model" -d cpu --ignore-eos)

inputs=("$audio/long.wav" "$audio/short.wav" "$bad/text.wav" "$audio/speech.flac" "$audio/stereo44k.wav")
good=("$audio/long.wav" "$audio/short.wav" "$audio/speech.flac" "$audio/stereo44k.wav")

# each file alone
for f in "${good[@]}"; do
    n=$(basename "$f")
    run 0 "alone_$n" --batch-size 1 "$f"
done

# all at once (the long file completes after the others), with the step trace
VOX_STEP_ROWS=40 VOX_STEP_TRACE="$tmp/trace.txt" run 1 batch --batch-size 4 --latency \
    --latency-json "$tmp/batch.json" "${inputs[@]}"
expected=$(for f in "${good[@]}"; do printf '==> %s <==\n' "$f"; cat "$tmp/alone_$(basename "$f").out"; done)
check "batch: stdout in input order, each text as alone" [ "$(cat "$tmp/batch.out")" = "$expected" ]
checks=$((checks + 1))
grep -qF "$bad/text.wav: not a supported audio file" "$tmp/batch.err" || fail "batch: no message for the bad file"
checks=$((checks + 1))
grep -qF "4 of 5 files transcribed, 1 failed" "$tmp/batch.err" || fail "batch: no summary: $(cat "$tmp/batch.err")"
checks=$((checks + 1))
grep -Eq '^  batch size +4 ' "$tmp/batch.err" || fail "batch: no batch size 4 in the report: $(cat "$tmp/batch.err")"
checks=$((checks + 1))
mean=$(sed -n 's/^  mean batch *\([0-9.]*\).*/\1/p' "$tmp/batch.err")
awk -v m="${mean:-0}" 'BEGIN { exit !(m > 1.0) }' || fail "batch: mean batch '$mean' (no step decoded several files)"

# VOX_STEP_TRACE: a line a step (as many as the report counts, none over the 40-row budget, the
# decode rows one token each) and an encoder group (every good file admitted once)
steps=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["batch"]["steps"])' "$tmp/batch.json")
check "trace: a line a step ($steps)" [ "$(grep -c ' step [0-9]* seqs ' "$tmp/trace.txt")" = "$steps" ]
check "trace: steps within the row budget" awk '/ step / { for (i = 1; i < NF; i++) if ($i == "rows" && $(i + 1) > 40) exit 1 }' "$tmp/trace.txt"
admitted=$(awk '/ encode / { for (i = 1; i < NF; i++) if ($i == "seqs") n += $(i + 1) } END { print n + 0 }' "$tmp/trace.txt")
check "trace: encoder groups admitted the 4 good files ($admitted)" [ "$admitted" = 4 ]
# scripts/step_trace.py sums the same trace up: its chunk count is the encode lines'
chunks=$(awk '/ encode / { for (i = 1; i < NF; i++) if ($i == "chunks") n += $(i + 1) } END { print n + 0 }' "$tmp/trace.txt")
summary=$(python3 "$(dirname "$0")/../../scripts/step_trace.py" "$tmp/trace.txt" 2>&1)
checks=$((checks + 1))
grep -q "encoder: $chunks chunks" <<<"$summary" && grep -q "steps with prompt rows" <<<"$summary" \
    || fail "trace: scripts/step_trace.py does not sum it up: $summary"
check "trace: lines carry device ms" grep -Eq '^cpu at [0-9.]+ gap [0-9.]+ step 1 seqs [0-9]+ decode 0 rows [0-9]+ logits [0-9]+ active [0-9]+ kv_decode 0 gpu_ms [0-9.]+$' "$tmp/trace.txt"

# VOX_ENCODER_GROUP=1: one piece an encoder group (a piece of two chunks still goes whole), the
# same transcripts
VOX_STEP_ROWS=40 VOX_ENCODER_GROUP=1 VOX_STEP_TRACE="$tmp/trace1.txt" run 1 group1 --batch-size 4 "${inputs[@]}"
check "group1: the same stdout" [ "$(cat "$tmp/group1.out")" = "$(cat "$tmp/batch.out")" ]
check "group1: one piece a group" awk '/ encode / { for (i = 1; i < NF; i++) if ($i == "seqs" && $(i + 1) != 1) exit 1; n++ } END { exit n != 4 }' "$tmp/trace1.txt"

# the same batch into a directory: files appear as they complete, each complete
VOX_STEP_ROWS=40 run 1 dir --batch-size 4 -O "$tmp/outdir" "${inputs[@]}"
for f in "${good[@]}"; do
    n=$(basename "$f")
    check "dir: $n.txt as alone" [ "$(cat "$tmp/outdir/${n%.*}.txt")" = "$(cat "$tmp/alone_$n.out")" ]
done
check "dir: nothing else in the directory" [ "$(ls -A "$tmp/outdir" | wc -l)" -eq 4 ]
empty_out() { [ ! -s "$tmp/dir.out" ]; }
check "dir: nothing on stdout" empty_out

# segments of one file batched together (and with a whole file): as segmenting it alone
run 0 seg_alone --batch-size 1 -n 4 -o srt "$audio/long.wav"
run 0 seg_batch --batch-size 8 -n 4 -o srt "$audio/long.wav" "$audio/short.wav"
checks=$((checks + 1))
got=$(sed -n "2,/^==> /p" "$tmp/seg_batch.out" | sed '$d')
[ "$got" = "$(cat "$tmp/seg_alone.out")" ] || fail "segments batched differ from alone"

# usage errors
for v in 0 -3 abc 5000 ''; do
    run 2 "bad_batch_size" --batch-size "$v" "$audio/short.wav"
    checks=$((checks + 1))
    grep -qF -- "--batch-size: expected 1..4096" "$tmp/bad_batch_size.err" ||
        fail "--batch-size '$v': $(cat "$tmp/bad_batch_size.err")"
done

echo "test_runner_batch: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
