#!/usr/bin/env bash
# voxtral_runner end to end on the tiny fixture model (CPU backend): a batch with a bad file in
# the middle (the others still produce output, exit 1, a summary), each kind of bad input (a
# message naming the file and the problem, exit 1, no output), --files-from (a file, standard
# input), usage errors (exit 2), --help, json fields, the latency aggregate, --print-confidence,
# and the progress line (only on a terminal, never on stdout).
# The tiny model is random: transcripts are gibberish, so this checks structure, not words.
# Usage: test_runner.sh BUILD_DIR FIXTURES_DIR
set -u
build=$1
fixtures=$2
audio=$fixtures/tiny/audio
bad=$fixtures/bad_audio
source "$(dirname "$0")/runner_common.sh"
tmp=$(mktemp -d /tmp/vox_cli_runner_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export_tiny_model "$tmp/model"
# Few tokens per request keep the suite fast (it also runs under ASan).
R=("$exe" -m "$tmp/model" -d cpu -n 4)

has() { # has NAME.STREAM TEXT: the file holds the text
    checks=$((checks + 1))
    grep -qF -- "$2" "$tmp/$1" || fail "$1 lacks '$2': $(head -c 2000 "$tmp/$1")"
}
lacks() {
    checks=$((checks + 1))
    ! grep -qF -- "$2" "$tmp/$1" || fail "$1 holds '$2': $(head -c 2000 "$tmp/$1")"
}
empty() {
    checks=$((checks + 1))
    [ ! -s "$tmp/$1" ] || fail "$1 is not empty: $(head -c 2000 "$tmp/$1")"
}

# -- one file: the transcript on stdout, nothing on stderr ------------------------------------
run 0 one "$audio/short.wav"
check "one: one line of stdout" [ "$(wc -l <"$tmp/one.out")" -eq 1 ]
empty one.err

# -- a batch with a bad file in the middle -----------------------------------------------------
run 1 batch "$audio/short.wav" "$bad/text.wav" "$audio/speech.flac"
has batch.out "==> $audio/short.wav <=="
has batch.out "==> $audio/speech.flac <=="
lacks batch.out "text.wav"
check "batch: 4 lines of stdout" [ "$(wc -l <"$tmp/batch.out")" -eq 4 ]
check "batch: short.wav as alone" [ "$(sed -n 2p "$tmp/batch.out")" = "$(cat "$tmp/one.out")" ]
has batch.err "$bad/text.wav: not a supported audio file"
has batch.err "2 of 3 files transcribed, 1 failed"
has batch.err "  failed: $bad/text.wav: not a supported audio file"

# -- --files-from: standard input (CR LF, empty lines), a file, after the FILE arguments ---------
printf '%s\r\n\n%s\n' "$bad/text.wav" "$audio/short.wav" >"$tmp/list.txt"
checks=$((checks + 1))
"${R[@]}" --files-from - <"$tmp/list.txt" >"$tmp/stdin.out" 2>"$tmp/stdin.err"
rc=$?
[ "$rc" -eq 1 ] || fail "--files-from -: exit $rc: $(cat "$tmp/stdin.err")"
check "--files-from -: the output" [ "$(cat "$tmp/stdin.out")" = "$(printf '==> %s <==\n%s' "$audio/short.wav" "$(cat "$tmp/one.out")")" ]
has stdin.err "1 of 2 files transcribed, 1 failed"
has stdin.err "$bad/text.wav: not a supported audio file"
printf '%s\n' "$bad/empty.wav" >"$tmp/list2.txt"
run 1 list_order "$bad/zero_frames.wav" --files-from "$tmp/list2.txt" "$bad/nan.wav"
check "--files-from: FILE arguments first, then the list" \
    [ "$(grep -o -e 'zero_frames.wav: no' -e 'nan.wav: sample' -e 'empty.wav: empty' <(head -n 3 "$tmp/list_order.err") | tr '\n' ' ')" = \
      "zero_frames.wav: no nan.wav: sample empty.wav: empty " ]
: >"$tmp/empty_list.txt"
run 0 empty_list --files-from "$tmp/empty_list.txt"
has empty_list.err "no input files in $tmp/empty_list.txt"
empty empty_list.out
run 2 missing_list --files-from "$tmp/no_such_list.txt"
has missing_list.err "$tmp/no_such_list.txt: cannot open"
# a list saved with a byte order mark (Windows editors) reads as one without; a directory as the
# list names the option; a second --files-from is a usage error (it silently replaced the first)
printf '\xef\xbb\xbf%s\r\n' "$audio/short.wav" >"$tmp/bom_list.txt"
run 0 bom_list --files-from "$tmp/bom_list.txt"
check "--files-from with a byte order mark: the file transcribed" [ "$(cat "$tmp/bom_list.out")" = "$(cat "$tmp/one.out")" ]
run 2 dir_list --files-from "$tmp"
has dir_list.err "--files-from $tmp: cannot read: Is a directory"
run 2 two_lists --files-from "$tmp/bom_list.txt" -f "$tmp/list2.txt"
has two_lists.err "--files-from given twice ('$tmp/bom_list.txt', '$tmp/list2.txt')"

# -- bad inputs, one at a time: exit 1, the file and the problem named, no output anywhere -----
head -c 79000 "$audio/speech.flac" >"$tmp/truncated.flac"
head -c 30 "$audio/short.wav" >"$tmp/header_only.wav"
mkdir "$tmp/a_directory.wav"
# an Ogg Vorbis stream whose headers are damaged (a fuzzer's find: libsndfile leaks its
# vorbis_info when the open fails, suppressed in tests/lsan.supp for the sanitizer run)
cp "$fixtures/../fuzz/regressions/audio/leak-vorbis-open" "$tmp/bad_vorbis.ogg"
bad_cases=(
    "$tmp/missing.wav|cannot open: No such file or directory"
    "$bad/empty.wav|empty file (0 bytes)"
    "$bad/text.wav|not a supported audio file"
    "$bad/garbage.flac|not a supported audio file"
    "$tmp/header_only.wav|not a supported audio file"
    "$bad/zero_frames.wav|no audio could be decoded"
    "$bad/nan.wav|is NaN"
    "$bad/inf.wav|is infinite"
    "$tmp/a_directory.wav|is a directory"
    "$tmp/bad_vorbis.ogg|not a supported audio file"
)
# a truncated file: what is there is transcribed, with a warning (stderr, json), exit 0
run 0 truncated -o json "$tmp/truncated.flac"
has truncated.err "$tmp/truncated.flac: warning: truncated or damaged: decoded"
has truncated.out '"warnings":["truncated or damaged: decoded'
# a damaged MP3 (64 bytes zeroed in the middle: a frame header lost): decoded past the damage,
# one warning line of ours on stderr, none of libmpg123's own ("Note: Illegal Audio-MPEG-Header")
cp "$audio/speech.mp3" "$tmp/damaged.mp3"
head -c 64 /dev/zero | dd of="$tmp/damaged.mp3" bs=1 seek=4400 conv=notrunc status=none
run 0 damaged_mp3 -o json "$tmp/damaged.mp3"
has damaged_mp3.err "voxtral_runner: $tmp/damaged.mp3: warning: damaged: the MPEG stream lost sync at byte "
check "damaged mp3: one line on stderr" [ "$(wc -l <"$tmp/damaged_mp3.err")" -eq 1 ]
has damaged_mp3.out '"warnings":["damaged: the MPEG stream lost sync at byte '
run 0 whole -o json "$audio/speech.flac"
has whole.out '"warnings":[]'
empty whole.err

mkdir "$tmp/outdir"
for case in "${bad_cases[@]}"; do
    file=${case%%|*}
    msg=${case#*|}
    for fmt in txt srt; do
        run 1 bad_one -o "$fmt" "$file"
        has bad_one.err "voxtral_runner: $file: "
        has bad_one.err "$msg"
        empty bad_one.out
        run 1 bad_dir -o "$fmt" -O "$tmp/outdir" "$file"
        has bad_dir.err "voxtral_runner: $file: "
        has bad_dir.err "$msg"
        check "no output file for $file" [ -z "$(ls -A "$tmp/outdir")" ]
    done
done

# -- usage and model errors: exit 2 ------------------------------------------------------------
run 2 no_input
has no_input.err "no input files"
run 2 bad_format -o mp4 "$audio/short.wav"
has bad_format.err "expected txt, json, srt or vtt"
run 2 unknown --frobnicate "$audio/short.wav"
has unknown.err "unknown option '--frobnicate'"
run 2 conf_json --print-confidence -o json "$audio/short.wav"
has conf_json.err "--print-confidence"
run 2 segment_force -s --force-tokens 1,2 "$audio/short.wav"
has segment_force.err "cannot be combined"
# --logprobs outside json output would be dropped: a usage error, as --print-confidence is
run 2 logprobs_srt --logprobs 3 -o srt "$audio/short.wav"
has logprobs_srt.err "--logprobs 3: log-probabilities are written in json output (-o json)"
# a NUL byte in the text (the fixture tokenizer's byte token 0 is id 1000, '<' 1060, 'A' 1065) is
# U+FFFD in the text, as in the logprobs' "token", and does not cut what follows
run 0 nul_text -o json --logprobs 1 --force-tokens 1060,1000,1065 "$audio/short.wav"
fffd=$(printf '\xef\xbf\xbd')
has nul_text.out "\"text\":\"<${fffd}A\""
has nul_text.out "\"token\":\"${fffd}\",\"bytes\":[0]"
run 0 nul_txt --force-tokens 1065,1000,1066 "$audio/short.wav"
check "txt: a NUL byte does not cut the text" [ "$(cat "$tmp/nul_txt.out")" = "$(printf 'A\xef\xbf\xbdB')" ]
# --force-tokens @FILE that is a directory, or missing: a usage error naming the option and file
run 2 force_dir --force-tokens "@$tmp" "$audio/short.wav"
has force_dir.err "--force-tokens @$tmp: cannot read: Is a directory"
run 2 force_missing --force-tokens "@$tmp/no_ids" "$audio/short.wav"
has force_missing.err "--force-tokens @$tmp/no_ids: cannot open"
# a --latency-json path that cannot be written is found before the model loads: exit 2, named,
# nothing transcribed (it was found after the whole run, exit 1)
run 2 latency_nodir --latency-json "$tmp/no/such/l.json" "$audio/short.wav"
has latency_nodir.err "--latency-json $tmp/no/such/l.json: $tmp/no/such: No such file or directory"
check "--latency-json unwritable: nothing on standard output" [ ! -s "$tmp/latency_nodir.out" ]
run 2 latency_isdir --latency-json "$tmp" "$audio/short.wav"
has latency_isdir.err "--latency-json $tmp: is a directory"
# a path of ~1500 bytes that does not exist: the message keeps the reason after it, its middle
# elided (the reason was cut off, and the path repeated)
long_dir=$tmp; for i in 1 2 3 4 5 6 7; do long_dir=$long_dir/$(printf 'd%.0s' $(seq 200)); done
run 1 long_path "$long_dir/x.wav"
has long_path.err "[...]"
has long_path.err "/x.wav: cannot open: No such file or directory"
check "long path: one line on stderr" [ "$(wc -l <"$tmp/long_path.err")" -eq 1 ]
# --latency-json to what is not a plain file: "-" and /dev/stdout put the JSON after the
# transcript on standard output; a symbolic link's target is written and the link stays; a FIFO is
# written as it is (each was replaced by a regular file, and as root so was a device node)
json_after_transcript() { # NAME: stdout is one.out's transcript, then the run's JSON
    check "$1: the transcript, then the latency JSON" python3 -c '
import json, sys
text, rest = open(sys.argv[1]).read().split("\n", 1)
assert text + "\n" == open(sys.argv[2]).read(), text
assert json.loads(rest)["files"] == 1, rest' "$tmp/$1.out" "$tmp/one.out"
}
run 0 latency_dash --latency-json - "$audio/short.wav"
json_after_transcript latency_dash
run 0 latency_devstdout --latency-json /dev/stdout "$audio/short.wav"
json_after_transcript latency_devstdout
run 0 latency_jsonl -o json --latency-json - "$audio/short.wav" "$audio/speech.flac"
check "--latency-json - with -o json: one JSON object a line" python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
objs = [json.loads(l) for l in lines]
assert len(objs) == 3 and "text" in objs[0] and "text" in objs[1] and objs[2]["files"] == 2, lines' \
    "$tmp/latency_jsonl.out"
ln -s latency_target.json "$tmp/latency_link.json"
run 0 latency_link --latency-json "$tmp/latency_link.json" "$audio/short.wav"
check "--latency-json LINK: the link stays a link" [ -L "$tmp/latency_link.json" ]
check "--latency-json LINK: its target holds the JSON" python3 -c \
    'import json, sys; assert json.load(open(sys.argv[1]))["files"] == 1' "$tmp/latency_target.json"
mkfifo "$tmp/latency.fifo"
timeout 60 cat "$tmp/latency.fifo" >"$tmp/latency_fifo.json" &
fifo_reader=$!
run 0 latency_fifo --latency-json "$tmp/latency.fifo" "$audio/short.wav"
wait $fifo_reader
check "--latency-json FIFO: still a FIFO" [ -p "$tmp/latency.fifo" ]
check "--latency-json FIFO: its reader got the JSON" python3 -c \
    'import json, sys; assert json.load(open(sys.argv[1]))["files"] == 1' "$tmp/latency_fifo.json"
# --dump-tensors: one input's tensors, so a second input is a usage error, as is a path that
# cannot be written (found before the work, as --latency-json's)
run 2 dump_two --dump-tensors "$tmp/d.safetensors" "$audio/short.wav" "$audio/speech.flac"
has dump_two.err "--dump-tensors $tmp/d.safetensors: writes the tensors of one input, and 2 are given"
run 2 dump_nodir --dump-tensors "$tmp/no/such/d.safetensors" "$audio/short.wav"
has dump_nodir.err "--dump-tensors $tmp/no/such/d.safetensors: $tmp/no/such: No such file or directory"
# a word that is not an id in a --force-tokens @FILE: the file, its line and the word (the words
# after it are not quoted)
printf '1, 2\n3 abc 4\n' >"$tmp/ids_bad"
run 2 force_bad_word --force-tokens "@$tmp/ids_bad" "$audio/short.wav"
has force_bad_word.err "--force-tokens @$tmp/ids_bad: line 2: 'abc' is not a token id"
run 2 force_bad_inline --force-tokens "1,x7 9" "$audio/short.wav"
has force_bad_inline.err "--force-tokens: 'x7' is not a token id"
# more forced ids than the context holds after the prompt: that file fails, named, nothing
# scored (the list was cut short silently before)
python3 -c "print(','.join(['5'] * 40000))" >"$tmp/ids_40000"
run 1 force_long -o json --force-tokens "@$tmp/ids_40000" "$audio/short.wav"
has force_long.err "$audio/short.wav: 40000 forced ids do not fit: the model's context is"
check "too many forced ids: nothing on standard output" [ ! -s "$tmp/force_long.out" ]
checks=$((checks + 1))
"$exe" -m "$tmp/no_model" -d cpu "$audio/short.wav" >"$tmp/no_model.out" 2>"$tmp/no_model.err"
[ $? -eq 2 ] || fail "a missing model does not exit 2"
has no_model.err "cannot load the model from '$tmp/no_model'"
empty no_model.out
run 2 same_name -O "$tmp/outdir" "$audio/short.wav" "$tmp/x/short.wav"
has same_name.err "would both be written to $tmp/outdir/short.txt"
check "same names: nothing written" [ -z "$(ls -A "$tmp/outdir")" ]
run 2 same_name_new_dir -O "$tmp/new/deep" "$audio/short.wav" "$tmp/x/short.wav"
check "same names: the output directory is not made either" [ ! -e "$tmp/new" ]
# an input whose name is its own output name in that directory is refused, not replaced
mkdir "$tmp/memo"
cp "$audio/short.wav" "$tmp/memo/memo.txt"
run 2 output_is_input -O "$tmp/memo" "$tmp/memo/memo.txt"
has output_is_input.err "the output of '$tmp/memo/memo.txt' would replace the input '$tmp/memo/memo.txt'"
check "the input is left as it was" cmp -s "$audio/short.wav" "$tmp/memo/memo.txt"
# an input whose output name would be longer than a file name may be (255 bytes): a 255-byte
# NAME.wav gives a 256-byte NAME.json, refused before the model loads; NAME.txt fits
long=$(printf 'L%.0s' $(seq 251))
cp "$audio/short.wav" "$tmp/$long.wav"
run 2 long_output_name -o json -O "$tmp/long_out" "$tmp/$long.wav"
has long_output_name.err "the output name of '$tmp/$long.wav' is 256 bytes, more than the 255 a file name may have"
check "too long an output name: the output directory is not made" [ ! -e "$tmp/long_out" ]
run 0 long_output_name_fits -o txt -O "$tmp/long_out" "$tmp/$long.wav"
check "an output name of 255 bytes is written" [ -s "$tmp/long_out/$long.txt" ]
touch "$tmp/not_a_dir"
run 2 outdir_file -O "$tmp/not_a_dir" "$audio/short.wav"
has outdir_file.err "not a directory"
# a directory whose permission bits allow writing but whose file system refuses files (sysfs,
# as root): refused before the model loads, not file by file after it
if [ -d /sys/kernel ] && [ -w /sys/kernel ] && ! (: >/sys/kernel/.voxtral_test_probe) 2>/dev/null; then
    run 2 outdir_refused -O /sys/kernel "$audio/short.wav"
    has outdir_refused.err "--output-dir /sys/kernel: cannot write there"
    empty outdir_refused.out
else
    echo "test_runner: skipped the refused --output-dir case: /sys/kernel is not a writable-looking directory that refuses files here"
fi
# names near the 255-byte limit: NAME.txt fits, the hidden .NAME.txt.PID.tmp would not; two of
# them share their first 250 bytes (their temporary names must still differ)
mkdir "$tmp/longname"
long=$(printf 'y%.0s' {1..249})
cp "$audio/short.wav" "$tmp/longname/${long}1.wav"
cp "$audio/short.wav" "$tmp/longname/${long}2.wav"
run 0 long_name -O "$tmp/longname_out" "$tmp/longname/${long}1.wav" "$tmp/longname/${long}2.wav"
check "long names: both written" [ -s "$tmp/longname_out/${long}1.txt" -a -s "$tmp/longname_out/${long}2.txt" ]
check "long names: nothing else" [ "$(ls -A "$tmp/longname_out" | wc -l)" -eq 2 ]

# -- --help and --version --------------------------------------------------------------------
run 0 help --help
for text in "usage: " "Model:" "Input:" "Decoding:" "Segments" "Output:" "--files-from LIST" \
    "--output-dir DIR" "--segment" "--silence-threshold DB" "[default: -35]" "[default: 0.5]" \
    "--print-confidence" "--no-progress" "--latency-json FILE" "[default: txt]" \
    "Exit status: 0" "130 interrupted"; do
    has help.out "$text"
done
run 0 version --version
check "--version" grep -q "^voxtral_runner [0-9]" "$tmp/version.out"

# -- json lines, logprobs, the latency aggregate over a batch, inputs from a list file ----------
# short_cut.wav: a WAV whose data stops before its header says: the frames there are transcribed
head -c 60000 "$audio/short.wav" >"$tmp/short_cut.wav"
printf '%s\n' "$tmp/short_cut.wav" "$bad/empty.wav" "$audio/speech.ogg" >"$tmp/json_list.txt"
run 1 json -o json --logprobs 2 --latency --latency-json "$tmp/latency.json" --files-from "$tmp/json_list.txt"
check "json: two lines" [ "$(wc -l <"$tmp/json.out")" -eq 2 ]
check "json: in order" grep -q "^{\"file\":\"$audio/speech.ogg\"" <(tail -n 1 "$tmp/json.out")
has json.out "{\"file\":\"$tmp/short_cut.wav\""
has json.out '"audio_seconds":1.87'
for field in '"text":' '"tokens":[' '"language":null' '"latency_ms":{"audio":' \
    '"text_decoder_decode":' '"logprobs":[{"id":' '"bytes":[' '"top_logprobs":[{'; do
    has json.out "$field"
done
lacks json.out '"segments"'
has json.err "Run latency (ms):"
has json.err "(2 files, "
has json.err "whole run with load and output; 2 requests, 1 failed"
has json.err "real-time factor wall"
# the load breakdown and the teardown: lines added after `load` and `wall`, the old ones kept
for line in "load: device " "load: cuBLASLt " "load: model files " "load: tokenizer " "load: weights " \
    "load: reads " "load: uploads " "load: warm-up " "teardown "; do
    checks=$((checks + 1))
    grep -qE "^  $line +[0-9]+\.[0-9]{2}" "$tmp/json.err" || fail "no '$line' line: $(cat "$tmp/json.err")"
done
checks=$((checks + 1))
grep -qE '^  load +[0-9]+\.[0-9]{2}$' "$tmp/json.err" || fail "the load line changed: $(cat "$tmp/json.err")"
for field in '"files":\s*2,' '"failed":\s*1,' '"inputs":\s*3,' '"requests":\s*2,' \
    '"interrupted":\s*false' '"wall_ms":' '"rtfx":' '"rtfx_wall":' '"text_decoder_decode":' \
    '"load_breakdown_ms":\s*\{' '"model_files":' '"tokenizer":' '"warmup":' '"load_bytes":' \
    '"teardown_ms":' '"main_start_monotonic_ms":'; do
    checks=$((checks + 1))
    grep -qP -- "$field" "$tmp/latency.json" || fail "latency.json lacks $field: $(cat "$tmp/latency.json")"
done
if command -v python3 >/dev/null; then
    check "json lines parse" python3 -c '
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    d = json.loads(line)
    assert len(d["tokens"]) == len(d["logprobs"]), "one logprob per token"
json.load(open(sys.argv[2]))' "$tmp/json.out" "$tmp/latency.json"
fi

# -- --print-confidence: [[word]] off a terminal, colours on one --------------------------------
run 0 conf_all --print-confidence --confidence-threshold 1 "$audio/short.wav"
has conf_all.out "[["
lacks conf_all.out $'\033'
# threshold 0 marks nothing
run 0 conf_none --print-confidence --confidence-threshold 0 "$audio/short.wav"
check "threshold 0 marks nothing" cmp -s "$tmp/conf_none.out" "$tmp/one.out"
check "marks removed give the text" [ "$(sed -e 's/\[\[//g' -e 's/\]\]//g' "$tmp/conf_all.out")" = "$(cat "$tmp/one.out")" ]

# -- progress: on a terminal only, on stderr only (script(1) gives the command a terminal) -------
if command -v script >/dev/null && script -qec true /dev/null >/dev/null 2>&1; then
    checks=$((checks + 1))
    script -qec "$(printf '%q ' "${R[@]}" "$audio/short.wav") >$tmp/tty.out" \
        "$tmp/tty.log" >/dev/null 2>&1 || fail "run under script(1) failed: $(cat "$tmp/tty.log")"
    has tty.log "[1/1 files] 0:04 of audio"
    has tty.log "x real time"
    check "progress: the same stdout" cmp -s "$tmp/tty.out" "$tmp/one.out"
    script -qec "$(printf '%q ' "${R[@]}" --no-progress "$bad/text.wav" "$bad/empty.wav")" \
        "$tmp/tty_off.log" >/dev/null 2>&1
    lacks tty_off.log "files]"
    has tty_off.log "0 of 2 files transcribed"
    script -qec "$(printf '%q ' "${R[@]}" --print-confidence --confidence-threshold 1 "$audio/short.wav")" \
        "$tmp/tty_colour.log" >/dev/null 2>&1
    has tty_colour.log $'\033[31m'
    lacks tty_colour.log "[["
else
    echo "(script(1) unusable: terminal checks skipped)"
fi
# off a terminal: no progress, no escape sequences
lacks batch.err "files]"
lacks batch.err $'\r'

echo "test_runner: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
