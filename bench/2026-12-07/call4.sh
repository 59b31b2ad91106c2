#!/bin/bash
# call 4 of 2026-12-07 (any card; ~300 s of device budget left, too little for the model and an
# A/B): call 3's checks alone, on the second form of vox_k_residual_add_norm: the kernel test
# with its timings (prediction: ~4.0-4.5 us at 24 x 3072 with 2 and 4 partials, from 5.7 and
# 7.0), then test_cuda_backend. Pack as call 3. Not run: too little budget was left to start a
# machine.
source .devscripts/device-call.sh
timeout 120 build/tests/test_kernels_norm > $OUT/test_kernels_norm.txt 2>&1
say "test_kernels_norm rc $? $(tail -1 $OUT/test_kernels_norm.txt) (t $(el) s)"
grep -E "FAIL" $OUT/test_kernels_norm.txt | head -8 | tee -a $OUT/summary.txt
grep -E "time residual|time rms_norm" $OUT/test_kernels_norm.txt | tee -a $OUT/summary.txt
timeout 100 build/tests/test_cuda_backend > $OUT/test_cuda_backend.txt 2>&1
say "test_cuda_backend rc $? $(tail -1 $OUT/test_cuda_backend.txt) (t $(el) s)"
grep -E "FAIL" $OUT/test_cuda_backend.txt | head -8 | tee -a $OUT/summary.txt
