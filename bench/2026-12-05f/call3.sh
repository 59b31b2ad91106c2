#!/bin/bash
# call 3 of 2026-12-05f: the batching benchmark on main (c1dcf40), transformers in the same run,
# bf16 (as bench/2026-12-04e/call2.sh, for the README's batch table: its last run is 2026-12-04's,
# before the prompt order by budget, the 4-row default and the staged keys). H200 only: the
# targets are the H200's, so on another card the call stops at once.
# Prediction: 256 x 30 s RTFx ~2000 over the stages (nothing in it changed but the last steps),
# 128 mixed 817 -> ~835 (NOTES-2026-12-04c section 4: the prompt order, ~20 fewer steps).
source .devscripts/device-call.sh
only_on H200
bench_run bench scripts/bench_batch.py --size full --dtype bf16 --device cuda --runner-device cuda \
  --build build --budget-s 430 --deadline-s 460
