#!/usr/bin/env bash
# scripts/ncu_loops.py on a synthetic Nsight Compute SASS source page whose loops are known by
# construction: 4 blocks; a loop body of 3 instructions run 400 times (100 a block) with 60
# warp-state samples, all "wait", one of them a shared load with 8-way bank conflicts; a loop of 2
# instructions (one predicated) run 40 times (10 a block) with 30 "barrier" and 10 "long_sb"
# samples, and a "Not Issued" column that must not count. So: 60.0% / 40.0% of 100 samples, in
# that order, each with its reasons and opcodes.
# Also: a file that is not the SASS source page is refused, naming what it lacks.
# Usage: test_ncu_loops.sh BUILD_DIR FIXTURES_DIR (neither is used)
set -u
source "$(dirname "$0")/checks.sh"
script_under_test ncu_loops.py

cat >"$tmp/sass.csv" <<'CSV'
"Kernel Name","void pdecode_kernel<4, 1>(Params)",
"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_barrier","stall_long_sb","stall_wait","stall_wait (Not Issued)","L1 Conflicts Shared N-Way"
"0x7f0000000000","LDS.128 R40, [R124+0x35000]","20","400","0","0","20","9","8"
"0x7f0000000010","HMMA.16816.F32 R72, R72, R40, RZ","20","400","0","0","20","9","0"
"0x7f0000000020","FADD R1, R2, R3","20","400","0","0","20","9","0"
"0x7f0000000030","BAR.SYNC 0x1, 0x100","30","40","30","0","0","0","0"
"0x7f0000000040","@!P0  BRA 0x7f0000000030","10","40","0","10","0","0","0"
CSV
python3 "$script" "$tmp/sass.csv" --blocks 4 >"$tmp/out" 2>&1 || fail "the page: exit $?: $(cat "$tmp/out")"
has "$tmp/out" "100 warp-state samples, 5 instructions, 2 execution counts"
has "$tmp/out" "   60.0%      100.0 a block     3 instructions  [wait 100%]"
has "$tmp/out" "LDSx1 HMMAx1 FADDx1; bank conflicts: LDS 8-way"
has "$tmp/out" "   40.0%       10.0 a block     2 instructions  [barrier 75%, long_sb 25%]"
has "$tmp/out" "BARx1 BRAx1"
checks=$((checks + 1))
[ "$(grep -n "a block" "$tmp/out" | head -1 | cut -d: -f1)" -lt "$(grep -n "40.0%" "$tmp/out" | cut -d: -f1)" ] ||
    fail "groups not by share: $(cat "$tmp/out")"

printf '"Line No","Source"\n"1","x"\n' >"$tmp/lines.csv"
checks=$((checks + 1))
if python3 "$script" "$tmp/lines.csv" >"$tmp/refused.out" 2>&1; then
    fail "a page without SASS rows was read"
fi
has "$tmp/refused.out" "no 'Address,Source' header"

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
