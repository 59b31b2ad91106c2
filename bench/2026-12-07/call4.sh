#!/bin/bash
# call 4 of 2026-12-07 (any card; ~300 s of device budget left, too little for the model and an
# A/B): call 3's checks alone, on the second form of vox_k_residual_add_norm: the kernel test
# with its timings (prediction: ~4.0-4.5 us at 24 x 3072 with 2 and 4 partials, from 5.7 and
# 7.0), then test_cuda_backend. Pack as call 3. Not run: too little budget was left to start a
# machine.
source .devscripts/device-call.sh
checked test_kernels_norm 120 build/tests/test_kernels_norm
grep -E "time residual|time rms_norm" $OUT/test_kernels_norm.txt | tee -a $OUT/summary.txt
checked test_cuda_backend 100 build/tests/test_cuda_backend
