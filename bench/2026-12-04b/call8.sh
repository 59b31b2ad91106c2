#!/bin/bash
# call 8 (throwaway diagnostic): near-midpoint FP8 inputs of the awkward fp8 shape's q|k|v
source .devscripts/common.sh
FLIPDIAG=1 build/tests/test_kernels_pdecode --no-timing awkward > $OUT/flipdiag.txt 2>&1
grep -E "FLIPDIAG call [0-8]:|outside|checks" $OUT/flipdiag.txt | head -80
