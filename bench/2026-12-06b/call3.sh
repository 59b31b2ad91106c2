#!/bin/bash
# call 3 of 2026-12-06b (any card): the cap by the consumers' state instead of by page count.
# Calls 1-2 (H100): an op's first K pages at one page in flight beat main's uniform cap of 2, by
# -0.7% (bf16 one row, K = 4) to -5.6% (FP8 one row, K = 8), -4.0% at 4 rows bf16 (K = 6); the best K
# differs by format because what should be at one page is what is copied while the boundary hands
# over. pdecode-inflight-phase-experiment.patch (head's patch and VOX_PDECODE_INFLIGHT_WAIT=N: N pages
# in flight while the consumers wait for an op's input and stage it, the rest's cap otherwise).
# Prediction: wait 1 at least as good as the best head K in every format (it is the same idea
# without a K to tune), within +-1% of it.
source .devscripts/device-call.sh
H=build/tests/test_kernels_pdecode_phase
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4 bf16-split-r8; do
    VOX_PDECODE_INFLIGHT=2 step_row "round $r $(printf '%-14s' $cfg) rest 2, head N,K" \
      VOX_PDECODE_INFLIGHT_HEAD $H --timing-only $cfg -- 0,0 1,4 1,6 1,8
    for rest in 2 3 4; do
      VOX_PDECODE_INFLIGHT=$rest step_row "round $r $(printf '%-14s' $cfg) rest $rest, wait N" \
        VOX_PDECODE_INFLIGHT_WAIT $H --timing-only $cfg -- 0 1 2
    done
  done
  say "t $(el) s"
done
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in *H200*) source .devscripts/call2.sh ;; esac
say "end t $(el) s"
