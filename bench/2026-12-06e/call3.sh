#!/bin/bash
# call 3 of 2026-12-06e, H200 only (the targets' card; elsewhere it stops at once: the probe's H100 figures are in): the hand-off
# probe (seconds; with its reduce64 mode, section 3 of NOTES-2026-12-06e), the one-row in-flight cap (2 against 3, bf16 and FP8, two rounds; 3 where it is
# >= 1% under 2 in both), then scripts/bench_gpu.py bf16 with that cap (issue 11's figures) and,
# time allowing, FP8 (issue 10's). Predictions (2026-12-06d): bf16 decode 2.334 -> ~2.03
# ms/token, 30 s + 100 tokens 244 -> ~215 ms; FP8 1.846 -> ~1.57-1.59; cap 3 within -2% .. +1%.
# Pack: as call 1 (main's binaries are unchanged since: the step ahead was reverted).
source .devscripts/device-call.sh
only_on H200
[ -x build/tests/handoff_probe ] && timeout 60 build/tests/handoff_probe 2>&1 | tee -a $OUT/summary.txt
H=build/tests/test_kernels_pdecode
for r in 1 2; do
  for cfg in bf16-split fp8-split; do step_row "round $r cap $cfg" VOX_PDECODE_INFLIGHT $H --timing-only $cfg -- 2 3; done
done
cb=$(best_cap bf16-split); cf=$(best_cap fp8-split)
say "bench caps: bf16 $cb, FP8 $cf (t $(el) s)"
VOX_PDECODE_INFLIGHT=$cb bench_run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 150
say "bf16 bench done t $(el) s"
if [ $(el) -lt 330 ]; then
  VOX_PDECODE_INFLIGHT=$cf bench_run gpu_fp8 scripts/bench_gpu.py --size full --dtype fp8 --reuse --hf-batched off \
    --device cuda --runner-device cuda --build build --budget-s 100
  say "fp8 bench done t $(el) s"
fi
say "end t $(el) s"
