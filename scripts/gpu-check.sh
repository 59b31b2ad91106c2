#!/usr/bin/env bash
# On a GPU machine: runs every GPU test binary of a build and the tiny-model end-to-end check
# (CPU vs CUDA ids), logs each to LOG_DIR, and prints one summary table.
# usage: scripts/gpu-check.sh BUILD_DIR [LOG_DIR]
#
# --sanitize: voxtral_runner under compute-sanitizer's memcheck, racecheck, synccheck and
# initcheck, each on one file and on a batch of three, with every tensor in its own allocation
# (VOX_CUDA_PLAIN_MALLOC=1) and the persistent decode kernel's watchdog at 600 s (tools slow it
# down); one log a run in LOG_DIR and one table: tool, run, exit status,
# errors the tool counted, seconds, the largest process's peak RSS (racecheck's bookkeeping on
# the host got the full-size runner killed). Exit status 1 when a run failed, timed out, was
# killed, reported errors or printed no summary. MODEL_DIR: a full-width model with few layers
# (scripts/make_random_model.py; bench/NOTES-2026-12-01-sanitizers.md).
# usage: scripts/gpu-check.sh --sanitize BUILD_DIR MODEL_DIR [LOG_DIR]
# environment: SAN_TIMEOUT seconds a run (600); SAN_TOOLS (memcheck racecheck synccheck
# initcheck); SAN_RUNS (one batch; "two" is short.wav twice, the smallest batch; "backend" adds BUILD_DIR/tests/test_cuda_backend, whose GEMMs
# go through cuBLASLt and are read back by our kernels: a control for initcheck's reports on
# cuBLASLt's output; "kernels" adds every BUILD_DIR/tests/test_kernels_* with --no-timing: each
# of our kernels against the CPU at awkward shapes, without cuBLASLt); SAN_DEVICE the runner's -d (cuda); COMPUTE_SANITIZER its path
# (compute-sanitizer on PATH, else /usr/local/cuda/bin's); SAN_ARGS added to every tool's
# options; SAN_ARGS_<tool> replaces that tool's own options (below, in sanitize_args);
# SAN_SYNC_STEP_ROWS the prompt step size of synccheck's runs (64; below, in sanitize_env);
# SAN_RACECHECK_SUPP the racecheck suppressions (tests/gpu/racecheck.supp; empty: none): races
# reported inside the third-party kernels it names are listed in the note, not counted.
set -uo pipefail

# The options of each tool besides --tool and --error-exitcode.
sanitize_args() {
  local var="SAN_ARGS_$1"
  if [ -n "${!var+set}" ]; then
    echo "${!var}"
    return
  fi
  case $1 in
    # one record a race (kernel, the two accesses, the hazard count), which the suppressions
    # match; "all" (every hazard) did not finish a one-file run at the full width in 150 s,
    # "analysis" takes 73-180 s (bench/NOTES-2026-12-03b.md)
    racecheck) echo "--racecheck-report analysis" ;;
    # no NVTX: with the backend's initcheck marks (src/backend/cuda_initcheck.h) synccheck never
    # finished a one-file run (over 30 and 60 s), without them it takes 1.6 s
    # (bench/NOTES-2026-12-02-sanitizers.md)
    synccheck) echo "--nvtx no" ;;
    *) echo "" ;;
  esac
}

