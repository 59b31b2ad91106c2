#!/bin/bash
# call 7: FP8 plain products up to 128 rows: the backend's checks
source .devscripts/common.sh
build/tests/test_kernels_fp8 2>&1 | grep -E "failed|FAIL|outside" | tail -5
build/tests/test_cuda_backend 2>&1 | tail -1
for m in tiny_model tiny_model_fp8; do printf "%s: " $m; build/tests/test_cuda_transcribe build/$m 2>&1 | tail -1; done
build/tests/test_engine_batch build/tiny_model_fp8 2>&1 | tail -1
