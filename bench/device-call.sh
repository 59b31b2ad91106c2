# Sourced by a device call script (bench/DATE/callN.sh) on the GPU machine, from the repository
# root, with the packed binaries in .devrun.tar.xz and this file and the call in .devscripts/
# (`mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh bench/DATE/callN.sh
# .devscripts/ && EXTRA_BINS="..." bash .devscripts/pack.sh`; carry both to the device): unpacks
# them, puts their libraries and the CUDA tools on the paths, prints the card, and gives the call
# its helpers:
#   el                   seconds since the call began
#   say TEXT...          TEXT on stdout and appended to $OUT/summary.txt (kept if the machine is
#                        taken back mid-call)
#   step CMD...          the "us a step" figure of a test_kernels_pdecode --timing-only run
#   step_row LABEL VAR CMD... [-- V1 V2 ...]  one line: LABEL, then "| V step" for CMD run with
#                        VAR=V, each V in turn (an A/B of one setting's values in one binary)
#   pdecode_checks       test_kernels_pdecode's checks (no timing): its last line, and up to 8
#                        failures, into the summary
#   checked NAME SECS CMD...  CMD (a test) for at most SECS seconds, its output in $OUT/NAME.txt:
#                        its status, last line and up to 8 failures into the summary
#   tiny_e2e ROWS...     test_cuda_transcribe on the tiny bf16 and FP8 models at each
#                        VOX_PDECODE_ROWS: one summary line each
#   only_on NAME         stops the call (status 0) unless the card's name contains NAME
#                        (calls whose figures only count on the card the targets are set for)
#   step_bins LABEL CFG NAME=BIN...  one line: LABEL, then each binary's step at CFG
#                        (test_kernels_pdecode --timing-only CFG) as "| NAME us"
#   cap_sweep            the one-row in-flight cap 2 / 3 / 4 at main's heads (bf16, FP8, bf16 at 4
#                        rows), two rounds, as step_row lines, then best_cap's pick for bf16 and FP8
#   best_cap CFG         the in-flight cap a call's step_row lines "... cap CFG | 2 US | 3 US" pick: 3
#                        where it is >= 1% under 2 in every such line (two at least), else 2
#   bench_run NAME ARGS  python3 ARGS --out /tmp/NAME (a bench script), its results.md,
#                        results.json and log into $OUT/NAME, and its summary on stdout
#   sanitize TOOL SECS SHAPE [CONSUMER]  compute-sanitizer TOOL on test_kernels_pdecode's checks of
#                        one shape (and consumer), at most SECS seconds and only if the call's
#                        580 s (CALL_LIMIT) leave them (racecheck with its analysis report; set
#                        VOX_PDECODE_WATCHDOG_S first): its summary line into the summary;
#                        SAN_BIN=PATH checks another build of the test (a variant's)
set -o pipefail
# unpacked once a call (a call script that runs another one after changing the unpacked files)
[ -n "${DEVCALL_UNPACKED:-}" ] || tar -xJf .devrun.tar.xz
export DEVCALL_UNPACKED=1
export LD_LIBRARY_PATH=$PWD/.devlibs:$LD_LIBRARY_PATH
export PATH=/usr/local/cuda/bin:$PATH
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
say() { echo "$*" | tee -a $OUT/summary.txt; }
step() { timeout 40 "$@" 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'; }
pdecode_checks() {
  timeout 300 build/tests/test_kernels_pdecode --no-timing > $OUT/pdecode-checks.txt 2>&1
  say "test_kernels_pdecode rc $? $(tail -1 $OUT/pdecode-checks.txt) (t $(el) s)"
  grep -E "FAIL|outside" $OUT/pdecode-checks.txt | head -8 | tee -a $OUT/summary.txt
}
checked() {
  local name=$1 secs=$2
  shift 2
  timeout $secs "$@" > $OUT/$name.txt 2>&1
  say "$name rc $? $(tail -1 $OUT/$name.txt) (t $(el) s)"
  grep -E "FAIL" $OUT/$name.txt | head -8 | tee -a $OUT/summary.txt
}
tiny_e2e() {
  local m rows
  for m in tiny_model tiny_model_fp8; do
    for rows in "$@"; do
      VOX_PDECODE_ROWS=$rows timeout 100 build/tests/test_cuda_transcribe build/$m > $OUT/e2e-$m-$rows.txt 2>&1
      say "e2e $m rows $rows rc $? $(grep -E 'checks' $OUT/e2e-$m-$rows.txt | tail -1) (t $(el) s)"
    done
  done
}
only_on() {
  local card
  card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  case "$card" in *"$1"*) ;; *) say "card $card: not an $1, nothing run"; exit 0 ;; esac
}
step_row() {
  local label=$1 var=$2; shift 2
  local cmd=() v line
  while [ $# -gt 0 ] && [ "$1" != -- ]; do cmd+=("$1"); shift; done
  shift
  line=$label
  for v in "$@"; do line="$line | $v $(step env "$var=$v" "${cmd[@]}" | cut -d' ' -f1)"; done
  say "$line"
}
step_bins() {
  local line="$1 $(printf '%-14s' $2)" cfg=$2 nb
  shift 2
  for nb in "$@"; do line="$line | ${nb%%=*} $(step ${nb#*=} --timing-only $cfg | cut -d' ' -f1)"; done
  say "$line"
}
best_cap() {
  grep "cap $1 |" $OUT/summary.txt | awk -F'|' '{split($2,a," "); split($3,b," "); n++; if (!(a[2] > 0) || !(b[2] > 0) || b[2] > 0.99 * a[2]) bad = 1}
    END {print bad || n < 2 ? 2 : 3}'
}
cap_sweep() {
  local r cfg
  for r in 1 2; do
    for cfg in bf16-split fp8-split bf16-split-r4; do
      step_row "round $r cap $cfg" VOX_PDECODE_INFLIGHT build/tests/test_kernels_pdecode --timing-only $cfg -- 2 3 4
    done
  done
  say "best cap: bf16 $(best_cap bf16-split), FP8 $(best_cap fp8-split) (t $(el) s)"
}
bench_run() {
  local name=$1; shift
  python3 "$@" --out /tmp/$name > /tmp/$name.log 2>&1; echo "$name rc $?"
  mkdir -p $OUT/$name; cp /tmp/$name/results.md /tmp/$name/results.json $OUT/$name/ 2>/dev/null
  cp /tmp/$name.log $OUT/$name/ 2>/dev/null
  sed -n '/## Summary/,/## /p' /tmp/$name/results.md | head -30
}
sanitize() {
  local tool=$1 secs=$2 shape=$3 consumer=${4:-} log=$OUT/$1-${3// /-}.log extra=
  [ $(( $(el) + secs )) -gt ${CALL_LIMIT:-580} ] && { say "skip $tool $shape (t $(el) s)"; return; }
  [ $tool = racecheck ] && extra="--racecheck-report analysis"
  timeout $secs compute-sanitizer --tool $tool $extra ${SAN_BIN:-build/tests/test_kernels_pdecode} --no-timing "$shape" $consumer > $log 2>&1
  say "$tool ${SAN_BIN:+($SAN_BIN) }$shape rc $? $(grep -E 'SUMMARY|checks,' $log | tr '\n' ' ') (t $(el) s)"
}
