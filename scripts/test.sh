#!/usr/bin/env bash
# Builds the project and runs every test: a Release build (CUDA backend included when the CUDA
# Toolkit is present; GPU tests skip without a GPU), then a CPU-only build under AddressSanitizer
# and UndefinedBehaviorSanitizer that runs the same suites (bad-input tests included).
# Usage: scripts/test.sh [--no-sanitize]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
# ctest runs $jobs tests at once: one OpenMP thread each keeps the CPU reference from
# oversubscribing the cores (its spinning threads then wait for a time slice at every parallel
# region); the results do not depend on the thread count (each output is one thread's loop).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

# VOX_CUDA_ARCHITECTURES narrows the GPU code built (CMakeLists.txt's list by default), e.g.
# "native" on a GPU machine, or a couple of architectures where no GPU runs the tests (.ci/run).
arch=()
[ -n "${VOX_CUDA_ARCHITECTURES:-}" ] && arch=(-DVOX_CUDA_ARCHITECTURES="$VOX_CUDA_ARCHITECTURES")

echo "== Release build =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${arch[@]}"
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

if [ "${1:-}" != "--no-sanitize" ]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer build (CPU backend) =="
  cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVOX_SANITIZE=ON -DVOX_CUDA=OFF
  cmake --build build-sanitize -j"$jobs"
  # tests/lsan.supp: leaks inside third-party libraries (libsndfile's failed Ogg/Vorbis open),
  # each narrow, so that ours are still reported
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0 \
    ctest --test-dir build-sanitize --output-on-failure -j"$jobs"
fi
