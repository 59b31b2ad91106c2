# The check counters and helpers of the CLI tests (sourced; runner_common.sh sources it too):
#   fail TEXT                 counts a failure
#   check DESCRIPTION CMD...  counts a check, fails when the command fails
#   has FILE TEXT             counts a check, fails when FILE does not hold TEXT (fixed string)
# A test ends with: echo "$checks checks, $failures failed"; [ "$failures" -eq 0 ]
failures=0
checks=0
fail() {
    echo "FAILED: $*" >&2
    failures=$((failures + 1))
}
check() {
    local what=$1
    shift
    checks=$((checks + 1))
    "$@" || fail "$what"
}
has() {
    checks=$((checks + 1))
    grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(head -c 2000 "$1")"
}
# A test of one of scripts/: script_under_test NAME sets $script to scripts/NAME and $tmp to a
# scratch directory removed at exit, or exits 77 (skipped) where python3 is missing.
script_under_test() {
    if ! command -v python3 >/dev/null; then
        echo "SKIPPED: scripts/$1 needs python3"
        exit 77
    fi
    script=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/$1
    tmp=$(mktemp -d "/tmp/vox_${1%.py}_XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
}
