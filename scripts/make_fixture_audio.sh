#!/usr/bin/env bash
# Generates the deterministic speech fixtures in tests/fixtures/tiny/audio/.
#
# Speech comes from espeak-ng (voice en-us, 150 words/min, pitch 50), converted with sox.
# sox runs with -D (no dither) and -R (repeatable), so the same tool versions give the
# same bytes. The files are committed; re-running is only needed to change them.
#
#   short.wav       ~4 s, 16 kHz mono PCM16
#   long.wav        ~45 s (two 30 s chunks), 16 kHz mono PCM16: trimmed sentences separated
#                   by digital-silence pauses of known length; pauses.json has their times
#   stereo44k.wav   ~6 s, 44.1 kHz stereo PCM16, left and right say different sentences
#                   (right delayed by 0.5 s)
#   speech.flac     ~5 s, 22.05 kHz mono FLAC
#   speech.ogg      ~2.5 s Ogg Vorbis, 16 kHz mono
#   speech.opus     ~2.5 s Ogg Opus (from 16 kHz mono input)
#   speech.mp3      ~2.5 s MP3, 24 kHz mono
#
# Needs: espeak-ng, sox, flac, oggenc (vorbis-tools), opusenc (opus-tools), lame.
# Usage: scripts/make_fixture_audio.sh [output-dir]   (default tests/fixtures/tiny/audio)
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$here/tests/fixtures/tiny/audio}"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

for tool in espeak-ng sox oggenc opusenc lame; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool" >&2; exit 1; }
done

SOX="sox -D -R -V1"
VOICE=en-us
SPEED=150
PITCH=50

# speak TEXT OUT.wav: espeak-ng at its native 22050 Hz, 16-bit mono.
speak() {
    espeak-ng -v "$VOICE" -s "$SPEED" -p "$PITCH" -w "$2" "$1"
}

# to16k_trimmed IN OUT: resample to 16 kHz mono PCM16 and cut the leading and trailing
# near-silence espeak-ng leaves around an utterance, so inserted pauses are the only
# long silences.
to16k_trimmed() {
    $SOX "$1" -r 16000 -c 1 -b 16 "$2" \
        silence 1 0.005 0.1% reverse silence 1 0.005 0.1% reverse
}

samples() { soxi -s "$1"; }

# silence N OUT: N samples of digital silence at 16 kHz mono PCM16.
silence() {
    $SOX -r 16000 -c 1 -n -b 16 "$2" trim 0 "${1}s"
}

# ---- short.wav ----------------------------------------------------------------------------
speak "The quick brown fox jumps over the lazy dog near the river bank." "$tmp/short_raw.wav"
$SOX "$tmp/short_raw.wav" -r 16000 -c 1 -b 16 "$out/short.wav"

# ---- long.wav + pauses.json ---------------------------------------------------------------
sentences=(
    "Speech recognition turns spoken words into written text."
    "This recording is made of short sentences with pauses between them."
    "Each pause has a known length, so a segmenter can be tested against it."
    "The weather today is sunny with a light breeze from the west."
    "Seven hundred and twenty five people attended the concert on Friday."
    "Please remember to close the windows before you leave the office."
    "A long pause follows this sentence, and then the recording continues."
    "Numbers like three point one four are read aloud by the speaker."
    "The last sentence ends the test recording. Thank you for listening."
)
# Seconds of silence: before the first sentence, between sentences, after the last one.
lead=0.3
gaps=(0.8 1.2 2.0 0.8 1.5 1.2 2.0 0.8)
tail=0.6

sec_to_samples() { python3 -c "print(round($1 * 16000))"; }

