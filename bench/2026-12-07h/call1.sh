#!/bin/bash
# call 1 of 2026-12-07h, any card, short (~150 s): what the landed code has not yet done on a GPU.
# 1. test_kernels_pdecode's checks of the integer in-flight caps (every step at another cap, the
#    tune check) and the tiny models end to end at 1 and 4 rows (this session's engine changes:
#    the encoder's stop check between layers, the export's staging).
# 2. The full-size step's cap sweep (1-8 pages, least of 5 rounds), bf16, FP8, 4 rows bf16.
#    Rule (NOTES-2026-12-07g): on an H200, if cap 3 is more than 1% slower than 2, put 2 back.
source .devscripts/device-call.sh
pdecode_checks
tiny_e2e 1 4
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '_')
for cfg in bf16-split fp8-split bf16-split-r4; do
  timeout 90 build/tests/test_kernels_pdecode --timing-only $cfg > $OUT/timing-$cfg.txt 2>&1
  grep -E "us a step|pages in flight" $OUT/timing-$cfg.txt | sed "s/^/$card $cfg: /" | tee -a $OUT/summary.txt
done
say "end t $(el) s"
