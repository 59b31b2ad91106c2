#!/usr/bin/env bash
# voxtral_runner reading audio from standard input: the input "-" (a pipe from ffmpeg, curl, ...),
# tiny fixture model, CPU backend:
#  - a WAV and a FLAC piped in give the transcript of the same file named on the command line,
#    byte for byte, also as json (its "file" is "-") and among other files (input order kept);
#  - --output-dir writes it as stdin.txt; --segment cuts it as it cuts the file;
#  - a truncated WAV piped in is decoded with a warning naming "-"; a WAV streamed by ffmpeg or
#    sox (placeholder sizes in its header) is not taken for a truncated one;
#  - errors: garbage or nothing on standard input fail that input (exit 1, named "-", nothing on
#    standard output); a terminal is refused; "-" twice, or beside --files-from -, is a usage
#    error (exit 2) before the model loads; a file named "-" is still reachable as ./-;
#  - SIGINT while the pipe sends nothing ends the run at once (exit 130), not at the pipe's end;
#  - a FIFO path decodes as its file does; SIGTERM while one waits for its writer exits 143.
# Usage: test_runner_stdin.sh BUILD_DIR FIXTURES_DIR
set -u
build=$1
fixtures=$2
audio=$fixtures/tiny/audio
source "$(dirname "$0")/runner_common.sh"
tmp=$(mktemp -d /tmp/vox_cli_stdin_XXXXXX)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
export_tiny_model "$tmp/model"
R=("$(realpath "$exe")" -m "$tmp/model" -d cpu -n 12 --no-progress) # absolute: one check runs from $tmp
same() { # DESCRIPTION FILE_A FILE_B
    checks=$((checks + 1))
    cmp -s "$2" "$3" || fail "$1: $(head -c 300 "$2") | against | $(head -c 300 "$3")"
}

for f in short.wav speech.flac; do
    run 0 "file_$f" "$audio/$f"
    run 0 "pipe_$f" - <"$audio/$f"
    same "$f piped in" "$tmp/pipe_$f.out" "$tmp/file_$f.out"
    check "$f: a transcript" [ -s "$tmp/pipe_$f.out" ]
done

# json: the same tokens, named "-"
run 0 json_file -o json "$audio/short.wav"
run 0 json_pipe -o json - <"$audio/short.wav"
has "$tmp/json_pipe.out" '{"file":"-",'
tokens() { grep -o '"tokens":\[[0-9,]*\]' "$1"; }
check "json: the same tokens" [ "$(tokens "$tmp/json_pipe.out")" = "$(tokens "$tmp/json_file.out")" ]

# among files, in input order
run 0 mixed "$audio/long.wav" - "$audio/speech.flac" <"$audio/short.wav"
expected=$(printf '==> %s <==\n' "$audio/long.wav"; "${R[@]}" "$audio/long.wav"
           printf '==> - <==\n'; cat "$tmp/file_short.wav.out"
           printf '==> %s <==\n' "$audio/speech.flac"; cat "$tmp/file_speech.flac.out")
check "mixed: input order, each text as alone" [ "$(cat "$tmp/mixed.out")" = "$expected" ]

# --output-dir: stdin.txt
run 0 outdir -O "$tmp/out" "$audio/speech.flac" - <"$audio/short.wav"
same "-O: stdin.txt" "$tmp/out/stdin.txt" "$tmp/file_short.wav.out"
check "-O: the file beside it" [ -s "$tmp/out/speech.txt" ]

# --segment: the same cues as the file
run 0 seg_file -o srt "$audio/long.wav"
run 0 seg_pipe -o srt - <"$audio/long.wav"
same "segments of a pipe" "$tmp/seg_pipe.out" "$tmp/seg_file.out"

# truncated: decoded, with a warning naming "-"
head -c 30000 "$audio/long.wav" >"$tmp/cut.wav"
run 0 cut - <"$tmp/cut.wav"
has "$tmp/cut.err" "-: warning: truncated"

# a WAV streamed by ffmpeg (-f wav -) or sox to a pipe: its RIFF and data sizes are placeholders
# (ffmpeg 0xFFFFFFFF, sox 0x7FFFF000) that announce no length: no truncation warning, same tokens
for size in ffmpeg:'\377\377\377\377' sox:'\000\360\377\177'; do
    name=streamed_${size%%:*}
    { head -c 4 "$audio/short.wav"; printf '\377\377\377\377'; head -c 40 "$audio/short.wav" | tail -c 32
      printf "${size#*:}"; tail -c +45 "$audio/short.wav"; } >"$tmp/$name.wav"
    run 0 "$name" -o json - <"$tmp/$name.wav"
    has "$tmp/$name.out" '"warnings":[]'
    checks=$((checks + 1))
    [ ! -s "$tmp/$name.err" ] || fail "$name: $(cat "$tmp/$name.err")"
    check "$name: the same tokens" [ "$(tokens "$tmp/$name.out")" = "$(tokens "$tmp/json_file.out")" ]
