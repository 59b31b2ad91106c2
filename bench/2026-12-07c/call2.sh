#!/bin/bash
# call 2 of 2026-12-07c (any card): on an H200, call1.sh (the in-flight cap sweep and
# scripts/bench_gpu.py bf16 and FP8); on any other card, the GPU checks of the K-sliced path's
# removal (2a8c0ab restores the files as they were before ef06c76, which passed these then):
# the norm kernels, the backend's ops, the tiny models end to end at 1, 4 and 8 persistent rows,
# and the attention kernels.
# Pack: `mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh
# bench/2026-12-07c/call1.sh bench/2026-12-07c/call2.sh .devscripts/ &&
# EXTRA_BINS=build/tests/test_kernels_norm bash .devscripts/pack.sh`; carry .devrun.tar.xz and
# .devscripts.
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in *H200*) exec bash .devscripts/call1.sh ;; esac
source .devscripts/device-call.sh
checked test_kernels_norm 120 build/tests/test_kernels_norm
checked test_cuda_backend 200 build/tests/test_cuda_backend
tiny_e2e 1 4 8
checked test_kernels_attention 240 build/tests/test_kernels_attention --no-timing
say "end t $(el) s"
