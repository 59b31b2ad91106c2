#!/bin/bash
# call 2 of 2026-12-06f (any card). On an H200 (unless its argument is `ab`): bench/2026-12-06e/
# call3.sh (the cap sweep and scripts/bench_gpu.py, issue 11's figures) on main's runner before
# this session's change (build/voxtral_runner_before, swapped in). Elsewhere: decode-only steps of
# 1-4 sequences never padded onto the GEMM path's recordings (src/pipeline/graphs.c, this
# session): the tiny models end to end, then scripts/batch_ab.py new against before on 8 files
# of 3-30 s (three rounds, step traces kept) and on 128 (two rounds).
# Prediction (NOTES-2026-12-06f section 3): 8 files: the steps of 1-4 rows from ~3.9 ms (padded
# onto the 8-row recording) to ~2.7-3.2 (the persistent kernel), for up to 16 steps a bucket:
# decode stage -3 to -7%; 128 files: -0.5 to -1% (~10 such steps of 275); every file's ids equal.
# Pack: EXTRA_BINS=build/voxtral_runner_before bash .devscripts/pack.sh (voxtral_runner_before:
# main's runner before the change).
source .devscripts/device-call.sh
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card/$1" in
*H200*/)
  cp build/voxtral_runner build/voxtral_runner_new && cp build/voxtral_runner_before build/voxtral_runner
  bash .devscripts/call3.sh
  exit 0 ;;
esac
tiny_e2e 1 4
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
mkdir -p $OUT/traces8
timeout $((520 - $(el))) python3 scripts/batch_ab.py --runner build/voxtral_runner --model models/full --rounds 3 \
  --large 0 --mixed 8 --work models/ab8 --trace-dir $OUT/traces8 new=- before=RUNNER=build/voxtral_runner_before 2>&1 | tee $OUT/batch_ab8.txt | tail -12
say "8 files done t $(el) s"
timeout $((560 - $(el))) python3 scripts/batch_ab.py --runner build/voxtral_runner --model models/full --rounds 2 \
  --large 0 --mixed 128 new=- before=RUNNER=build/voxtral_runner_before 2>&1 | tee $OUT/batch_ab128.txt | tail -10
say "end t $(el) s"
