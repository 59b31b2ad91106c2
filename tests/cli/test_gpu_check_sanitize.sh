#!/usr/bin/env bash
# scripts/gpu-check.sh --sanitize without a GPU: a stand-in compute-sanitizer (COMPUTE_SANITIZER)
# runs the real voxtral_runner on the tiny model (SAN_DEVICE=cpu) and ends as each tool might:
# clean, errors reported (memcheck's and racecheck's summary lines), the runner failing on its
# own (VOX_FAULT), no summary line, killed (SIGKILL, as racecheck's host OOM was), a hang past
# SAN_TIMEOUT. Checks the table's rc, errors and note per run, the runner's message under the
# table, the logs, and the exit status (0 only when every run is clean).
# Usage: test_gpu_check_sanitize.sh BUILD_DIR FIXTURES_DIR
set -u
build=$1
fixtures=$2
source "$(dirname "$0")/runner_common.sh"
if ! command -v python3 >/dev/null || ! command -v timeout >/dev/null; then
    echo "SKIPPED: gpu-check.sh --sanitize needs python3 and timeout"
    exit 77
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/scripts/gpu-check.sh
audio=$root/tests/fixtures/tiny/audio # the clips gpu-check.sh takes
tmp=$(mktemp -d /tmp/vox_cli_sanitize_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export_tiny_model "$tmp/model"

# The stand-in: the tool is --tool's value; what it does is STUB_<tool> (clean by default).
cat >"$tmp/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
[ "$1" = --version ] && { echo "stand-in compute-sanitizer"; exit 0; }
tool=memcheck code=0
while [ $# -gt 0 ] && ! { [ -f "$1" ] && [ -x "$1" ]; }; do # up to the program
    case $1 in
        --tool) tool=$2; shift ;;
        --error-exitcode) code=$2; shift ;;
    esac
    shift
done
mode_var=STUB_$tool
mode=${!mode_var:-clean}
echo "========= COMPUTE-SANITIZER ($tool, $mode): $*"
echo "========= stand-in: the program's VOX_STEP_ROWS='${VOX_STEP_ROWS-unset}'"
echo "========= stand-in: the program's VOX_ENCODER_GROUP='${VOX_ENCODER_GROUP-unset}' VOX_GEMM_WORKSPACE='${VOX_GEMM_WORKSPACE-unset}'"
case $mode in
    kill) kill -9 $$ ;;
    hang) sleep 60; exit 0 ;;
    fault) VOX_FAULT=step:1:sticky "$@"; rc=$? ;;
    *) "$@"; rc=$? ;;
esac
case $mode in
    clean|fault) if [ "$tool" = racecheck ]; then
            echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
        else
            echo "========= ERROR SUMMARY: 0 errors"
        fi
        exit $rc ;;
    errors) echo "========= Invalid __global__ read of size 2 bytes"
        echo "========= ERROR SUMMARY: 2 errors"
        exit "$code" ;;
    race) echo "========= Error: Race reported between Write access and Read access"
        echo "========= RACECHECK SUMMARY: 3 hazards displayed (1 error, 2 warnings)"
        exit "$code" ;;
    warn) echo "========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)"
        exit $rc ;;
    librace|mixrace) # records as --racecheck-report analysis prints them: cuBLASLt's, and ours
        for k in nvjet_sm90_tst_128x232_64x4_2x1_v_bz_coopA_bias_TNT nvjet_sm90_tst_80x128_64x8_4x1_v_bz_TNN; do
            echo "========= Error: Race reported between Read access at $k+0x930"
            echo "=========     and Write access at $k+0x51b0 [520 hazards]"
        done
        n=2
        if [ $mode = mixrace ]; then
            echo "========= Error: Race reported between Write access at <unnamed>::bulk_copy(void *, const void *)+0x1c790 in pdecode.cu:172"
            echo "=========     and Read access at void <unnamed>::run_projection<(bool)0>(const <unnamed>::Params &)+0xcc90 in pdecode.cu:433 [2502913 hazards]"
            n=3
        fi
        echo "========= RACECHECK SUMMARY: $n hazards displayed ($n errors, 0 warnings)"
        exit $rc ;;
    nosummary) exit $rc ;;
esac
EOF
chmod +x "$tmp/compute-sanitizer"

