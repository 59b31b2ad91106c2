#!/bin/bash
# call 2 of 2026-12-06b (any card): call 1 found a head of one page in flight better the longer
# it lasts (1,4 beat 1,2 everywhere on an H100); this sweeps K further, and the rest's cap.
source .devscripts/device-call.sh
H=build/tests/test_kernels_pdecode_head
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4 bf16-split-r8; do
    for rest in 2 3; do
      VOX_PDECODE_INFLIGHT=$rest step_row "round $r $(printf '%-14s' $cfg) rest $rest, head N,K" \
        VOX_PDECODE_INFLIGHT_HEAD $H --timing-only $cfg -- 0,0 1,4 1,6 1,8 1,12 1,16 1,1000
    done
  done
  say "t $(el) s"
done
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in *H200*) source .devscripts/call2.sh ;; esac
say "end t $(el) s"
