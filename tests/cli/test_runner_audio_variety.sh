#!/usr/bin/env bash
# voxtral_runner over a spread of audio inputs, valid and not (tiny fixture model, CPU backend);
# the inputs are made here by python3's standard library (sox, flac and oggenc add formats where
# they are installed):
#  - valid: WAV PCM 8 (unsigned) / 16 / 24 / 32-bit, float32 / float64, WAVE_FORMAT_EXTENSIBLE
#    with 6 channels, rates 8000 to 192000 Hz, 1, 2 and 6 channels, silence, a full-scale square
#    wave with float samples above 1.0, one frame at 16 kHz and a frame or a few at 44.1, 48,
#    96 and 192 kHz (those resampled to nothing and were refused as "too short"): each transcribes
#    alone (exit 0, one json line naming it, a positive length);
#  - malformed: empty, header only, cut in the header, text, random bytes, a directory, a
#    missing path, NaN samples, a 0 Hz header (was "Internal error : SF_INFO struct incomplete"):
#    each fails alone with exit 1, a message that names the file and the problem, nothing on
#    standard output;
#  - all of them in one batch, bad ones between good ones (json, --batch-size 5), and four good
#    ones with every bad one (json at --batch-size 1, txt, --output-dir): exit 1, the good ones'
#    output equal to their runs alone and in input order, every bad one reported, the summary's
#    counts; --output-dir holds a file for each good one only;
#  - a library that prints to standard output (libsndfile on a damaged MIDI sample dump,
#    bad_audio/damaged.sds) does not mix its lines into the json there: they go to stderr.
# Usage: test_runner_audio_variety.sh BUILD_DIR FIXTURES_DIR
set -u
build=$1
fixtures=$2
source "$(dirname "$0")/runner_common.sh"
if ! command -v python3 >/dev/null; then
    echo "SKIPPED: the test's audio is made by python3"
    exit 77
