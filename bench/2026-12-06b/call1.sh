#!/bin/bash
# call 1 of 2026-12-06b (any card; the card is in the first line): the in-flight cap by phase,
# 2026-12-05f/call11.sh's experiment, never run until now (its patch refreshed for main at b1092fb:
# bench/2026-12-06b/pdecode-inflight-head-experiment.patch). VOX_PDECODE_INFLIGHT_HEAD=N,K caps an
# op's first K pages at N in flight (those copied while the boundary before the op hands over), the
# rest at VOX_PDECODE_INFLIGHT. "0,0" is main's kernel.
# Built with
#   bash bench/2026-12-04e/build_variants.sh head=bench/2026-12-06b/pdecode-inflight-head-experiment.patch
# and packed with EXTRA_BINS=build/tests/test_kernels_pdecode_head.
# Prediction (2026-12-05f): on an H100, head 1 over 2-4 pages with the rest at 2 within -3% of the
# uniform 2; on an H200 the rest at 3 with a head of 1-2 best, -2 to -5% against the uniform 2.
# On an H200 it then runs 2026-12-06/call2.sh's uniform sweep (0/2/3/4 pages, by-device binary).
source .devscripts/device-call.sh
H=build/tests/test_kernels_pdecode_head
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4; do
    for rest in 2 3; do
      VOX_PDECODE_INFLIGHT=$rest step_row "round $r $(printf '%-14s' $cfg) rest $rest, head N,K" \
        VOX_PDECODE_INFLIGHT_HEAD $H --timing-only $cfg -- 0,0 1,2 1,4 2,4
    done
  done
  say "t $(el) s"
done
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in *H200*) source .devscripts/call2.sh ;; esac
say "end t $(el) s"
