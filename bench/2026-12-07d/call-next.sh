#!/bin/bash
# (Run 2026-12-07e at 4bbc148, NOTES-2026-12-07e.md; the wide ops were removed from main in fd697ce:
# check out 4bbc148 to run this again.)
# The next device call for the wide ops (prepared 2026-12-07d, not run; any H100 or H200, ~3 min).
# 1. test_kernels_wide_ops as committed: its checks (the chain o -> gate|up -> down and the
#    bf16x2 RMSNorm have never run) and its timing table, chained layers included.
#    Predictions (H100, 32 rows): gate|up with the norm from 1.98 toward ~2.3 TB/s (norm_input's
#    one bf16x2 multiply and no work past R); a chained layer ~10-20 us over the unchained 116 us
#    (five waits, ~2-4 us each, partly hidden by the copiers' ring).
#    The RMSNorm as an op of its own (EPI_NORM, "norm pass" lines): staging becomes a copy, at
#    the cost of two more ops (and, chained, two more waits) a layer. Prediction: unchained, within
#    ~5 us of the no-RMSNorm layer (99.6 us at 32 rows); chained, better than the in-stager norm
#    chained if a wait costs less than ~8 us.
#    Every check and timing line runs twice: the copiers' cp.async, then their tensor copies (TMA,
#    one thread, two 64 x 64 boxes a k-block). Prediction: TMA's weights stream faster, as the
#    one-row kernel's bulk copies do (~3.1 TB/s on an H100 against the probe's 2.5-2.7 with
#    cp.async): the no-RMSNorm gate|up 2.7 -> ~2.9-3.0 TB/s.
#    The attention as an op of the wide kernel (EPI_ATTN, the stagers' warps, a warp a (row, kv
#    head, 64 keys)): checked against the exact softmax, then timed in a whole chained layer
#    (q|k|v -> attention -> o -> norm -> gate|up -> down). Prediction: the attention adds ~15-25
#    us a layer at 32 rows and 330 keys (43 MB of K/V at ~2-3 TB/s), against ~23 us for the
#    op-by-op decode attention at 24 rows under the profiler.
#    The LM head as the kernel's op (EPI_STORE with the final norm, 1024 tiles): prediction at
#    or above cuBLASLt's 2.77 TB/s (291 us at 32 rows on an H100), since one op of 805 MB has a
#    single ramp.
# 2. The ring-depth sweep (build_variants.sh): if the RMSNorm's cost is the stagers' latency in
#    series with the copies (NOTES-2026-12-07d section 3), kAhead 6-8 with more input buffers
#    closes most of the gap to the no-norm rate (2.7 TB/s); if it does not move, the cost is
#    throughput, and normalising once a layer (section 4, item 2) is the way.
# 3. compute-sanitizer memcheck, racecheck and synccheck on the small cases (WIDE_OPS_SMALL=1).
# Build: cmake --build build && bash bench/2026-12-07d/build_variants.sh. Pack: mkdir -p .devscripts
# && cp bench/device-call.sh bench/2026-12-04c/pack.sh bench/2026-12-07d/call-next.sh .devscripts/ &&
# EXTRA_BINS="build/tests/test_kernels_wide_ops build/tests/test_kernels_wide_ops_a3_b7_w8
# build/tests/test_kernels_wide_ops_a6_b10_w8 build/tests/test_kernels_wide_ops_a8_b12_w7" bash
# .devscripts/pack.sh; carry .devrun.tar.xz and .devscripts; run `bash .devscripts/call-next.sh`.
source .devscripts/device-call.sh
for b in "" _a3_b7_w8 _a6_b10_w8 _a8_b12_w7; do
  small=; [ -n "$b" ] && small=1 # the variants: the small checks, then the timing
  WIDE_OPS_SMALL=$small timeout 150 build/tests/test_kernels_wide_ops$b > $OUT/wide_ops$b.txt 2>&1
  say "wide_ops$b rc $? $(tail -1 $OUT/wide_ops$b.txt) (t $(el) s)"
  grep -E "FAIL|outside|wrong|error|chain:" $OUT/wide_ops$b.txt | head -12 | tee -a $OUT/summary.txt
  grep -E "^time" $OUT/wide_ops$b.txt | tee -a $OUT/summary.txt
done
for tool in memcheck synccheck racecheck; do
  extra=; [ $tool = racecheck ] && extra="--racecheck-report analysis"
  [ $(( $(el) + 120 )) -gt 580 ] && { say "skip $tool (t $(el) s)"; continue; }
  WIDE_OPS_SMALL=1 timeout 120 compute-sanitizer --tool $tool $extra build/tests/test_kernels_wide_ops --no-timing \
    > $OUT/$tool-wide.log 2>&1
  say "$tool wide_ops (small) rc $? $(grep -E 'SUMMARY|checks,' $OUT/$tool-wide.log | tr '\n' ' ') (t $(el) s)"
done
