#!/usr/bin/env bash
# voxtral_runner over several devices (tiny fixture model): two engines on the CPU (-d cpu,cpu)
# share one queue of inputs, and their results equal one device's (the CPU computes each row the
# same way whatever the batch) in input order; the latency report has a line per device and
# both devices did work; a device that cannot load the model is reported and the others go on;
# when none loads the exit status is 2. (`-d cuda:0,cuda:0` runs the same code on one GPU.)
# Usage: test_runner_devices.sh BUILD_DIR FIXTURES_DIR
set -u
build=$1
fixtures=$2
audio=$fixtures/tiny/audio
source "$(dirname "$0")/runner_common.sh"
tmp=$(mktemp -d /tmp/vox_cli_devices_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export_tiny_model "$tmp/model"
R=("$exe" -m "$tmp/model" -n 3 --ignore-eos)

inputs=()
mkdir "$tmp/in"
for i in 0 1 2 3 4 5 6 7 8 9; do
    src=$audio/short.wav
    [ $((i % 3)) -eq 1 ] && src=$audio/speech.flac
    [ $((i % 3)) -eq 2 ] && src=$audio/stereo44k.wav
    ln -s "$(realpath "$src")" "$tmp/in/f$i.${src##*.}"
    inputs+=("$tmp/in/f$i.${src##*.}")
done
run 0 one -d cpu --batch-size 2 "${inputs[@]}"
run 0 two -d cpu,cpu --batch-size 2 --latency --latency-json "$tmp/two.json" "${inputs[@]}"
check "two devices: the same output as one, in input order" [ "$(cat "$tmp/two.out")" = "$(cat "$tmp/one.out")" ]
for i in 0 1; do
    checks=$((checks + 1))
    req=$(python3 -c "import json,sys; d=json.load(open('$tmp/two.json')); print(d['devices'][$i]['requests'])" 2>/dev/null)
    [ -n "$req" ] && [ "$req" -ge 1 ] || fail "device $i did no work (requests '$req'): $(cat "$tmp/two.err")"
done
checks=$((checks + 1))
[ "$(grep -c '^  device cpu ' "$tmp/two.err")" -eq 2 ] || fail "no per-device lines: $(cat "$tmp/two.err")"

# a device that cannot load: reported, the other does the work
run 0 one_bad -d cpu,cuda:77 "${inputs[@]:0:3}"
checks=$((checks + 1))
grep -qF "cuda:77: cannot load the model" "$tmp/one_bad.err" || fail "the bad device is not reported: $(cat "$tmp/one_bad.err")"
check "one bad device: the others' output" [ "$(grep -c '^==> ' "$tmp/one_bad.out")" -eq 3 ]
# cuda:all beside the CPU on a host without a usable GPU: left out like any device that cannot
# load (it was a usage error, where cuda:77 was left out); alone it is the usage error
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    run 0 all_none -d cpu,cuda:all "${inputs[0]}"
    has "$tmp/all_none.err" "cuda:all: cannot load the model: no CUDA device is usable; left out"
    run 2 all_alone -d cuda:all "${inputs[0]}"
    has "$tmp/all_alone.err" "--device cuda:all: no CUDA device is usable"
fi
# none loads: exit 2
run 2 none -d cuda:77,cuda:78 "${inputs[0]}"
run 2 empty_item -d cpu,,cpu "${inputs[0]}"
checks=$((checks + 1))
grep -qF "an empty device name" "$tmp/empty_item.err" || fail "-d cpu,,cpu: $(cat "$tmp/empty_item.err")"

echo "test_runner_devices: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