# sanitize NAME WANT_RC [VAR=VALUE...]: gpu-check.sh --sanitize with these settings (WANT_RC
# "any": not checked); its output in $tmp/NAME.out, logs in $tmp/NAME/
sanitize() {
    local name=$1 want=$2
    shift 2
    checks=$((checks + 1))
    env COMPUTE_SANITIZER="$tmp/compute-sanitizer" SAN_DEVICE=cpu "$@" \
        bash "$script" --sanitize "$build" "$tmp/model" "$tmp/$name" >"$tmp/$name.out" 2>&1
    local rc=$?
    [ "$want" = any ] || [ "$rc" -eq "$want" ] || fail "$name: exit $rc, want $want: $(tail -c 3000 "$tmp/$name.out")"
}
# row NAME TOOL RUN RC ERRORS [NOTE]: the table has that row (NOTE: a part of the note)
row() {
    local name=$1 tool=$2 run=$3 rc=$4 errors=$5 note=${6:-}
    checks=$((checks + 1))
    local line
    line=$(grep -E "^$tool +$run " "$tmp/$name.out" | tail -1)
    read -r t r c e _ <<<"$line"
    if [ "$t $r $c $e" != "$tool $run $rc $errors" ] || [[ "$line" != *"$note"* ]]; then
        fail "$name: row '$line', want '$tool $run $rc $errors ...$note'"
    fi
}
has() { # has FILE TEXT
    checks=$((checks + 1))
    grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(tail -c 2000 "$1")"
}

# every tool clean: exit 0, both runs of each, a log each and the summary file
sanitize clean 0
for tool in memcheck racecheck synccheck initcheck; do
    for run in one batch; do
        row clean $tool $run 0 0
        check "clean: $tool-$run.log" [ -s "$tmp/clean/$tool-$run.log" ]
    done
done
has "$tmp/clean.out" "tool       run      rc  errors  seconds  max_rss_GiB  note"
has "$tmp/clean/summary.txt" "compute-sanitizer summary ($tmp/model, VOX_CUDA_PLAIN_MALLOC=1, -d cpu"
has "$tmp/clean/memcheck-one.log" "VOX_CUDA_PLAIN_MALLOC=1 VOX_PDECODE_WATCHDOG_S=600 timeout 600 $tmp/compute-sanitizer --tool memcheck --error-exitcode 99"
has "$tmp/clean/racecheck-batch.log" "--tool racecheck --racecheck-report analysis"
has "$tmp/clean/synccheck-one.log" "--tool synccheck --error-exitcode 99 --nvtx no "
has "$tmp/clean/memcheck-batch.log" "$audio/short.wav $audio/speech.flac $audio/long.wav"
has "$tmp/clean/memcheck-one.log" "-n 3 --ignore-eos"
# synccheck's runs prefill in steps of 64 rows, encode groups of at most 2 chunks and take
# cuBLASLt's algorithms without workspace (GEMMs it cannot finish otherwise), the others run as
# the product does; SAN_SYNC_STEP_ROWS / _ENCODER_GROUP / _WORKSPACE change that, empty: off
has "$tmp/clean/synccheck-batch.log" "\$ VOX_STEP_ROWS=64 VOX_ENCODER_GROUP=2 VOX_GEMM_WORKSPACE=0 VOX_CUDA_PLAIN_MALLOC=1 "
has "$tmp/clean/synccheck-one.log" "the program's VOX_STEP_ROWS='64'"
has "$tmp/clean/synccheck-one.log" "the program's VOX_ENCODER_GROUP='2' VOX_GEMM_WORKSPACE='0'"
has "$tmp/clean/memcheck-batch.log" "the program's VOX_STEP_ROWS='unset'"
has "$tmp/clean/memcheck-batch.log" "the program's VOX_ENCODER_GROUP='unset' VOX_GEMM_WORKSPACE='unset'"
has "$tmp/clean/initcheck-one.log" "the program's VOX_STEP_ROWS='unset'"

# errors, racecheck errors and warnings, the runner failing, no summary
sanitize mixed 1 STUB_memcheck=errors STUB_racecheck=race STUB_synccheck=fault STUB_initcheck=nosummary
row mixed memcheck one 99 2 "errors reported"
row mixed racecheck batch 0 1 "errors reported; 2 racecheck warnings"
row mixed synccheck one 1 0 "exit status 1"
row mixed initcheck batch 0 "?" "no summary line"
has "$tmp/mixed.out" "memcheck/one (log $tmp/mixed/memcheck-one.log):"
has "$tmp/mixed.out" "  ========= Invalid __global__ read of size 2 bytes"
has "$tmp/mixed.out" "synccheck/one (log $tmp/mixed/synccheck-one.log):"
has "$tmp/mixed.out" "  voxtral_runner: $audio/short.wav: cpu: decoder step 1: "
has "$tmp/mixed.out" "injected fault (VOX_FAULT=step:1:sticky): the device is lost"

