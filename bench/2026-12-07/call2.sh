#!/bin/bash
# call 2 of 2026-12-07 (any card): the K-sliced residual projections (cuda.c's sliced_residual,
# kernels/norm.cu's vox_k_residual_add_norm): o and down of 5 to 32 rows as K / 2048 slices with
# fp32 partials, whose sum, the residual add and the next RMSNorm are one kernel.
# Checks: test_kernels_norm (the kernel against the host sum and vox_k_rms_norm, bit for bit, and
# the CPU reference), test_cuda_backend (the projection against the separate operations), the
# tiny model end to end with slices of 64 (batched steps of 5 to 9 rows sliced).
# Then scripts/batch_ab.py, sliced (default) against VOX_KSLICE_ROWS=0 in the same binary, two
# rounds: 48 x 30 s at --batch-size 24 (steps of 24 rows, where it applies), then the standard
# 256 x 30 s and 128 mixed files.
# Prediction (NOTES-2026-12-06g section 4, H100 probe): the 24-row step's decode -3 to -5% (o
# -1.7 us, down -2.9 us a layer, the separate RMSNorms gone, one reduce kernel each); 256 x 30 s
# unchanged (no step of <= 32 rows); 128 mixed decode -1 to -2% (its tail); ids equal.
# Then (~15 s) the K-sliced probe of q|k|v and gate|up (today's choice, 2 and 3 slices, 8 to 32
# rows): whether q|k|v's split-K reduction could go the same way, into the RoPE kernel.
# Pack: `EXTRA_BINS="build/tests/test_kernels_norm build/tests/time_gemm_algos" bash .devscripts/pack.sh`.
source .devscripts/device-call.sh
timeout 120 build/tests/test_kernels_norm > $OUT/test_kernels_norm.txt 2>&1
say "test_kernels_norm rc $? $(tail -1 $OUT/test_kernels_norm.txt) (t $(el) s)"
grep -E "FAIL" $OUT/test_kernels_norm.txt | head -8 | tee -a $OUT/summary.txt
grep -E "time residual|time rms_norm" $OUT/test_kernels_norm.txt | tee -a $OUT/summary.txt
timeout 200 build/tests/test_cuda_backend > $OUT/test_cuda_backend.txt 2>&1
say "test_cuda_backend rc $? $(tail -1 $OUT/test_cuda_backend.txt) (t $(el) s)"
grep -E "FAIL" $OUT/test_cuda_backend.txt | head -8 | tee -a $OUT/summary.txt
VOX_KSLICE_DEPTH=64 VOX_PDECODE_ROWS=1 timeout 150 build/tests/test_cuda_transcribe build/tiny_model \
  > $OUT/e2e-kslice.txt 2>&1
say "e2e tiny kslice rc $? $(grep -E 'checks' $OUT/e2e-kslice.txt | tail -1) (t $(el) s)"
grep -E "FAIL" $OUT/e2e-kslice.txt | head -8 | tee -a $OUT/summary.txt
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
timeout $((300 - $(el))) python3 scripts/batch_ab.py --runner build/voxtral_runner --model models/full \
  --large 48 --mixed 0 --batch-size 24 --work models/batch-ab --rounds 2 \
  kslice=- off=VOX_KSLICE_ROWS=0 2>&1 | tee $OUT/batch_ab_24.txt | tail -12
say "24-row A/B done t $(el) s"
timeout $((550 - $(el))) python3 scripts/batch_ab.py --runner build/voxtral_runner --model models/full \
  --rounds 2 kslice=- off=VOX_KSLICE_ROWS=0 2>&1 | tee $OUT/batch_ab.txt | tail -16
for sh in qkv "gate|up"; do
  for ks in 0 2 3; do
    if [ $ks = 0 ]; then a=(); else a=(--k-slices $ks); fi
    timeout 30 build/tests/time_gemm_algos --first "${a[@]}" --shape "$sh" 8 16 24 32 2>&1 | grep "M=" | \
      sed 's/| all:.*//' | tee -a $OUT/summary.txt
  done
done
say "end t $(el) s"
