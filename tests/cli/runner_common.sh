# Set-up shared by the voxtral_runner CLI tests; sourced after they set $build and $fixtures.
# Skips (exit 77) when voxtral_runner, voxtral_export or the tiny checkpoint is missing, and
# defines the check counters and helpers (fail, check, has: checks.sh) and:
#   run WANT NAME ARGS...     runs "${R[@]}" ARGS (R set by the test), checks the exit status;
#                             stdout in $tmp/NAME.out, stderr in $tmp/NAME.err
#   export_tiny_model DIR     exports the tiny fixture model, or stops the test
#   wait_until PID CMD...     polls CMD every 0.05 s (up to 240 s) while process PID lives:
#                             status 0 once CMD succeeds, 1 if PID ended or time ran out first
#   wait_exit PID SECONDS     waits for background process PID to end: its exit status, or 124
#                             (after killing it) when it still runs after SECONDS: a hang
#   same_json A B             files A and B hold the same json apart from the latency numbers
exe=$build/voxtral_runner
if [ ! -x "$exe" ] || [ ! -x "$build/voxtral_export" ]; then
    echo "SKIPPED: voxtral_runner or voxtral_export is not built in $build"
    exit 77
fi
if [ ! -d "$fixtures/tiny/checkpoint_hf" ]; then
    echo "SKIPPED: no tiny checkpoint in $fixtures/tiny (scripts/make_reference.py makes it)"
    exit 77
fi
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
run() {
    local want=$1 name=$2
    shift 2
    checks=$((checks + 1))
    "${R[@]}" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "$name: exit $rc, want $want: $(head -c 2000 "$tmp/$name.err")"
}
export_tiny_model() {
    if ! "$build/voxtral_export" --from "$fixtures/tiny/checkpoint_hf" --out "$1" -q; then
        echo "FAILED: cannot export the tiny model"
        exit 1
    fi
}
wait_until() {
    local pid=$1 i
    shift
    for ((i = 0; i < 4800; i++)); do
        "$@" && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
wait_exit() {
    local pid=$1 i
    for ((i = 0; i < $2 * 20; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -9 "$pid"
        wait "$pid" 2>/dev/null
        return 124
    fi
    wait "$pid"
}
same_json() {
    [ "$(sed -E 's/"latency_ms":\{[^}]*\}//' "$1")" = "$(sed -E 's/"latency_ms":\{[^}]*\}//' "$2")" ]
}
