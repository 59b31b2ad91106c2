#!/bin/bash
# call 4 of 2026-12-06b (any card): call 3 refuted the cap by the consumers' waiting (within
# +-1% of main everywhere), so the head's gain is not the boundary's own traffic. This times the
# other reading of it: pages of an op past the one the consumers are on (look-ahead) at
# VOX_PDECODE_INFLIGHT_AHEAD=N in flight, the current op's at the rest's cap, so that the last
# pages of an op (the stragglers the boundary waits for) do not queue behind the next op's.
# Prediction: ahead 1 within 1% of the best head K in every format, at rest 2 and 3.
source .devscripts/device-call.sh
H=build/tests/test_kernels_pdecode_phase
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4 bf16-split-r8; do
    VOX_PDECODE_INFLIGHT=2 step_row "round $r $(printf '%-14s' $cfg) rest 2, head N,K" \
      VOX_PDECODE_INFLIGHT_HEAD $H --timing-only $cfg -- 0,0 1,4 1,6 1,8
    for rest in 2 3 4; do
      VOX_PDECODE_INFLIGHT=$rest step_row "round $r $(printf '%-14s' $cfg) rest $rest, ahead N" \
        VOX_PDECODE_INFLIGHT_AHEAD $H --timing-only $cfg -- 0 1 2
    done
  done
  say "t $(el) s"
done
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in *H200*) source .devscripts/call2.sh ;; esac
say "end t $(el) s"
