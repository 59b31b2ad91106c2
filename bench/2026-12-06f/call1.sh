#!/bin/bash
# call 1 of 2026-12-06f (any card). On an H200 (unless its argument is `ab`): bench/2026-12-06e/call3.sh (the cap sweep and
# scripts/bench_gpu.py, issue 11's figures) on main's runner before this session's change
# (build/voxtral_runner_before, swapped in as build/voxtral_runner). Elsewhere: the small kernels'
# programmatic dependent launch (this session: RMSNorm/LayerNorm, RoPE + cache, SwiGLU, GELU/add,
# embed launched by vk_launch, each waiting in griddepcontrol.wait before its first read): the
# changed kernels' tests, the tiny models end to end with decode steps of 2+ rows op by op
# (VOX_PDECODE_ROWS=1), then scripts/batch_ab.py (256 x 30 s and 128 files of 3-30 s, two rounds)
# new against before.
# Prediction (NOTES-2026-12-06f section 2): ~120 small launches a batched decode step, each
# launched ~0.5-1.5 us earlier: decode stage -1.5 to -4%, encoder and prefill within -0.5%;
# every file's ids equal.
# Pack: cp build/voxtral_runner (before the change) /tmp/voxtral_runner_before; build; then
#   cp /tmp/voxtral_runner_before build/voxtral_runner_before && EXTRA_BINS="build/voxtral_runner_before
#   build/tests/test_kernels_norm build/tests/test_kernels_elementwise build/tests/test_kernels_misc
#   build/tests/test_kernels_fp8" bash .devscripts/pack.sh
source .devscripts/device-call.sh
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card/$1" in
*H200*/) # `call1.sh ab` runs the A/B below on an H200 too
  cp build/voxtral_runner build/voxtral_runner_pdl && cp build/voxtral_runner_before build/voxtral_runner
  bash .devscripts/call3.sh
  exit 0 ;;
esac
for t in test_kernels_norm test_kernels_elementwise test_kernels_misc test_kernels_fp8; do
  timeout 150 build/tests/$t > $OUT/$t.txt 2>&1
  say "$t rc $? $(grep -iE 'checks|failed' $OUT/$t.txt | tail -1) (t $(el) s)"
done
timeout 200 build/tests/test_cuda_backend > $OUT/test_cuda_backend.txt 2>&1
say "test_cuda_backend rc $? $(tail -1 $OUT/test_cuda_backend.txt) (t $(el) s)"
tiny_e2e 1 4
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
timeout $((560 - $(el))) python3 scripts/batch_ab.py --runner build/voxtral_runner --model models/full --rounds 2 \
  pdl=- before=RUNNER=build/voxtral_runner_before 2>&1 | tee $OUT/batch_ab.txt | tail -25
say "end t $(el) s"