done

# bad input on standard input fails that input alone
printf 'not audio at all' >"$tmp/garbage"
run 1 garbage "$audio/short.wav" - <"$tmp/garbage"
has "$tmp/garbage.err" "voxtral_runner: -: not a supported audio file"
has "$tmp/garbage.err" "1 of 2 files transcribed, 1 failed"
run 1 empty - </dev/null
has "$tmp/empty.err" "voxtral_runner: -: empty file (0 bytes)"
check "empty: nothing on stdout" [ ! -s "$tmp/empty.out" ]

# standard input read once only: usage errors
run 2 twice - - <"$audio/short.wav"
has "$tmp/twice.err" "the input '-' (audio on standard input) is given more than once"
printf '%s\n' "$audio/short.wav" >"$tmp/list"
run 2 list_and_pipe --files-from - - <"$tmp/list"
has "$tmp/list_and_pipe.err" "--files-from - and the input '-' both read standard input"
check "twice: nothing on stdout" [ ! -s "$tmp/twice.out" ]
check "list and pipe: nothing on stdout" [ ! -s "$tmp/list_and_pipe.out" ]

# a terminal on standard input is refused at once (script(1) gives the runner one)
if command -v script >/dev/null; then
    checks=$((checks + 1))
    script -qec "$(printf '%q ' "${R[@]}") -" /dev/null >"$tmp/tty.out" 2>&1 </dev/null
    rc=$?
    [ "$rc" -eq 1 ] || fail "terminal: exit $rc, want 1: $(cat "$tmp/tty.out")"
    has "$tmp/tty.out" "voxtral_runner: -: standard input is a terminal, not audio"
else
    echo "no script(1): the terminal case is not checked"
fi

# SIGINT while the pipe has sent nothing (its writer still open): exit 130 at once, input abandoned
mkfifo "$tmp/fifo"
"${R[@]}" - "$audio/short.wav" <"$tmp/fifo" >"$tmp/int.out" 2>"$tmp/int.err" &
pid=$!
exec 3>"$tmp/fifo" # the writer: the runner's standard input opens, and never ends while fd 3 is open
checks=$((checks + 1))
# once it waits on the pipe (past the load: its signal handler is in place)
if ! wait_until "$pid" grep -q poll "/proc/$pid/wchan" 2>/dev/null; then
    sleep 5 # no wchan here: long past the tiny model's load
fi
kill -INT "$pid"
wait_exit "$pid" 20
rc=$?
pid=
exec 3>&-
[ "$rc" -eq 130 ] || fail "SIGINT while reading: exit $rc, want 130: $(cat "$tmp/int.err")"
has "$tmp/int.err" "0 of 2 files transcribed, 0 failed, 2 not done (interrupted)"
check "SIGINT: nothing on stdout" [ ! -s "$tmp/int.out" ]

# a FIFO given as a path (a named pipe, a shell's <(cmd)) decodes as the file does, FLAC too
# (libsndfile cannot seek a pipe: "decoder lost sync" before); one whose writer never comes is a
# wait that one SIGTERM ends (it hung in open, past SIGTERM), the files before it written
checks=$((checks + 1))
"${R[@]}" <(cat "$audio/speech.flac") >"$tmp/procsub.out" 2>"$tmp/procsub.err"
cmp -s "$tmp/procsub.out" "$tmp/file_speech.flac.out" || fail "<(cat speech.flac): $(cat "$tmp/procsub.err")"
mkfifo "$tmp/nowriter.wav"
"${R[@]}" "$audio/short.wav" "$tmp/nowriter.wav" >"$tmp/fifo_term.out" 2>"$tmp/fifo_term.err" </dev/null &
pid=$!
checks=$((checks + 1))
wait_until "$pid" test -s "$tmp/fifo_term.out" || fail "short.wav before the FIFO: not written"
kill -TERM "$pid"
wait_exit "$pid" 20
rc=$?
pid=
[ "$rc" -eq 143 ] || fail "SIGTERM while a FIFO waits for its writer: exit $rc, want 143: $(cat "$tmp/fifo_term.err")"
check "the file before the FIFO: its transcript" cmp -s <(tail -n +2 "$tmp/fifo_term.out") "$tmp/file_short.wav.out"
has "$tmp/fifo_term.err" "1 of 2 files transcribed"

# a file named "-" is ./-
cp "$audio/short.wav" "$tmp/-"
(cd "$tmp" && "${R[@]}" ./- >"$tmp/dash.out" 2>"$tmp/dash.err" </dev/null)
checks=$((checks + 1))
cmp -s "$tmp/dash.out" "$tmp/file_short.wav.out" || fail "./-: $(cat "$tmp/dash.err")"

echo "test_runner_stdin: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
