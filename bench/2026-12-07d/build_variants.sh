#!/bin/bash
# (Run 2026-12-07e at 4bbc148, NOTES-2026-12-07e.md; the wide ops were removed from main in fd697ce:
# check out 4bbc148 to run this again.)
# Builds test_kernels_wide_ops at three other ring depths beside the default (kAhead 4, kABufs 7,
# kWStages 8) for call-next.sh: build/tests/test_kernels_wide_ops_aA_bB_wW (kAhead A, kABufs B,
# kWStages W; kernels/wide_ops.cuh's VOX_WIDE_* macros). Run from the repository root after the
# CMake build (~1 min each).
set -e
cd "$(git rev-parse --show-toplevel)"
for v in "3 7 8" "6 10 8" "8 12 7"; do
  set -- $v
  nvcc -arch=sm_90a -O3 -std=c++17 -DVOX_WIDE_AHEAD=$1 -DVOX_WIDE_ABUFS=$2 -DVOX_WIDE_WSTAGES=$3 \
    -I kernels -I src -I include -I tests -I tests/gpu tests/gpu/test_kernels_wide_ops.cu \
    -o build/tests/test_kernels_wide_ops_a$1_b$2_w$3 -lcudart_static &
done
wait
ls -la build/tests/test_kernels_wide_ops*