# The environment a tool's runs get besides VOX_CUDA_PLAIN_MALLOC and the watchdog.
sanitize_env() {
  case $1 in
    # synccheck does not finish some of cuBLASLt's bf16 GEMMs at prompt sizes: alone under the
    # tool (`time_gemm_algos --shape NAME --first M`), gate|up (16384 x 3072) hangs at 380 and 760
    # rows and q|k|v at 760, with or without workspace (VOX_GEMM_WORKSPACE=0 rescues 760 rows,
    # not 380), while every shape at 140 rows finishes; the runner hangs in the prompt step that
    # runs them. With prompt steps of at most 64 rows two files pass in 3.8 s
    # (bench/NOTES-2026-12-02-fp8-plain.md, NOTES-2026-12-02-step-trace.md). SAN_SYNC_STEP_ROWS
    # sets that limit; empty: the product's own (2048), to see the hang.
    # The encoder's fc1 GEMM (5120 x 1280) does not finish under the tool either at 3000 and 6000
    # rows (encoder groups of 2 and 4 chunks, with workspace; NOTES-2026-12-03.md): synccheck's
    # runs take encoder groups of at most SAN_SYNC_ENCODER_GROUP chunks (2) and cuBLASLt's
    # algorithms without workspace (SAN_SYNC_WORKSPACE, 0); with all three the batch of three
    # files passed in 1.9 s. Empty: the product's own setting.
    synccheck)
      local -a e=()
      [ -n "${SAN_SYNC_STEP_ROWS-64}" ] && e+=("VOX_STEP_ROWS=${SAN_SYNC_STEP_ROWS-64}")
      [ -n "${SAN_SYNC_ENCODER_GROUP-2}" ] && e+=("VOX_ENCODER_GROUP=${SAN_SYNC_ENCODER_GROUP-2}")
      [ -n "${SAN_SYNC_WORKSPACE-0}" ] && e+=("VOX_GEMM_WORKSPACE=${SAN_SYNC_WORKSPACE-0}")
      echo "${e[*]}" ;;
  esac
  return 0
}

# "ERRORS NOTE" of a run's log: the tool's own count (racecheck: "RACECHECK SUMMARY: N hazards
# displayed (E errors, W warnings)", less the records the suppressions match; the others:
# "ERROR SUMMARY: N errors"), "?" when the log has no summary line.
sanitize_parse() {
  local log=$1 line errors="?" note=""
  line=$(grep -aE 'RACECHECK SUMMARY: [0-9]+ hazards? displayed' "$log" | tail -1)
  if [ -n "$line" ]; then
    errors=$(sed -nE 's/.*\(([0-9]+) errors?, ([0-9]+) warnings?\).*/\1/p' <<<"$line")
    local warnings suppressed
    warnings=$(sed -nE 's/.*\(([0-9]+) errors?, ([0-9]+) warnings?\).*/\2/p' <<<"$line")
    [ "${warnings:-0}" != 0 ] && note="$warnings racecheck warnings"
    suppressed=$(race_suppressed "$log")
    if [ -n "$errors" ] && [ "$suppressed" -gt 0 ]; then
      errors=$((errors > suppressed ? errors - suppressed : 0))
      note="$suppressed suppressed (${race_supp##*/})${note:+; $note}"
    fi
  fi
  line=$(grep -aE 'ERROR SUMMARY: [0-9]+ errors?' "$log" | tail -1)
  if [ -n "$line" ]; then
    local n
    n=$(sed -nE 's/.*ERROR SUMMARY: ([0-9]+) error.*/\1/p' <<<"$line")
    if [ "$errors" = "?" ] || [ "$n" -gt "$errors" ]; then errors=$n; fi
  fi
  echo "${errors:-?} $note"
}

# The number of racecheck records in a log ("Error: Race reported between Read|Write access at
# FUNCTION+0x...") whose FUNCTION matches a pattern of $race_supp (tests/gpu/racecheck.supp:
# third-party kernels whose reports are the tool's, each with its reason).
race_suppressed() {
  local total kept
  total=$(grep -acE 'Error: Race reported between (Read|Write) access at ' "$1")
  kept=$(race_unsuppressed <"$1" | grep -acE 'Error: Race reported between (Read|Write) access at ')
  echo $((total - kept))
}

# Standard input without the racecheck records that $race_supp suppresses.
race_unsuppressed() {
  local patterns
  patterns=$( [ -n "$race_supp" ] && grep -vE '^[[:space:]]*(#|$)' "$race_supp")
  if [ -z "$patterns" ]; then cat; return; fi
  local line fn
  while IFS= read -r line; do
    if [[ "$line" =~ Error:\ Race\ reported\ between\ (Read|Write)\ access\ at\ ([^+]*)\+0x ]]; then
      fn=${BASH_REMATCH[2]}
      grep -qE -f <(echo "$patterns") <<<"$fn" && continue
    fi
    printf '%s\n' "$line"
  done
}

