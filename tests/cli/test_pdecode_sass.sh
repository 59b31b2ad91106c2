#!/usr/bin/env bash
# scripts/pdecode_sass.py --sass on two synthetic cuobjdump listings whose differences are known by
# construction: instance Li4ELb1ELi1E differs only in immediates and addresses (0 differ), Li4ELb1ELi4E
# has one instruction changed and one spill store added (2 differ: one changed, one extra), Li1ELb0ELi1E
# is only in the first listing; a function that is not the kernel is ignored. Also: --instance
# filters, a listing without the kernel is refused, and no revision nor --sass is a usage error.
# Usage: test_pdecode_sass.sh BUILD_DIR FIXTURES_DIR (neither is used)
set -u
source "$(dirname "$0")/checks.sh"
script_under_test pdecode_sass.py

fn() { # fn NAME: a cuobjdump function header for pdecode_kernel<NAME>
    echo "        Function : _ZN51_GLOBAL__N__1234abcd_10_pdecode_cu_0123456714pdecode_kernelI${1}EEvNS_6ParamsE"
    echo "        .headerflags    @\"EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\""
}
ins() { printf '        /*%04x*/                   %s ;   /* 0x000fe2000000000f */\n' "$1" "$2"; }
{
    fn Li4ELb1ELi1E
    ins 0000 "MOV R1, c[0x0][0x28]"; ins 0010 "IADD3 R2, R2, 0x10, RZ"; ins 0020 "EXIT"
    fn Li4ELb1ELi4E
    ins 0000 "MOV R1, c[0x0][0x28]"; ins 0010 "FFMA R3, R4, R5, R3"; ins 0020 "EXIT"
    fn Li1ELb0ELi1E
    ins 0000 "EXIT"
    echo "        Function : _Z11other_kernelv"
    ins 0000 "EXIT"
} >"$tmp/a.sass"
{
    fn Li4ELb1ELi1E
    ins 0000 "MOV R1, c[0x0][0x30]"; ins 0010 "IADD3 R2, R2, 0x20, RZ"; ins 0020 "EXIT"
    fn Li4ELb1ELi4E
    ins 0000 "MOV R1, c[0x0][0x28]"; ins 0010 "FMUL R3, R4, R5"; ins 0020 "EXIT"; ins 0030 "STL.64 [R1], R2"
} >"$tmp/b.sass"
echo "        Function : _Z11other_kernelv" >"$tmp/none.sass"

python3 "$script" --sass "$tmp/a.sass" "$tmp/b.sass" >"$tmp/all.out" 2>&1 || fail "the listings: exit $?: $(cat "$tmp/all.out")"
check "Li4ELb1ELi1E: 3 and 3 instructions, none differ once immediates are masked" \
    grep -qE '^Li4ELb1ELi1E +3 +3 +0 +0->0 *$' "$tmp/all.out"
check "Li4ELb1ELi4E: 3 -> 4 instructions, 2 differ, a spill added, FFMA and FMUL moved" \
    grep -qE '^Li4ELb1ELi4E +3 +4 +2 +0->1 .*FFMA-1' "$tmp/all.out"
has "$tmp/all.out" "FMUL+1"
has "$tmp/all.out" "STL.64+1"
check "an instance in one listing only" grep -qE '^Li1ELb0ELi1E +1 +0 +1 ' "$tmp/all.out"
check "other functions are not instances" bash -c "! grep -q other_kernel '$tmp/all.out'"

python3 "$script" --sass "$tmp/a.sass" "$tmp/b.sass" --instance Li4ELb1ELi1E >"$tmp/one.out" 2>&1 ||
    fail "--instance: exit $?"
check "--instance keeps one instance" test "$(grep -c '^Li' "$tmp/one.out")" -eq 1

python3 "$script" --sass "$tmp/none.sass" "$tmp/none.sass" >"$tmp/none.out" 2>&1
check "a listing without the kernel: non-zero exit" test $? -ne 0
has "$tmp/none.out" "no pdecode_kernel instance"
python3 "$script" >"$tmp/usage.out" 2>&1
check "no revision and no --sass: usage error (exit 2)" test $? -eq 2

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