# "two": short.wav twice, the smallest batch
sanitize two 0 SAN_TOOLS=synccheck SAN_RUNS=two
row two synccheck two 0 0
has "$tmp/two/synccheck-two.log" "-n 3 --ignore-eos --no-progress $audio/short.wav $audio/short.wav"
sanitize rows 0 SAN_TOOLS=synccheck SAN_RUNS=two SAN_SYNC_STEP_ROWS=7
has "$tmp/rows/synccheck-two.log" "the program's VOX_STEP_ROWS='7'"
sanitize norows 0 SAN_TOOLS=synccheck SAN_RUNS=two SAN_SYNC_STEP_ROWS= SAN_SYNC_ENCODER_GROUP= SAN_SYNC_WORKSPACE=
has "$tmp/norows/synccheck-two.log" "the program's VOX_STEP_ROWS='unset'"
has "$tmp/norows/synccheck-two.log" "the program's VOX_ENCODER_GROUP='unset' VOX_GEMM_WORKSPACE='unset'"
sanitize group1 0 SAN_TOOLS=synccheck SAN_RUNS=two SAN_SYNC_ENCODER_GROUP=1 SAN_SYNC_WORKSPACE=4096
has "$tmp/group1/synccheck-two.log" "the program's VOX_ENCODER_GROUP='1' VOX_GEMM_WORKSPACE='4096'"

# racecheck reports inside the kernels tests/gpu/racecheck.supp names (cuBLASLt's) are suppressed:
# not errors, listed in the note; one of ours beside them is an error, with its record under the
# table; SAN_RACECHECK_SUPP= counts them all, an unreadable file is a usage error
sanitize librace 0 SAN_TOOLS=racecheck STUB_racecheck=librace
row librace racecheck one 0 0 "2 suppressed (racecheck.supp)"
row librace racecheck batch 0 0 "2 suppressed (racecheck.supp)"
sanitize mixrace 1 SAN_TOOLS=racecheck SAN_RUNS=one STUB_racecheck=mixrace
row mixrace racecheck one 0 1 "errors reported; 2 suppressed (racecheck.supp)"
has "$tmp/mixrace.out" "Race reported between Write access at <unnamed>::bulk_copy"
sanitize nosupp 1 SAN_TOOLS=racecheck SAN_RUNS=one STUB_racecheck=librace SAN_RACECHECK_SUPP=
row nosupp racecheck one 0 2 "errors reported"
sanitize badsupp 2 SAN_TOOLS=racecheck SAN_RACECHECK_SUPP="$tmp/none.supp"
has "$tmp/badsupp.out" "SAN_RACECHECK_SUPP: cannot read $tmp/none.supp"

# racecheck warnings alone are not a failure
sanitize warn 0 SAN_TOOLS=racecheck STUB_racecheck=warn
row warn racecheck one 0 0 "1 racecheck warnings"

# killed (racecheck's host OOM at full size), and a hang cut by SAN_TIMEOUT
sanitize killed 1 SAN_TOOLS="racecheck synccheck" STUB_racecheck=kill STUB_synccheck=hang SAN_TIMEOUT=2
row killed racecheck one 137 "?" "SIGKILL"
row killed synccheck batch 124 "?" "timed out after 2 s"

# the test_cuda_backend control run (it passes on a GPU, skips without: exit 77); an unknown run
# is a usage error
if [ -x "$build/tests/test_cuda_backend" ]; then
    sanitize backend any SAN_TOOLS=initcheck SAN_RUNS="one backend"
    has "$tmp/backend/initcheck-backend.log" "--error-exitcode 99 $build/tests/test_cuda_backend"
else
    sanitize backend 1 SAN_TOOLS=initcheck SAN_RUNS="one backend"
    row backend initcheck backend - "?" "not built: $build/tests/test_cuda_backend"
fi
row backend initcheck one 0 0
# "kernels": every kernel test binary under the tool, checks only (here they skip: no device)
if [ -x "$build/tests/test_kernels_norm" ]; then
    sanitize kernels any SAN_TOOLS=memcheck SAN_RUNS=kernels
    has "$tmp/kernels/memcheck-kernels-test_kernels_norm.log" "$build/tests/test_kernels_norm --no-timing"
    row kernels memcheck kernels:test_kernels_norm 77 0 "exit status 77"
fi
sanitize badrun 2 SAN_RUNS="one twice"
has "$tmp/badrun.out" "SAN_RUNS: unknown run 'twice'"

# SAN_ARGS and SAN_ARGS_<tool>; a missing compute-sanitizer is a usage error
sanitize args 0 SAN_TOOLS=racecheck SAN_ARGS="--print-limit 5" SAN_ARGS_racecheck="--racecheck-report hazard"
has "$tmp/args/racecheck-one.log" "--tool racecheck --racecheck-report hazard --print-limit 5 "
sanitize missing 2 COMPUTE_SANITIZER="$tmp/none"
has "$tmp/missing.out" "no compute-sanitizer"

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
