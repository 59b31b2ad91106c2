#!/bin/bash
# call 4 of 2026-12-07b (any card): everything that waits for a device, in one call, so that one
# machine start (the scarce thing: none of 2026-12-07b's 18 requests started one) decides all of
# it with one full model made. ~450 s.
#  1. H200 only: the one-row in-flight cap 2 / 3 / 4 at main's heads, two rounds (issue 11; rule:
#     land bench/2026-12-06/pdecode-inflight-by-device.patch if 3 is >= 1% under 2 in both
#     rounds at one row: the "best cap" line, device-call.sh's best_cap), and after the model
#     scripts/decode_ab.py bf16 30 s + 100 tokens, cap 2/3/4.
#     Prediction (bench/2026-12-06g/call1.sh): cap 3 -1 to -4% at one row; 2.156 -> ~2.07-2.12
#     ms/token.
#  2. The K-sliced residual projections' second form (bench/2026-12-07/call3.sh): test_kernels_norm
#     (its residual_add_norm timings: prediction ~4.0-4.5 us with 2 and 4 partials at 24 x 3072),
#     test_cuda_backend, the tiny model end to end sliced. Prediction: decode of 24-row steps -2 to
#     -3% against off, 128 mixed -0.5 to -1%, ids equal.
#  3. The fused RoPE's second form (build-rope/: main + bench/2026-12-06g/decode-attention-rope.patch):
#     its kernel and backend tests, the tiny models at rows 1 and 4. Prediction: decode stage -1 to
#     -2.5% on 256 x 30 s and 128 mixed files, ids equal.
#  4. One scripts/batch_ab.py over 48 x 30 s at --batch-size 24 (3 rounds; arms: main, kslice, rope,
#     both), then one over 256 x 30 s and 128 mixed files (2 rounds; main, kslice, rope) until
#     LIMIT (570 s into the call).
# Pack: `mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh
# bench/2026-12-07b/call4.sh .devscripts/ && EXTRA_BINS="build/tests/test_kernels_norm
# build-rope/voxtral_runner build-rope/tests/test_kernels_attention build-rope/tests/test_cuda_backend
# build-rope/tests/test_cuda_transcribe" bash .devscripts/pack.sh` (build-rope/: the patched tree's
# binaries, ~35 MB packed; with the tracked files ~62 of the 64 MiB carry).
source .devscripts/device-call.sh
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
h200=0; case "$card" in *H200*) h200=1 ;; esac
[ $h200 = 1 ] && cap_sweep
checked test_kernels_norm 120 build/tests/test_kernels_norm
grep -E "time residual|time rms_norm" $OUT/test_kernels_norm.txt | tee -a $OUT/summary.txt
checked test_cuda_backend 200 build/tests/test_cuda_backend
VOX_KSLICE_ROWS=32 VOX_KSLICE_DEPTH=64 VOX_PDECODE_ROWS=1 checked e2e-kslice 150 \
  build/tests/test_cuda_transcribe build/tiny_model
R=build-rope
checked test_kernels_attention-rope 240 $R/tests/test_kernels_attention --no-timing
checked test_cuda_backend-rope 200 $R/tests/test_cuda_backend
for m in tiny_model tiny_model_fp8; do
  for rows in 1 4; do
    VOX_PDECODE_ROWS=$rows checked e2e-rope-$m-$rows 100 $R/tests/test_cuda_transcribe build/$m
  done
done
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
if [ $h200 = 1 ]; then
  timeout 90 python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --repeats 4 \
    --rounds 2 cap2=- cap3=VOX_PDECODE_INFLIGHT=3 cap4=VOX_PDECODE_INFLIGHT=4 2>&1 \
    | tee $OUT/decode_ab.txt | tail -8
  say "decode_ab t $(el) s"
fi
timeout $((${LIMIT:-570} - 150 - $(el))) python3 scripts/batch_ab.py --runner build/voxtral_runner \
  --model models/full --large 48 --mixed 0 --batch-size 24 --work models/batch-ab --rounds 3 \
  main=VOX_KSLICE_ROWS=0 kslice=VOX_KSLICE_ROWS=32 rope=RUNNER=$R/voxtral_runner,VOX_KSLICE_ROWS=0 \
  both=RUNNER=$R/voxtral_runner,VOX_KSLICE_ROWS=32 2>&1 | tee $OUT/batch_ab_24.txt | tail -7
say "24-row A/B t $(el) s"
timeout $((${LIMIT:-570} - $(el))) python3 scripts/batch_ab.py --runner build/voxtral_runner \
  --model models/full --rounds 2 main=VOX_KSLICE_ROWS=0 kslice=VOX_KSLICE_ROWS=32 \
  rope=RUNNER=$R/voxtral_runner,VOX_KSLICE_ROWS=0 2>&1 | tee $OUT/batch_ab.txt | tail -9
say "end t $(el) s"
