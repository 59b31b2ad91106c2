#!/bin/bash
# call 2 of 2026-12-06 (H200 only): call1.sh's cap sweep alone, for the last ~250 s of the
# session's device budget (bench_gpu does not fit): VOX_PDECODE_INFLIGHT 0 / 2 / 3 / 4 on main's
# test_kernels_pdecode, one row and 4 rows, bf16 and FP8, two rounds. Prediction as call1.sh: 2
# against 0 -8 to -11%; 3 within +-1.5% of 2 (Little's law: ~3 pages a block on an H200). If 3 is
# >= 1% under 2 at one row in both formats, pdecode-inflight-by-device.patch is worth landing.
# With its variant binary packed (`bash bench/2026-12-04e/build_variants.sh
# bydev=bench/2026-12-06/pdecode-inflight-by-device.patch`, EXTRA_BINS=build/tests/test_kernels_pdecode_bydev),
# its default (no VOX_PDECODE_INFLIGHT) is timed too: it should equal its cap-3 figure on an H200.
source .devscripts/device-call.sh
only_on H200
say "memory clock max $(nvidia-smi --query-gpu=clocks.max.memory --format=csv,noheader)"
H=build/tests/test_kernels_pdecode
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4; do
    step_row "round $r cap $(printf '%-14s' $cfg)" VOX_PDECODE_INFLIGHT $H --timing-only $cfg -- 0 2 3 4
  done
done
# the by-device binary: its default (an empty VOX_PDECODE_INFLIGHT counts as unset), then 3 and 2
B=build/tests/test_kernels_pdecode_bydev
if [ -x $B ]; then
  for cfg in bf16-split fp8-split; do
    step_row "by device $(printf '%-14s' $cfg)" VOX_PDECODE_INFLIGHT $B --timing-only $cfg -- "" 3 2
  done
fi
