#!/bin/bash
# call 2 of 2026-12-07b (any card): the fused RoPE's second form (bench/2026-12-06g/call4.sh's
# A/B, its prediction there: decode stage -1 to -2.5% on 256 x 30 s and 128 files of 3-30 s,
# ids equal). The patched build's binaries are in build-rope/ (main with
# bench/2026-12-06g/decode-attention-rope.patch applied); main's runner is build/voxtral_runner.
# Pack: as call 1, with EXTRA_BINS adding build-rope/voxtral_runner,
# build-rope/tests/test_kernels_attention, test_cuda_backend and test_cuda_transcribe.
source .devscripts/device-call.sh
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
timeout $((${AB_LIMIT:-570} - $(el))) python3 scripts/batch_ab.py --runner $R/voxtral_runner --model models/full \
  --rounds 2 rope=- main=RUNNER=build/voxtral_runner 2>&1 | tee $OUT/batch_ab_rope.txt | tail -25
say "end t $(el) s"
