#!/bin/bash
# pack the binaries, their libraries and the tiny models for the device
set -e
cd /work/main
BINS="build/tests/test_kernels_pdecode build/voxtral_runner build/voxtral_export build/tests/test_cuda_transcribe build/tests/test_cuda_backend build/tests/test_kernels_attention $EXTRA_BINS"
../shared/tools/device-bundle $BINS >/dev/null
tar -cJf .devrun.tar.xz $BINS .devlibs build/tiny_model build/tiny_model_fp8 build/CMakeCache.txt
ls -la .devrun.tar.xz