parts=()
json_pauses=""
json_speech=""
pos=0
n=$(sec_to_samples "$lead")
silence "$n" "$tmp/sil_lead.wav"; parts+=("$tmp/sil_lead.wav")
json_pauses+="{\"start_sample\": $pos, \"end_sample\": $((pos + n)), \"kind\": \"leading\"}"
pos=$((pos + n))
for i in "${!sentences[@]}"; do
    speak "${sentences[$i]}" "$tmp/s$i.raw.wav"
    to16k_trimmed "$tmp/s$i.raw.wav" "$tmp/s$i.wav"
    parts+=("$tmp/s$i.wav")
    m=$(samples "$tmp/s$i.wav")
    [ -n "$json_speech" ] && json_speech+=", "
    json_speech+="{\"start_sample\": $pos, \"end_sample\": $((pos + m)), \"text\": \"${sentences[$i]}\"}"
    pos=$((pos + m))
    if [ "$i" -lt "${#gaps[@]}" ]; then
        n=$(sec_to_samples "${gaps[$i]}")
        kind="gap"
    else
        n=$(sec_to_samples "$tail")
        kind="trailing"
    fi
    silence "$n" "$tmp/sil$i.wav"; parts+=("$tmp/sil$i.wav")
    json_pauses+=", {\"start_sample\": $pos, \"end_sample\": $((pos + n)), \"kind\": \"$kind\"}"
    pos=$((pos + n))
done
$SOX "${parts[@]}" "$out/long.wav"
total=$(samples "$out/long.wav")
[ "$total" -eq "$pos" ] || { echo "long.wav: expected $pos samples, got $total" >&2; exit 1; }

python3 - "$out/pauses.json" "$total" <<PY
import json, sys
path, total = sys.argv[1], int(sys.argv[2])
sr = 16000
pauses = [$json_pauses]
speech = [$json_speech]
def secs(d):
    d["start"] = d["start_sample"] / sr
    d["end"] = d["end_sample"] / sr
    d["length"] = (d["end_sample"] - d["start_sample"]) / sr
    return d
doc = {
    "file": "long.wav",
    "sample_rate": sr,
    "n_samples": total,
    "duration": total / sr,
    "note": "pauses are inserted digital silence (all-zero samples); speech segments are "
            "espeak-ng sentences with their own leading/trailing silence trimmed, so they "
            "start and end at the first/last sample above 0.1% of full scale. Times in seconds, "
            "end exclusive (end_sample is one past the last sample).",
    "pauses": [secs(p) for p in pauses],
    "speech": [secs(s) for s in speech],
}
with open(path, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
PY

# ---- stereo44k.wav --------------------------------------------------------------------------
speak "The left channel reads this sentence out loud, slowly and clearly, for the stereo test." "$tmp/left_raw.wav"
speak "While the right channel, half a second later, says something completely different." "$tmp/right_raw.wav"
$SOX "$tmp/left_raw.wav" -r 44100 -c 1 -b 16 "$tmp/left.wav"
$SOX "$tmp/right_raw.wav" -r 44100 -c 1 -b 16 "$tmp/right.wav" pad 0.5 0
$SOX -M "$tmp/left.wav" "$tmp/right.wav" -r 44100 -c 2 -b 16 "$out/stereo44k.wav"

# ---- speech.flac (22.05 kHz, espeak-ng's native rate) --------------------------------------
speak "Free lossless audio codec files are decoded and resampled before the mel spectrogram." "$tmp/flac_raw.wav"
$SOX "$tmp/flac_raw.wav" -r 22050 -c 1 -b 16 "$out/speech.flac"

# ---- short compressed files: decoders only ------------------------------------------------
speak "Hello from a compressed file." "$tmp/comp_raw.wav"
$SOX "$tmp/comp_raw.wav" -r 16000 -c 1 -b 16 "$tmp/comp16k.wav"
$SOX "$tmp/comp_raw.wav" -r 24000 -c 1 -b 16 "$tmp/comp24k.wav"
oggenc --quiet -q 2 --serial 20251130 -o "$out/speech.ogg" "$tmp/comp16k.wav"
opusenc --quiet --serial 20251130 --bitrate 24 "$tmp/comp16k.wav" "$out/speech.opus"
lame --quiet --noreplaygain -b 32 --resample 24 "$tmp/comp24k.wav" "$out/speech.mp3"

echo "wrote:"
for f in "$out"/*; do
    printf '  %-16s %8d bytes  %s\n' "$(basename "$f")" "$(stat -c %s "$f")" \
        "$(soxi -d "$f" 2>/dev/null || true)"
done