sanitize() {
  local B=${1:?usage: gpu-check.sh --sanitize BUILD_DIR MODEL_DIR [LOG_DIR]}
  local M=${2:?usage: gpu-check.sh --sanitize BUILD_DIR MODEL_DIR [LOG_DIR]}
  local L=${3:-$(mktemp -d)}
  local root timeout_s tools device cs
  root=$(cd "$(dirname "$0")/.." && pwd)
  timeout_s=${SAN_TIMEOUT:-600}
  tools=${SAN_TOOLS:-memcheck racecheck synccheck initcheck}
  device=${SAN_DEVICE:-cuda}
  cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
  race_supp=${SAN_RACECHECK_SUPP-$root/tests/gpu/racecheck.supp}
  if [ -n "$race_supp" ] && [ ! -r "$race_supp" ]; then
    echo "gpu-check.sh: SAN_RACECHECK_SUPP: cannot read $race_supp" >&2
    return 2
  fi
  if [ ! -x "$cs" ]; then
    echo "gpu-check.sh: no compute-sanitizer ($cs): put it on PATH or set COMPUTE_SANITIZER" >&2
    return 2
  fi
  if [ ! -x "$B/voxtral_runner" ] || [ ! -f "$M/voxtral.json" ]; then
    echo "gpu-check.sh: need $B/voxtral_runner and an exported model in $M (voxtral.json)" >&2
    return 2
  fi
  mkdir -p "$L"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
  "$cs" --version 2>&1 | tail -1
  # the fixtures: 4.5 s WAV; 5 s FLAC at 22.05 kHz (resampled); 47 s WAV (two encoder chunks)
  local audio=$root/tests/fixtures/tiny/audio
  local -a one=("$audio/short.wav") batch=("$audio/short.wav" "$audio/speech.flac" "$audio/long.wav")
  # "two": the smallest batch (two sequences in flight, one encoder chunk each), for narrowing
  # down what only batches do (bench/NOTES-2026-12-02-skinny-sync.md)
  local -a two=("$audio/short.wav" "$audio/short.wav")
  # the command under `timeout`, and the peak RSS of the largest process under it (KiB)
  local rss_py='import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(128 - rc if rc < 0 else rc)'
  local -a rows=() problems=()
  local failed=0 tool run
  # the runs: "kernels" stands for one run a kernel test binary (kernels:NAME)
  local -a runs=()
  for run in ${SAN_RUNS:-one batch}; do
    case $run in
      one | two | batch | backend) runs+=("$run") ;;
      kernels)
        local k
        for k in "$B"/tests/test_kernels_*; do
          [ -x "$k" ] && runs+=("kernels:$(basename "$k")")
        done ;;
      *) echo "gpu-check.sh: SAN_RUNS: unknown run '$run' (one, two, batch, backend, kernels)" >&2
         return 2 ;;
    esac
  done
  for tool in $tools; do
    for run in "${runs[@]}"; do
      local -a files app
      case $run in
        one) files=("${one[@]}") ;;
        two) files=("${two[@]}") ;;
        batch) files=("${batch[@]}") ;;
      esac
      case $run in
        backend) app=("$B/tests/test_cuda_backend") ;;
        # every check, no timing table (tests without one ignore the option)
        kernels:*) app=("$B/tests/${run#kernels:}" --no-timing) ;;
        *) app=("$B/voxtral_runner" -m "$M" -d "$device" -n 3 --ignore-eos --no-progress "${files[@]}") ;;
      esac
      local log="$L/$tool-${run/:/-}.log" start rc secs rss parsed errors note line
      if [ ! -x "${app[0]}" ]; then
        failed=1
        rows+=("$(printf '%-10s %-6s %4s %7s %8s %12s  %s' "$tool" "$run" - "?" - - "not built: ${app[0]}")")
        continue
      fi
      local -a targs extra tenv
      read -ra targs <<<"$(sanitize_args "$tool")"
      read -ra tenv <<<"$(sanitize_env "$tool")"
      read -ra extra <<<"${SAN_ARGS:-}"
      # racecheck's exit status stays the program's: its errors are counted from the log, after
      # the suppressions (a suppressed report would otherwise make the status 99)
      local -a ecode=(--error-exitcode 99)
      [ "$tool" = racecheck ] && ecode=()
      local -a cmd=("$cs" --tool "$tool" "${ecode[@]}" "${targs[@]}" "${extra[@]}" "${app[@]}")
      echo "running $tool on $run, log $log"
      start=$(date +%s.%N)
      {
        echo "\$ ${tenv[*]}${tenv[*]:+ }VOX_CUDA_PLAIN_MALLOC=1 VOX_PDECODE_WATCHDOG_S=600 timeout $timeout_s ${cmd[*]}"
        env "${tenv[@]}" VOX_CUDA_PLAIN_MALLOC=1 VOX_PDECODE_WATCHDOG_S=600 python3 -c "$rss_py" "$L/.rss" timeout --kill-after=30 "$timeout_s" "${cmd[@]}"
      } >"$log" 2>&1
      rc=$?
      secs=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
      rss=$(python3 -c "print(round(int(open('$L/.rss').read()) / 2**20, 1))" 2>/dev/null || echo "?")
      rm -f "$L/.rss"
      parsed=$(sanitize_parse "$log")
      errors=${parsed%% *}
      note=${parsed#* }
      case $rc in
        0) [[ "$errors" =~ ^[0-9]+$ ]] && [ "$errors" != 0 ] && note="errors reported${note:+; $note}" ;;
        99) note="errors reported${note:+; $note}" ;;
        124) note="timed out after $timeout_s s${note:+; $note}" ;;
        137) if python3 -c "import sys; sys.exit(0 if $secs >= $timeout_s else 1)"; then
               note="timed out, then SIGKILL${note:+; $note}"
             else
               note="SIGKILL (host out of memory? see dmesg)${note:+; $note}"
             fi ;;
        *) note="exit status $rc${note:+; $note}" ;;
      esac
      if [ "$errors" = "?" ] && [ "$rc" != 124 ] && [ "$rc" != 137 ]; then
        note="no summary line in the log${note:+; $note}"
      fi
      if [ "$rc" != 0 ] || [ "$errors" != 0 ]; then
        failed=1
        # what the runner said (a CUDA error names its call) and the tool's first report
        local said
        said=$(grep -aE '^voxtral_runner: |CHECK(_[A-Z]+)? failed|: CUDA error ' "$log" |
                 grep -av 'files transcribed' | head -2
               grep -aE '^========= +(Invalid|Uninitialized|Error|Race|Barrier|Program hit|Target application)' "$log" |
                 race_unsuppressed | head -2)
        problems+=("$tool/$run (log $log):")
        while IFS= read -r line; do problems+=("  $line"); done <<<"${said:-(nothing from the runner or the tool)}"
      fi
      rows+=("$(printf '%-10s %-6s %4s %7s %8s %12s  %s' "$tool" "$run" "$rc" "$errors" "$secs" "$rss" "$note")")
    done
  done
  {
    echo
    echo "compute-sanitizer summary ($M, VOX_CUDA_PLAIN_MALLOC=1, -d $device, timeout $timeout_s s; logs in $L):"
    printf '%-10s %-6s %4s %7s %8s %12s  %s\n' tool run rc errors seconds max_rss_GiB note
    printf '%s\n' "${rows[@]}"
    if ((${#problems[@]})); then
      echo
      printf '%s\n' "${problems[@]}"
    fi
  } | tee "$L/summary.txt"
  return $failed
}

if [ "${1:-}" = "--sanitize" ]; then
  shift
  sanitize "$@"
  exit $?
fi

B=${1:?usage: gpu-check.sh BUILD_DIR [LOG_DIR]}
L=${2:-$(mktemp -d)}
mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
summary=()
# run NAME BINARY [ARGS...]: one test binary, its log in $L/NAME.log, a summary line
run() {
  local name=$1
  shift
  local start rc secs last
  start=$(date +%s.%N)
  "$@" > "$L/$name.log" 2>&1
  rc=$?
  secs=$(python3 -c "print($(date +%s.%N) - $start)")
  last=$(grep -E "checks, [0-9]+ failed|SKIPPED" "$L/$name.log" | tail -1)
  summary+=("$(printf '%-34s rc=%-3s %6.1fs  %s' "$name" "$rc" "$secs" "$last")")
}
for t in "$B"/tests/test_kernels_* "$B"/tests/test_cuda_*; do
  [ -x "$t" ] && run "$(basename "$t")" "$t"
done
# the tiny model's FP8 export (ctest's export_tiny_model_fp8 makes it), end to end on the GPU
if [ -x "$B/tests/test_cuda_transcribe" ] && [ -f "$B/tiny_model_fp8/voxtral.json" ]; then
  run test_cuda_transcribe_fp8 "$B/tests/test_cuda_transcribe" "$B/tiny_model_fp8"
fi
echo
echo "GPU test summary:"
printf '  %s\n' "${summary[@]}"
