#!/bin/bash
# Builds the binaries of the one-row kernel as it was before the batched instance (5cec6a6), for
# the device calls' A/B against main: build/tests/test_kernels_pdecode_base and
# build/base/voxtral_runner; with PAIRS=1 also 2026-12-05b's mma-pairs variants on that base
# (build/tests/test_kernels_pdecode_{pairs,x16,nc}, build/tests/test_cuda_transcribe_*,
# build/voxtral_runner_*: bench/2026-12-05b/call2.sh's binaries; the patches are against 5cec6a6's
# pdecode.cu). In a git worktree under /tmp, so that main's tree and build/ are left alone.
#   bash bench/2026-12-05c/build_base.sh          # ~6 min on 2 cores
set -euo pipefail
cd "$(dirname "$0")/../.."
base=${BASE:-5cec6a6}
wt=/tmp/vox-base-$base
[ -d "$wt" ] || git worktree add --detach "$wt" "$base" >/dev/null
cmake -S "$wt" -B "$wt/build" -DVOX_CUDA_ARCHITECTURES=90-real -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$wt/build" -j2 --target test_kernels_pdecode voxtral_runner test_cuda_transcribe >/dev/null
mkdir -p build/base build/tests
cp "$wt/build/tests/test_kernels_pdecode" build/tests/test_kernels_pdecode_base
cp "$wt/build/voxtral_runner" build/base/voxtral_runner
echo "built base $base"
if [ "${PAIRS:-0}" = 1 ]; then
    p=bench/2026-12-05b
    (cd "$wt" && VARIANT_RUNNER=1 bash bench/2026-12-04e/build_variants.sh pairs=$p/pdecode-mma-pairs.patch \
        x16=$p/pdecode-mma-pairs.patch+$p/pdecode-mma-pairs-x16.patch \
        nc=$p/pdecode-mma-pairs.patch+$p/pdecode-mma-pairs-x16.patch+$p/pdecode-mma-pairs-nc.patch)
    for v in pairs x16 nc; do
        cp "$wt/build/tests/test_kernels_pdecode_$v" "$wt/build/tests/test_cuda_transcribe_$v" build/tests/
        cp "$wt/build/voxtral_runner_$v" build/
    done
    echo "built the pairs variants on $base"
fi
