#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz/ with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer (CPU-only build in build-fuzz/), then runs each for SECONDS, as many
# side by side as there are cores. Prints one line per harness:
#   fuzz NAME: N execs, C crashes
# and exits 1 when any harness crashed, leaked, hung or ran out of memory: the input is left in
# build-fuzz/crashes/NAME/ (emptied at the start of each run) and the report in
# build-fuzz/logs/NAME.log. Reproduce with build-fuzz/tests/fuzz/fuzz_NAME FILE; once fixed, copy
# the input to tests/fuzz/regressions/NAME/, which ctest replays (tests/fuzz/README.md).
# The fuzzer starts from the seeds (tests/fuzz/corpus/NAME/) and the inputs that found new coverage
# in earlier runs (build-fuzz/corpus/NAME/, kept from run to run).
#
# Usage: scripts/fuzz.sh SECONDS [NAME...]      (NAME: safetensors, manifest, ... ; default all)
#   FUZZ_JOBS=N     harnesses run at the same time (default: the number of cores)
#   FUZZ_TIMEOUT=S  one input running longer than S seconds is a hang (default 30)
# Installs clang and the libFuzzer runtime (Debian/Ubuntu packages) when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ]; then
  echo "usage: scripts/fuzz.sh SECONDS [NAME...]" >&2
  exit 2
fi
seconds=$1
shift
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
timeout=${FUZZ_TIMEOUT:-30}
build=build-fuzz

# ---- clang with libFuzzer ----------------------------------------------------------------------
can_fuzz() {
  command -v clang >/dev/null 2>&1 || return 1
  local dir
  dir=$(mktemp -d)
  printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' > "$dir/t.c"
  clang -fsanitize=fuzzer,address,undefined "$dir/t.c" -o "$dir/t" >/dev/null 2>&1
  local ok=$?
  rm -rf "$dir"
  return $ok
}
if ! can_fuzz; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  packages=(clang)
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # the libFuzzer runtime: its own package on Debian 12 and Ubuntu 24.04, part of clang before
  if apt-cache show libclang-rt-dev >/dev/null 2>&1; then packages+=(libclang-rt-dev); fi
  $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}"
  if ! can_fuzz; then
    echo "fuzz.sh: clang cannot build a libFuzzer program (-fsanitize=fuzzer) here" >&2
    exit 2
  fi
fi

# ---- build ---------------------------------------------------------------------------------------
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVOX_CUDA=OFF -DVOX_SANITIZE=ON -DVOX_FUZZ_LIBFUZZER=ON \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
cmake --build "$build" --target fuzz_harnesses -j"$jobs" >/dev/null

if [ $# -gt 0 ]; then
  names=("$@")
else
  names=()
  for f in tests/fuzz/fuzz_*.c; do
    n=$(basename "$f" .c)
    names+=("${n#fuzz_}")
  done
fi
for n in "${names[@]}"; do
  if [ ! -x "$build/tests/fuzz/fuzz_$n" ]; then
    echo "fuzz.sh: no harness '$n' (there are: $(ls tests/fuzz/fuzz_*.c | xargs -n1 basename |
      sed 's/^fuzz_//; s/\.c$//' | tr '\n' ' '))" >&2
    exit 2
  fi
done

# ---- run -----------------------------------------------------------------------------------------
# Files the harnesses write go to memory, in a directory removed at the end.
tmp=$(mktemp -d /dev/shm/vox-fuzz.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$build/logs"

run_one() {
  local n=$1 corpus=$build/corpus/$1 crashes=$build/crashes/$1
  mkdir -p "$corpus"
  rm -rf "$crashes"
  mkdir -p "$crashes"
  local rc=0
  # one core a harness: FUZZ_JOBS harnesses side by side are FUZZ_JOBS cores (the audio
  # harness's log-mel would otherwise start an OpenMP thread a core)
  OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} \
  LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0 \
  VOX_FUZZ_TMP="$tmp/$n" "$build/tests/fuzz/fuzz_$n" -max_total_time="$seconds" \
    -timeout="$timeout" -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "$corpus" tests/fuzz/corpus/"$n" >"$build/logs/$n.log" 2>&1 ||
    rc=$?
  echo "$rc" >"$build/logs/$n.rc"
}

for n in "${names[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$n" &
done
wait

failed=0
for n in "${names[@]}"; do
  log=$build/logs/$n.log
  rc=$(cat "$build/logs/$n.rc")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ -z "$execs" ]; then # killed before the final stats: the last progress line
    execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  fi
  crashes=$(find "$build/crashes/$n" -type f | wc -l)
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
  echo "fuzz $n: ${execs:-0} execs, $crashes crashes"
  if [ "$crashes" -gt 0 ]; then
    failed=1
    {
      echo "---- fuzz_$n: exit status $rc; inputs in $build/crashes/$n/; end of $log:"
      grep -v '^#[0-9]' "$log" | tail -40
    } >&2
  fi
done
exit $failed
