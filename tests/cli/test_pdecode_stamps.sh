#!/usr/bin/env bash
# scripts/pdecode_stamps.py on synthetic stamps whose critical path is known by construction:
# 4 blocks, 3 layers; block b's op s waits until 10000 s + 100 b ns and works 5000 ns; attention
# mark k of block b in layer l at (its q|k|v op's end) + 1000 (k + 1) ns, on a %globaltimer-like
# base. So (the middle layer, us): every op begins 4.70 / 4.85 / 5.00 after the op before it ended
# and ends 9.70 / 9.85 / 10.00 after it, a layer is 50.00, the step 155.30, and mark k lies
# 1000 (k + 1) - 150 ns (median) and 1000 (k + 1) ns (last) after the last q|k|v block's end.
# Also: a file with the ops' stamps alone prints no marks, and a short file is refused.
# Usage: test_pdecode_stamps.sh BUILD_DIR FIXTURES_DIR (neither is used)
set -u
source "$(dirname "$0")/checks.sh"
script_under_test pdecode_stamps.py

python3 - "$tmp" <<'EOF'
import array, sys
tmp = sys.argv[1]
sms, layers, marks = 4, 3, 10
steps = layers * 5 + 1
base = 1_700_000_000_000_000_000
ops = array.array("Q")
for b in range(sms):
    for s in range(steps):
        begin = base + s * 10000 + b * 100
        ops.extend([begin, begin + 5000])
ms = array.array("Q")
for b in range(sms):
    for l in range(layers):
        qkv_end = base + l * 5 * 10000 + b * 100 + 5000
        ms.extend(qkv_end + 1000 * (k + 1) for k in range(marks))
with open(f"{tmp}/stamps-bf16-row-4sm.u64", "wb") as f:
    f.write(ops.tobytes() + ms.tobytes())
with open(f"{tmp}/nomarks-4sm.u64", "wb") as f:
    f.write(ops.tobytes())
with open(f"{tmp}/short-4sm.u64", "wb") as f:
    f.write(ops[:10].tobytes())
EOF

python3 "$script" "$tmp/stamps-bf16-row-4sm.u64" --layers 3 >"$tmp/full.out" 2>&1 ||
    fail "the full file: exit $?: $(cat "$tmp/full.out")"
has "$tmp/full.out" "4 blocks, 3 layers, step 155.3 us"
for op in "q|k|v" attention o "gate|up" down; do
    checks=$((checks + 1))
    grep -qE "^$(printf '%s' "$op" | sed 's/|/\\|/') +4\.70 +4\.85 +5\.00 +9\.70 +9\.85 +10\.00$" "$tmp/full.out" ||
        fail "$op's line: $(grep -F "$op " "$tmp/full.out")"
done
has "$tmp/full.out" "a layer: 50.00 us"
has "$tmp/full.out" "0 unit begun                0.85    1.00  (4 a layer)"
has "$tmp/full.out" "9 first keys scored         9.85   10.00  (4 a layer)"

python3 "$script" "$tmp/nomarks-4sm.u64" --layers 3 >"$tmp/nomarks.out" 2>&1 ||
    fail "ops' stamps alone: exit $?: $(cat "$tmp/nomarks.out")"
has "$tmp/nomarks.out" "a layer: 50.00 us"
checks=$((checks + 1))
! grep -q "attention marks" "$tmp/nomarks.out" || fail "marks printed for a file without them"

checks=$((checks + 1))
if python3 "$script" "$tmp/short-4sm.u64" --layers 3 >"$tmp/short.out" 2>&1; then
    fail "a short file was read"
fi
has "$tmp/short.out" "10 words, expected at least 128 (4 blocks x 16 ops x 2)"

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
