#!/bin/bash
# call 1 of 2026-12-07c, H200 only (the targets' card): the one-row in-flight cap 2 / 3 / 4
# (device-call.sh's cap_sweep, two rounds, ~20 s), then scripts/bench_gpu.py bf16 (issue 11's
# committed figures) with the cap best_cap picks, and FP8 (issue 10) with time left.
# FP8_UNTIL=S: the FP8 bench only if the call is under S seconds in (default 380; 0: bf16 alone).
# Rule (NOTES-2026-12-07b): land bench/2026-12-06/pdecode-inflight-by-device.patch if the pick is 3
# (>= 1% under cap 2 in both rounds). Prediction (bench/2026-12-06g/call1.sh): cap 3 -1 to -4% at
# one row; bf16 decode 2.156 -> ~2.07-2.12 ms/token, 30 s + 100 tokens 227 -> ~219-223 ms.
# Pack: `mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh
# bench/2026-12-07c/call1.sh .devscripts/ && bash .devscripts/pack.sh`; carry .devrun.tar.xz and
# .devscripts.
source .devscripts/device-call.sh
only_on H200
cap_sweep
cb=$(best_cap bf16-split); cf=$(best_cap fp8-split)
eb=; [ "$cb" != 2 ] && eb="VOX_PDECODE_INFLIGHT=$cb"
ef=; [ "$cf" != 2 ] && ef="VOX_PDECODE_INFLIGHT=$cf"
say "bench env: bf16 [$eb] FP8 [$ef]"
env $eb bash -c "source .devscripts/device-call.sh >/dev/null; bench_run gpu_bf16 scripts/bench_gpu.py \
  --size full --device cuda --runner-device cuda --build build --budget-s 150"
say "bf16 bench done t $(el) s"
if [ $(el) -lt ${FP8_UNTIL:-380} ]; then
  env $ef bash -c "source .devscripts/device-call.sh >/dev/null; bench_run gpu_fp8 scripts/bench_gpu.py \
    --size full --dtype fp8 --reuse --hf-batched off --device cuda --runner-device cuda --build build --budget-s 100"
  say "fp8 bench done t $(el) s"
fi
say "end t $(el) s"