fi
tmp=$(mktemp -d /tmp/vox_cli_variety_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export_tiny_model "$tmp/model"
R=("$exe" -m "$tmp/model" -d cpu -n 6 --no-progress)
mkdir "$tmp/in"
# reported ERR PATH PROBLEM: ERR has a line "voxtral_runner: PATH: ..." that gives PROBLEM
reported() {
    checks=$((checks + 1))
    grep -F -- "voxtral_runner: $2: " "$1" | grep -qF -- "$3" ||
        fail "$1 does not report '$2: ... $3': $(head -c 1500 "$1")"
}

python3 - "$tmp/in" <<'EOF' || { echo "FAILED: cannot make the test audio"; exit 1; }
import math, os, random, struct, sys
out = sys.argv[1]
rng = random.Random(7)

def tone(frames, rate, ch, amp=0.3):
    return [[amp * math.sin(2 * math.pi * 220 * (1 + c) * i / rate) for c in range(ch)]
            for i in range(frames)]

def wav(name, frames, rate, bits=16, fmt='pcm', ext=False, data_bytes=None):
    """frames: per frame a list of per-channel floats in [-1, 1] (more for floats)."""
    ch = len(frames[0]) if frames else 1
    data = bytearray()
    for fr in frames:
        for v in fr:
            if fmt == 'float':
                data += struct.pack('<f' if bits == 32 else '<d', v)
            elif bits == 8:
                data.append(max(0, min(255, 128 + round(v * 127))))
            else:
                q = max(-(1 << bits - 1), min((1 << bits - 1) - 1, round(v * (1 << bits - 1))))
                data += q.to_bytes(bits // 8, 'little', signed=True)
    tag = 3 if fmt == 'float' else 1
    block = ch * bits // 8
    fmtc = struct.pack('<HHIIHH', 0xFFFE if ext else tag, ch, rate, rate * block, block, bits)
    if ext:  # cbSize, valid bits, channel mask, the sub-format GUID
        fmtc += struct.pack('<HHI', 22, bits, (1 << ch) - 1) + struct.pack('<H', tag) + \
            b'\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71'
    n = len(data) if data_bytes is None else data_bytes
    body = b'WAVE' + b'fmt ' + struct.pack('<I', len(fmtc)) + fmtc + b'data' + \
        struct.pack('<I', n) + bytes(data)
    with open(os.path.join(out, name), 'wb') as f:
        f.write(b'RIFF' + struct.pack('<I', len(body)) + body)

good = []
def g(name, *a, **k):
    wav(name, *a, **k)
    good.append(name)

g('pcm_u8.wav', tone(3200, 16000, 1), 16000, bits=8)
g('pcm_16.wav', tone(3200, 16000, 1), 16000)
g('pcm_24.wav', tone(3200, 16000, 1), 16000, bits=24)
g('pcm_32.wav', tone(3200, 16000, 1), 16000, bits=32)
g('float_32.wav', tone(3200, 16000, 1), 16000, bits=32, fmt='float')
g('float_64.wav', tone(3200, 16000, 1), 16000, bits=64, fmt='float')
g('extensible_6ch.wav', tone(9600, 48000, 6), 48000, bits=24, ext=True)
for rate in (8000, 11025, 22050, 44100, 48000, 96000, 192000):
    g('rate_%d.wav' % rate, tone(rate // 5, rate, 1), rate)
g('stereo_44k.wav', tone(8820, 44100, 2), 44100)
g('silence.wav', [[0.0]] * 3200, 16000)
g('square_over_1.wav', [[1.05 if (i // 40) % 2 else -1.05] for i in range(3200)], 16000,
  bits=32, fmt='float')
g('one_frame_16k.wav', [[0.5]], 16000)
for rate, n in ((44100, 1), (48000, 1), (96000, 2), (192000, 4)):
    g('frames_%d_at_%d.wav' % (n, rate), [[0.5]] * n, rate)

bad = {
    'empty.wav': b'',
    'text.wav': b'this is not audio\n' * 20,
    'random.wav': bytes(rng.randrange(256) for _ in range(4000)),
}
for name, data in bad.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)
wav('header_only.wav', [], 16000)
with open(os.path.join(out, 'pcm_16.wav'), 'rb') as f:
    whole = f.read()
with open(os.path.join(out, 'cut_in_header.wav'), 'wb') as f:
    f.write(whole[:30])
wav('nan.wav', [[0.1]] * 100 + [[float('nan')]] + [[0.1]] * 100, 16000, bits=32, fmt='float')
wav('zero_rate.wav', tone(400, 16000, 1), 0)
with open(os.path.join(out, 'good.list'), 'w') as f:
    f.write('\n'.join(good) + '\n')
EOF

# Formats from tools, where installed (CI's runner may have none of them)
src=$tmp/in/stereo_44k.wav
if command -v sox >/dev/null; then
    sox "$src" "$tmp/in/sox.aiff" && echo sox.aiff >>"$tmp/in/good.list"
    sox "$src" -e u-law "$tmp/in/sox_ulaw.wav" && echo sox_ulaw.wav >>"$tmp/in/good.list"
    sox "$src" -e ima-adpcm "$tmp/in/sox_ima.wav" && echo sox_ima.wav >>"$tmp/in/good.list"
fi
if command -v flac >/dev/null; then
    flac -s -o "$tmp/in/flac.flac" "$src" && echo flac.flac >>"$tmp/in/good.list"
fi
if command -v oggenc >/dev/null; then
    oggenc -Q -o "$tmp/in/vorbis.ogg" "$src" && echo vorbis.ogg >>"$tmp/in/good.list"
fi
mapfile -t good <"$tmp/in/good.list"
mkdir "$tmp/in/a_directory"

# name: the problem its message must give
declare -A bad=(
    [empty.wav]="empty file (0 bytes)"
    [text.wav]="not a supported audio file"
    [random.wav]="not a supported audio file"
    [header_only.wav]="no audio could be decoded (0 frames)"
    [cut_in_header.wav]="not a supported audio file"
    [nan.wav]="sample at frame 100 is NaN"
    [zero_rate.wav]="invalid header: a sample rate, channel count or length out of range"
    [a_directory]="is a directory"
    [missing.wav]="cannot open: No such file or directory"
)

# -- each alone --------------------------------------------------------------------------------
for name in "${good[@]}"; do
    run 0 "alone_$name" -o json "$tmp/in/$name"
    checks=$((checks + 1))
    python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, "%d lines" % len(lines)
d = json.loads(lines[0])
assert d["file"] == sys.argv[2], d["file"]
assert d["audio_seconds"] > 0, d["audio_seconds"]
assert d["warnings"] == [], d["warnings"]
' "$tmp/alone_$name.out" "$tmp/in/$name" || fail "$name alone: $(head -c 400 "$tmp/alone_$name.out")"
done
for name in "${!bad[@]}"; do
    run 1 "alone_$name" -o json "$tmp/in/$name"
    reported "$tmp/alone_$name.err" "$tmp/in/$name" "${bad[$name]}"
    check "$name alone: nothing on standard output" [ ! -s "$tmp/alone_$name.out" ]
    checks=$((checks + 1))
    ! grep -q "Internal error" "$tmp/alone_$name.err" || fail "$name: $(cat "$tmp/alone_$name.err")"
done

# -- together: bad inputs among the good ones, in an order of their own -----------------------
# Every good input costs an encoder pass a run (a 30 s chunk, ~10x slower under the sanitizers),
# so the whole list is batched once (json, --batch-size 5) and a few of the good inputs with every
# bad one for the rest (json at --batch-size 1, txt, --output-dir).
mapfile -t bad_names < <(printf '%s\n' "${!bad[@]}" | sort)
# batch_of NAME...: $inputs, those good inputs with every bad one between and after them, and
# $expect_json, their json lines alone (no latency)
batch_of() {
    local i=0 j name
    inputs=()
    expect_json=$tmp/expect_$#.json
    : >"$expect_json"
    for name in "$@"; do
        inputs+=("$tmp/in/$name")
        sed -E 's/"latency_ms":\{[^}]*\}//' "$tmp/alone_$name.out" >>"$expect_json"
        if ((i % 3 == 1 && i / 3 < ${#bad_names[@]})); then inputs+=("$tmp/in/${bad_names[i / 3]}"); fi
        i=$((i + 1))
    done
    for ((j = (i + 1) / 3; j < ${#bad_names[@]}; j++)); do inputs+=("$tmp/in/${bad_names[j]}"); done
    check "every bad input is in the batch" [ $((${#inputs[@]} - $#)) -eq ${#bad_names[@]} ]
}
# batch_json BS NAME...: the batch of those good inputs at --batch-size BS equals them alone
batch_json() {
    local bs=$1 name
    shift
    batch_of "$@"
    run 1 "batch_json_$bs" -o json --batch-size "$bs" "${inputs[@]}"
    sed -E 's/"latency_ms":\{[^}]*\}//' "$tmp/batch_json_$bs.out" >"$tmp/batch_json_$bs.cmp"
    checks=$((checks + 1))
    cmp -s "$expect_json" "$tmp/batch_json_$bs.cmp" ||
        fail "batch of $bs (json) differs from the files alone: $(diff "$expect_json" "$tmp/batch_json_$bs.cmp" | head -c 1500)"
    has "$tmp/batch_json_$bs.err" "$# of ${#inputs[@]} files transcribed, $((${#inputs[@]} - $#)) failed"
    for name in "${bad_names[@]}"; do
        reported "$tmp/batch_json_$bs.err" "$tmp/in/$name" "${bad[$name]}"
    done
}
few=("${good[@]:0:4}")
batch_json 5 "${good[@]}"
batch_json 1 "${few[@]}"
# txt: a header for each good input, in input order, then the transcript of the file alone
: >"$tmp/expect.txt"
for name in "${few[@]}"; do
    run 0 "alone_txt_$name" "$tmp/in/$name"
    { echo "==> $tmp/in/$name <=="; cat "$tmp/alone_txt_$name.out"; } >>"$tmp/expect.txt"
done
run 1 batch_txt --batch-size 5 "${inputs[@]}"
same_txt=$(cmp -s "$tmp/expect.txt" "$tmp/batch_txt.out" && echo yes)
check "batch (txt) equals the files alone, in input order: $(diff "$tmp/expect.txt" "$tmp/batch_txt.out" | head -c 1500)" [ "$same_txt" = yes ]

# --output-dir: a file for each good input, none for the bad ones
run 1 batch_dir -o json -O "$tmp/out" --batch-size 5 "${inputs[@]}"
check "--output-dir holds one file per good input" [ "$(ls -A "$tmp/out" | wc -l)" -eq "${#few[@]}" ]
for name in "${few[@]}"; do
    check "--output-dir: ${name%.*}.json" [ -s "$tmp/out/${name%.*}.json" ]
done

# -- what libraries print stays off standard output --------------------------------------------
run 0 library_chatter -o json "$fixtures/bad_audio/damaged.sds" "$tmp/in/pcm_16.wav"
check "library chatter: two json lines on standard output, nothing else: $(head -c 600 "$tmp/library_chatter.out")" \
    [ "$(grep -c '^{"file":' "$tmp/library_chatter.out")" -eq 2 -a "$(wc -l <"$tmp/library_chatter.out")" -eq 2 ]
has "$tmp/library_chatter.err" "Error A : 00"

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
