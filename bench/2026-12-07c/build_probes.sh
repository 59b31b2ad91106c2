#!/bin/bash
# Builds the wide consumer probe's three prepared variants beside main's, for call4.sh:
# build/tests/probe_wide_consumer_bn256 (probe-bn256.patch: 256-row tiles),
# build/tests/probe_wide_consumer_staged (probe-staged.patch: the input staged by the consumers) and
# build/tests/probe_wide_consumer_fixup (probe-fixup.patch: the ticketed residual epilogue).
# Each in a throwaway worktree of HEAD (~1 min each).
set -e
cd "$(git rev-parse --show-toplevel)"
root=$PWD
for v in bn256 staged fixup; do
  wt=/tmp/probe-$v
  git worktree remove --force $wt 2>/dev/null || true
  git worktree add -q $wt HEAD
  (cd $wt && git apply $root/bench/2026-12-07c/probe-$v.patch &&
   cmake -B build -DCMAKE_BUILD_TYPE=Release -DVOX_CUDA_ARCHITECTURES=90-real > /dev/null &&
   cmake --build build --target probe_wide_consumer > /dev/null)
  cp $wt/build/tests/probe_wide_consumer $root/build/tests/probe_wide_consumer_$v
  git worktree remove --force $wt
done
ls -la build/tests/probe_wide_consumer*
