#!/bin/bash
# call 11 of 2026-12-05f (prepared for the next session, not run): the in-flight cap by phase.
# What the op boundary needs is few bytes in flight while it hands over; the middle of a long op
# may want more (an H200 reads ~1.4x faster a SM than an H100, whose best uniform cap was 2:
# NOTES-2026-12-05f section 2). pdecode-inflight-head-experiment.patch (variant `head`):
# VOX_PDECODE_INFLIGHT_HEAD=N,K caps an op's first K pages at N in flight (the ones copied while
# the boundary before the op hands over), the rest at VOX_PDECODE_INFLIGHT. Built with
#   bash bench/2026-12-04e/build_variants.sh head=bench/2026-12-05f/pdecode-inflight-head-experiment.patch
# packed with EXTRA_BINS=build/tests/test_kernels_pdecode_head.
# Prediction: on an H100, head 1 over 2-4 pages with the rest at 2 or 3 within -3% of the uniform
# 2; on an H200 the rest at 3 with head 1-2 best, -2 to -5% against the uniform 2. Its checks
# first (the cap moves when pages land, not what is summed, so they pass if nothing hangs), and
# racecheck on the awkward shapes (main's binary; the one known FP8 check of a filtered run fails). ~5 min.
source .devscripts/device-call.sh
H=build/tests/test_kernels_pdecode_head
timeout 200 $H --no-timing > $OUT/checks.txt 2>&1; say "checks head rc $? $(tail -1 $OUT/checks.txt) (t $(el) s)"
# left from c1dcf40 (the staged keys): racecheck where the one-row head_dim-64 instances stage
VOX_PDECODE_WATCHDOG_S=900 timeout 200 compute-sanitizer --tool racecheck --racecheck-report analysis \
  build/tests/test_kernels_pdecode --no-timing awkward split > $OUT/racecheck-awkward.log 2>&1
say "racecheck awkward rc $? $(grep -E 'SUMMARY|checks,' $OUT/racecheck-awkward.log | tr '\n' ' ') (t $(el) s)"
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4; do
    for mid in 2 3 4; do
      VOX_PDECODE_INFLIGHT=$mid step_row "round $r $(printf '%-14s' $cfg) rest $mid, head N,K" \
        VOX_PDECODE_INFLIGHT_HEAD $H --timing-only $cfg -- 0,0 1,2 1,4 2,2 2,4
    done
  done
done
say "end t $(el) s"
