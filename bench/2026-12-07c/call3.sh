#!/bin/bash
# call 3 of 2026-12-07c (any card): the wide consumer probe (bench/DESIGN-wide-persistent-decode.md
# section 5: its checks, then its timing table), then on an H200 call1.sh (the in-flight cap
# sweep and the bf16 bench; FP8_UNTIL as there).
# Predictions (the design's section 5): on an H200 gate|up >= 3.5 TB/s of weights at 64 rows and
# >= 3.0 at 128; o at 128 rows with 4 slices >= 2.8 (cuBLASLt: 2.2, NOTES-2026-12-02-decode-
# attention.md section 1); on an H100 ~80% of each. Below them, the wide step cannot beat today's
# by the design's margin.
# Pack: `mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh
# bench/2026-12-07c/call1.sh bench/2026-12-07c/call3.sh .devscripts/ &&
# EXTRA_BINS=build/tests/probe_wide_consumer bash .devscripts/pack.sh`; carry .devrun.tar.xz and
# .devscripts.
source .devscripts/device-call.sh
timeout 120 build/tests/probe_wide_consumer > $OUT/probe.txt 2>&1
say "probe rc $? $(tail -1 $OUT/probe.txt) (t $(el) s)"
grep -E "^check|^time|FAIL" $OUT/probe.txt | tee -a $OUT/summary.txt
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in *H200*) bash .devscripts/call1.sh ;; esac
