#!/usr/bin/env bash
# voxtral_runner as one task of a job array (tiny fixture model, CPU backend):
#  - --shard K/N: the N shards of a list (FILE arguments, then --files-from) are disjoint, cover
#    it, and differ in size by at most one; an empty shard does nothing and exits 0;
#  - --skip-existing: a run interrupted by SIGINT and started again with it transcribes only what
#    is missing (the finished outputs are left as they were), counts the others as skipped and
#    exits 0; when everything is there it stops before loading the model;
#  - two inputs of the same output name in different shards are a usage error in every shard;
#  - bad --shard values and --skip-existing without --output-dir are usage errors.
# Usage: test_runner_shards.sh BUILD_DIR FIXTURES_DIR
set -u
build=$1
fixtures=$2
audio=$fixtures/tiny/audio
source "$(dirname "$0")/runner_common.sh"
tmp=$(mktemp -d /tmp/vox_cli_shards_XXXXXX)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
export_tiny_model "$tmp/model"
R=("$exe" -m "$tmp/model" -d cpu -n 2)

# 8 inputs: 5 arguments, 3 from a list
mkdir "$tmp/in"
all=()
for i in 0 1 2 3 4 5 6 7; do
    ln -s "$(realpath "$audio/short.wav")" "$tmp/in/f$i.wav"
    all+=("$tmp/in/f$i.wav")
done
printf '%s\n' "${all[@]:5}" >"$tmp/list.txt"
for k in 0 1 2; do
    run 0 "shard$k" --shard "$k/3" -O "$tmp/out$k" "${all[@]:0:5}" --files-from "$tmp/list.txt"
done
# shard k holds exactly the inputs at positions k, k+3, ...
for k in 0 1 2; do
    want=$(for ((i = k; i < 8; i += 3)); do echo "f$i.txt"; done)
    check "shard $k/3 holds positions $k mod 3" [ "$(ls "$tmp/out$k" | sort -V)" = "$want" ]
done
check "the shards together: every input once" \
    [ "$(ls "$tmp"/out0 "$tmp"/out1 "$tmp"/out2 | grep -c '^f[0-7].txt$')" -eq 8 ]
run 0 empty_shard --shard 9/10 -O "$tmp/out9" "${all[@]}"
checks=$((checks + 1))
grep -qF "shard 9/10 of 8 inputs is empty" "$tmp/empty_shard.err" || fail "empty shard: $(cat "$tmp/empty_shard.err")"
for bad in 3/3 -1/2 1/0 a/b 1/2/3 " 1/2" 1/ /2 2; do
    run 2 bad_shard --shard "$bad" "$audio/short.wav"
    checks=$((checks + 1))
    grep -qF -- "--shard: expected K/N" "$tmp/bad_shard.err" || fail "--shard '$bad': $(cat "$tmp/bad_shard.err")"
done
# two inputs of one output name in different shards: every shard reads the whole list, so each
# refuses it (exit 2, before the model loads) instead of one shard's output replacing the other's
mkdir "$tmp/a" "$tmp/b"
ln -s "$(realpath "$audio/short.wav")" "$tmp/a/x.wav"
ln -s "$(realpath "$audio/speech.flac")" "$tmp/b/x.flac"
for k in 0 1; do
    run 2 "clash$k" --shard "$k/2" --skip-existing -O "$tmp/clash" "$tmp/a/x.wav" "$tmp/b/x.flac"
    has "$tmp/clash$k.err" "'$tmp/a/x.wav' and '$tmp/b/x.flac' would both be written to $tmp/clash/x.txt"
    check "clash, shard $k/2: no output directory made" [ ! -e "$tmp/clash" ]
done
run 2 skip_no_dir --skip-existing "$audio/short.wav"
checks=$((checks + 1))
grep -qF -- "--skip-existing needs --output-dir" "$tmp/skip_no_dir.err" || fail "--skip-existing alone: $(cat "$tmp/skip_no_dir.err")"

# interrupted after the first file (one at a time), then resumed
out=$tmp/resume
"${R[@]}" --batch-size 1 -n 30 --ignore-eos -O "$out" "${all[@]}" >"$tmp/int.out" 2>"$tmp/int.err" &
pid=$!
wait_until "$pid" test -e "$out/f0.txt"
kill -INT "$pid"
wait "$pid"
rc=$?
pid=
check "interrupted run: exit 130 (got $rc)" [ "$rc" -eq 130 ]
done_before=$(ls "$out" | grep -c '^f[0-7].txt$')
check "interrupted run: some files done, not all ($done_before)" test "$done_before" -ge 1 -a "$done_before" -lt 8
touch -d '2001-01-01' "$out"/f*.txt # a rewritten file would show a new time
run 0 resumed --skip-existing -O "$out" "${all[@]}"
check "resumed: all 8 outputs" [ "$(ls "$out" | grep -c '^f[0-7].txt$')" -eq 8 ]
check "resumed: the finished ones left as they were" \
    [ "$(find "$out" -name 'f*.txt' ! -newermt '2002-01-01' | wc -l)" -eq "$done_before" ]
checks=$((checks + 1))
grep -qF "$((8 - done_before)) of 8 files transcribed, 0 failed, $done_before skipped (output exists)" "$tmp/resumed.err" ||
    fail "resumed: summary: $(cat "$tmp/resumed.err")"
# everything there: stops before loading the model (a model that does not exist is never read)
checks=$((checks + 1))
"$exe" -m "$tmp/no_such_model" -d cpu --skip-existing -O "$out" "${all[@]}" >"$tmp/all.out" 2>"$tmp/all.err" ||
    fail "all present: exit $?: $(cat "$tmp/all.err")"
checks=$((checks + 1))
grep -qF "8 skipped (output exists): nothing to do" "$tmp/all.err" || fail "all present: $(cat "$tmp/all.err")"

# a directory where an output would go is not a finished output: its input runs, and writing the
# output fails with a message (exit 1); the others stay skipped
rm "$out/f3.txt" && mkdir "$out/f3.txt"
run 1 dir_output --skip-existing -O "$out" "${all[@]}"
checks=$((checks + 1))
grep -qF "0 of 8 files transcribed, 1 failed, 7 skipped (output exists)" "$tmp/dir_output.err" ||
    fail "directory as an output: $(cat "$tmp/dir_output.err")"
has "$tmp/dir_output.err" "f3.txt: is a directory"

echo "test_runner_shards: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
