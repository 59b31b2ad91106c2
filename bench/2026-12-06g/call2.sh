#!/bin/bash
# call 2 of 2026-12-06g (any card): RoPE and the cache write fused into the batched decode
# attention (kernels/attention.cu, vox_k_decode_attention_paged_rope; the backend's
# paged_attention_rope): the kernel test (every decode variant against the two launches it
# replaces, bit for bit, and the CPU reference), the backend test, the tiny models end to end with
# batched steps op by op (VOX_PDECODE_ROWS=1) and through the persistent kernel (4), then
# scripts/batch_ab.py (256 x 30 s and 128 files of 3-30 s, two rounds), new against before (main's
# runner at 657ed73).
# Prediction: 30 RoPE + cache launches fewer a batched step (~3-4 us each in the graph), a little
# more latency in the attention's blocks that write the new keys: decode stage -1 to -3% on both
# workloads, encoder and prefill within 0.5%, every file's ids equal.
# AB_LIMIT=S: batch_ab stops S seconds into the call (570).
# Pack: cp /tmp/voxtral_runner_before build/voxtral_runner_before && EXTRA_BINS=build/voxtral_runner_before bash .devscripts/pack.sh
source .devscripts/device-call.sh
timeout 240 build/tests/test_kernels_attention --no-timing > $OUT/test_kernels_attention.txt 2>&1
say "test_kernels_attention rc $? $(tail -1 $OUT/test_kernels_attention.txt) (t $(el) s)"
grep -E "FAIL" $OUT/test_kernels_attention.txt | head -8 | tee -a $OUT/summary.txt
timeout 200 build/tests/test_cuda_backend > $OUT/test_cuda_backend.txt 2>&1
say "test_cuda_backend rc $? $(tail -1 $OUT/test_cuda_backend.txt) (t $(el) s)"
grep -E "FAIL" $OUT/test_cuda_backend.txt | head -8 | tee -a $OUT/summary.txt
tiny_e2e 1 4
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
timeout $((${AB_LIMIT:-570} - $(el))) python3 scripts/batch_ab.py --runner build/voxtral_runner --model models/full --rounds 2 \
  rope=- before=RUNNER=build/voxtral_runner_before 2>&1 | tee $OUT/batch_ab.txt | tail -25
say "end t $(el) s"
