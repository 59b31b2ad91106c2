#!/bin/bash
# Builds one test_kernels_pdecode (and, with VARIANT_RUNNER=1, one voxtral_runner and one
# test_cuda_transcribe) per kernel
# variant, for an A/B inside one device call: build/tests/test_kernels_pdecode_NAME for each
# NAME=PATCH[+PATCH...] argument, the patches applied in place, built in build/, copied, then
# reverted (the plain binaries are HEAD's again at the end).
#   bash bench/2026-12-04e/build_variants.sh pad=bench/2026-12-04e/pdecode-ring-padding.patch \
#        all=bench/2026-12-04e/pdecode-ring-padding.patch+bench/2026-12-04d/pdecode-half-pages.patch
# Stops where a file a patch touches has changes of its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
targets=test_kernels_pdecode
[ "${VARIANT_RUNNER:-0}" = 1 ] && targets="$targets voxtral_runner test_cuda_transcribe"
touched=()
restore() { [ ${#touched[@]} -eq 0 ] || git checkout -q -- "${touched[@]}"; }
trap restore EXIT
for spec in "$@"; do
    name=${spec%%=*}
    IFS=+ read -r -a patches <<<"${spec#*=}"
    touched=()
    for p in "${patches[@]}"; do
        while IFS=$'\t' read -r _ _ f; do touched+=("$f"); done < <(git apply --numstat "$p")
    done
    if ! git diff --quiet -- "${touched[@]}"; then
        echo "build_variants: ${touched[*]} has uncommitted changes; commit or stash them" >&2
        touched=()
        exit 1
    fi
    for p in "${patches[@]}"; do git apply "$p"; done
    cmake --build build -j2 --target $targets >/dev/null
    cp build/tests/test_kernels_pdecode "build/tests/test_kernels_pdecode_$name"
    if [ "${VARIANT_RUNNER:-0}" = 1 ]; then
        cp build/voxtral_runner "build/voxtral_runner_$name"
        cp build/tests/test_cuda_transcribe "build/tests/test_cuda_transcribe_$name"
    fi
    echo "built $name: ${patches[*]}"
    restore
    touched=()
done
cmake --build build -j2 --target $targets >/dev/null # HEAD's binaries again
echo "built HEAD"
