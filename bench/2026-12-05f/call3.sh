#!/bin/bash
# call 3 of 2026-12-05f: the batching benchmark on main (c1dcf40), transformers in the same run,
# bf16 (bench/2026-12-04e/call2.sh, for the README's batch table: its last run is 2026-12-04's,
# before the prompt order by budget, the 4-row default and the staged keys). H200 only: the
# targets are the H200's, so on another card the call stops at once.
# Prediction: 256 x 30 s RTFx ~2000 over the stages (nothing in it changed but the last steps),
# 128 mixed 817 -> ~835 (NOTES-2026-12-04c section 4: the prompt order, ~20 fewer steps).
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in *H200*) ;; *) echo "card $card: not an H200, nothing run"; exit 0 ;; esac
bash .devscripts/call2-bench.sh bf16
