#!/bin/bash
# call 3 of 2026-12-07g, H200 only (the targets' card): the full-size step's cap sweep (1-8 pages,
# bf16 and FP8, least of 5 rounds), then scripts/bench_gpu.py bf16 with the default cap (3), and
# FP8 with the time left (FP8_UNTIL=S: only if under S s into the call; default 330).
# Prediction (bench/NOTES-2026-12-07g.md): cap 3 at or under 2 on the H200 (the 1-page cliff moves
# up with a SM's bandwidth); bf16 decode 2.156 -> 2.09-2.15 ms/token, 30 s + 100 tokens 227 ->
# 221-227 ms.
source .devscripts/device-call.sh
only_on H200
for cfg in bf16-split fp8-split bf16-split-r4; do
  timeout 90 build/tests/test_kernels_pdecode --timing-only $cfg > $OUT/h200-timing-$cfg.txt 2>&1
  grep -E "us a step|pages in flight" $OUT/h200-timing-$cfg.txt | sed "s/^/H200 $cfg: /" | tee -a $OUT/summary.txt
done
bench_run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 150
say "bf16 bench done t $(el) s"
if [ $(el) -lt ${FP8_UNTIL:-330} ]; then
  bench_run gpu_fp8 scripts/bench_gpu.py --size full --dtype fp8 --reuse --hf-batched off --device cuda \
    --runner-device cuda --build build --budget-s 100
  say "fp8 bench done t $(el) s"
fi
say "end t $(el) s"
