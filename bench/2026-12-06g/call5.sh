#!/bin/bash
# call 5 of 2026-12-06g (any card; the budget's last ~270 s): call 4 cut to fit: the kernel test,
# then batch_ab for one round, then the backend test if time is left. Prediction as call 4.
source .devscripts/device-call.sh
timeout 60 build/tests/test_kernels_attention --no-timing > $OUT/test_kernels_attention.txt 2>&1
say "test_kernels_attention rc $? $(tail -1 $OUT/test_kernels_attention.txt) (t $(el) s)"
grep -E "FAIL" $OUT/test_kernels_attention.txt | head -8 | tee -a $OUT/summary.txt
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
timeout $((165 - $(el))) python3 scripts/batch_ab.py --runner build/voxtral_runner --model models/full --rounds 1 \
  rope=- before=RUNNER=build/voxtral_runner_before 2>&1 | tee $OUT/batch_ab.txt | tail -12
say "batch_ab done t $(el) s"
timeout $((175 - $(el))) build/tests/test_cuda_backend > $OUT/test_cuda_backend.txt 2>&1
say "test_cuda_backend rc $? $(tail -1 $OUT/test_cuda_backend.txt) (t $(el) s)"
say "end t $(el) s"
