#!/usr/bin/env bash
# voxtral_runner's segments end to end on the tiny fixture model (CPU backend): segment times
# against the known pauses of long.wav (pauses.json) within 0.2 s, srt and vtt validated
# structurally (numbering, time format, monotonic non-overlapping cues, blank-line separation),
# --min-silence, a file of silence, and files longer than one request (30 min).
# Clips of long.wav that end inside a pause keep each request count small (this also runs under
# ASan, where one request costs seconds).
# Usage: test_runner_segments.sh BUILD_DIR FIXTURES_DIR   (KEEP=1 keeps its temporary directory)
set -u
build=$1
fixtures=$2
long=$fixtures/tiny/audio/long.wav
pauses=$fixtures/tiny/audio/pauses.json
source "$(dirname "$0")/runner_common.sh"
if [ ! -f "$long" ] || [ ! -f "$pauses" ]; then
    echo "SKIPPED: no long.wav/pauses.json in $fixtures/tiny/audio"
    exit 77
fi
tmp=$(mktemp -d /tmp/vox_cli_segments_XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
export_tiny_model "$tmp/model"
R=("$exe" -m "$tmp/model" -d cpu -n 8)

# ---- WAV files made here: a canonical 44-byte header, 16 kHz mono PCM16 --------------------------
le() { # le VALUE BYTES: little-endian bytes
    local v=$1 i
    for ((i = 0; i < $2; i++)); do
        # shellcheck disable=SC2059  # the format is the escape of one byte
        printf "\\x$(printf %02x $(((v >> (8 * i)) & 255)))"
    done
}
wav_header() { # wav_header DATA_BYTES
    printf 'RIFF'; le $((36 + $1)) 4; printf 'WAVEfmt '; le 16 4; le 1 2; le 1 2
    le 16000 4; le 32000 4; le 2 2; le 16 2; printf 'data'; le "$1" 4
}
clip() { # clip SECONDS OUT: the first SECONDS (whole) of long.wav
    local n=$(($1 * 32000))
    { wav_header "$n"; tail -c +45 "$long" | head -c "$n"; } >"$2"
}
clip 20 "$tmp/clip20.wav" # sentences 1-4, ends inside the 0.8 s pause at 19.56 s
clip 9 "$tmp/clip9.wav"   # sentences 1-2, ends inside the 1.2 s pause at 8.79 s

# speech spans "start end" of pauses.json (seconds), one a line
awk '/"speech"/ { s = 1 } s && /"start":/ { gsub(/[",]/, ""); a = $2 }
     s && /"end":/ { gsub(/[",]/, ""); print a, $2 }' "$pauses" >"$tmp/speech.txt"
checks=$((checks + 1))
[ "$(wc -l <"$tmp/speech.txt")" -eq 9 ] || fail "pauses.json: $(wc -l <"$tmp/speech.txt") speech spans, want 9"

# match GOT WANT NAME: every "start end" line of GOT matches a line of WANT within 0.2 s, in
# order, each WANT line at most once; with "exact", GOT has as many lines as WANT
match() {
    checks=$((checks + 1))
    local msg
    msg=$(awk -v exact="${4:-}" 'NR == FNR { ws[n] = $1; we[n] = $2; n++; next }
        { while (k < n && (($1 - ws[k]) ^ 2 > 0.04 || ($2 - we[k]) ^ 2 > 0.04)) k++
          if (k == n) { printf "segment %s..%s matches no pause-bounded speech span\n", $1, $2; bad = 1; exit }
          got++; k++ }
        END { if (!bad && exact && got != n) printf "%d segments, want %d\n", got, n
              if (!bad && got == 0) print "no segments" }' "$2" "$1")
    [ -z "$msg" ] || fail "$3: $msg: got $(tr '\n' ' ' <"$1")"
}

# ---- json segments against the known pauses --------------------------------------------------
head -n 4 "$tmp/speech.txt" >"$tmp/want20.txt"
run 0 json -o json -s "$tmp/clip20.wav"
grep -o '"start":[0-9.]*,"end":[0-9.]*' "$tmp/json.out" | awk -F'[:,]' '{ print $2, $4 }' >"$tmp/json_times.txt"
match "$tmp/json_times.txt" "$tmp/want20.txt" "json segments of clip20.wav" exact
checks=$((checks + 1))
grep -q '"segments":\[{"start":' "$tmp/json.out" && grep -q '"tokens":\[' "$tmp/json.out" ||
    fail "json: no segments with tokens: $(head -c 600 "$tmp/json.out")"

# --min-silence 1: the 0.8 s pause of clip9.wav stays inside one segment
echo "$(sed -n 1p "$tmp/speech.txt" | cut -d' ' -f1) $(sed -n 2p "$tmp/speech.txt" | cut -d' ' -f2)" >"$tmp/want_min.txt"
run 0 min_silence -o json -s --min-silence 1 "$tmp/clip9.wav"
grep -o '"start":[0-9.]*,"end":[0-9.]*' "$tmp/min_silence.out" | awk -F'[:,]' '{ print $2, $4 }' >"$tmp/min_times.txt"
match "$tmp/min_times.txt" "$tmp/want_min.txt" "--min-silence 1" exact

# ---- srt and vtt: structure, and times -------------------------------------------------------
# check_cues FILE srt|vtt: validates the layout and prints the cue times "start end" (seconds)
check_cues() {
    awk -v fmt="$2" '
    function secs(t,   p) { split(t, p, /[:,.]/); return p[1] * 3600 + p[2] * 60 + p[3] + p[4] / 1000 }
    function die(m) { printf "line %d: %s: [%s]\n", NR, m, $0 > "/dev/stderr"; bad = 1; exit 1 }
    BEGIN { sep = fmt == "srt" ? "," : "."; state = fmt == "srt" ? "index" : "magic"; prev = 0 }
    state == "magic" { if ($0 != "WEBVTT") die("no WEBVTT"); state = "blank"; next }
    state == "blank" { if ($0 != "") die("no blank line"); state = fmt == "srt" ? "index" : "time"; next }
    state == "index" { if ($0 != ++n) die("cue number " n " expected"); state = "time"; next }
    state == "time" {
        re = "^[0-9][0-9]+:[0-5][0-9]:[0-5][0-9]\\" sep "[0-9][0-9][0-9] --> [0-9][0-9]+:[0-5][0-9]:[0-5][0-9]\\" sep "[0-9][0-9][0-9]$"
        if ($0 !~ re) die("bad time line")
        a = secs($1); b = secs($3)
        if (!(a < b)) die("start not before end")
        if (a < prev) die("overlaps the previous cue")
        prev = b; print a, b; state = "text"; next }
    state == "text" { if ($0 == "") die("empty cue text"); state = "more"; next }
    state == "more" { if ($0 == "") state = fmt == "srt" ? "index" : "time"; else die("two text lines"); next }
    END { if (!bad && state != (fmt == "srt" ? "index" : "time")) { print "unfinished cue" > "/dev/stderr"; exit 1 } }
    ' "$1"
}
head -n 2 "$tmp/speech.txt" >"$tmp/want9.txt"
for fmt in srt vtt; do
    run 0 "$fmt" -o "$fmt" "$tmp/clip9.wav"
    checks=$((checks + 1))
    check_cues "$tmp/$fmt.out" "$fmt" >"$tmp/${fmt}_times.txt" 2>"$tmp/${fmt}_check.err" ||
        fail "$fmt layout: $(cat "$tmp/${fmt}_check.err"): $(head -c 1000 "$tmp/$fmt.out")"
    match "$tmp/${fmt}_times.txt" "$tmp/want9.txt" "$fmt cue times"
done
checks=$((checks + 1))
[ "$(cut -d' ' -f1 "$tmp/srt_times.txt")" = "$(cut -d' ' -f1 "$tmp/vtt_times.txt")" ] ||
    fail "srt and vtt times differ"

# ---- a file of silence: no cues, valid documents, exit 0 ---------------------------------------
{ wav_header 96000; head -c 96000 /dev/zero; } >"$tmp/silence.wav"
run 0 silence_srt -o srt "$tmp/silence.wav"
checks=$((checks + 1))
[ ! -s "$tmp/silence_srt.out" ] || fail "srt of silence: $(cat "$tmp/silence_srt.out")"
run 0 silence_vtt -o vtt "$tmp/silence.wav"
checks=$((checks + 1))
[ "$(cat "$tmp/silence_vtt.out")" = "WEBVTT" ] || fail "vtt of silence: $(cat "$tmp/silence_vtt.out")"
run 0 silence_json -o json -s "$tmp/silence.wav"
checks=$((checks + 1))
grep -q '"text":"",.*"segments":\[\]' "$tmp/silence_json.out" || fail "json of silence: $(cat "$tmp/silence_json.out")"

# ---- longer than one request (30 min): refused whole, with a hint; accepted in segments ------
n=$((31 * 60 * 32000))
wav_header "$n" >"$tmp/long31.wav"
truncate -s $((44 + n)) "$tmp/long31.wav" # 31 minutes of digital silence, sparse
run 1 too_long "$tmp/long31.wav"
checks=$((checks + 1))
grep -q "long31.wav: audio is longer than 30 min.*--segment" "$tmp/too_long.err" ||
    fail "31 min whole: $(cat "$tmp/too_long.err")"
run 0 long_segmented -o json -s "$tmp/long31.wav"
checks=$((checks + 1))
grep -q '"audio_seconds":1860,.*"segments":\[\]' "$tmp/long_segmented.out" ||
    fail "31 min in segments: $(head -c 600 "$tmp/long_segmented.out")"

echo "test_runner_segments: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
