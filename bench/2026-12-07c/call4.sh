#!/bin/bash
# call 4 of 2026-12-07c (any card; prepared, not run): the wide consumer probe's four forms, each
# its checks then its timing table (~15 s each), then on an H200 call1.sh (the in-flight cap sweep
# and the bf16 bench; FP8_UNTIL as there).
# - main: 128-row tiles, the input copied by the producer (results 4: the H100's figures);
# - bn256: 256-row tiles (bench/2026-12-07c/probe-bn256.patch). Rule (DESIGN-wide-persistent-
#   decode.md section 5): if the 128-row rate reaches >= 3.3 TB/s on an H200 (~2.7 on an H100,
#   against main's 2.5), the wide step's unit is 256 rows; if not, the ceiling is not L2's;
# - staged: the input staged by the consumers, RMSNorm-like (probe-staged.patch). Prediction:
#   at 32 and 64 rows the weights' rate within 5% of main's (2.6-2.9 TB/s on an H100), since the
#   staging of k-block j + 1 runs under j's group; if it falls further, the staging needs its own
#   warpgroup or the producer's copies;
# - fixup: the last unit of a tile adds its slices to a residual (probe-fixup.patch), o with 4 and
#   down with 8 slices. Prediction: streamed within 5% of the partials-only rate at 32 and 64
#   rows (a tile's fix-up reads S x R x 128 x 4 bytes from L2 on one block while the others
#   stream); at 128 rows more, the L2 ceiling again.
# Build: `bash bench/2026-12-07c/build_probes.sh`. Pack: `mkdir -p .devscripts && cp
# bench/device-call.sh bench/2026-12-04c/pack.sh bench/2026-12-07c/call1.sh bench/2026-12-07c/call4.sh
# .devscripts/ && EXTRA_BINS="build/tests/probe_wide_consumer build/tests/probe_wide_consumer_bn256
# build/tests/probe_wide_consumer_staged build/tests/probe_wide_consumer_fixup
# build/tests/time_gemm_algos" bash
# .devscripts/pack.sh`; carry .devrun.tar.xz and .devscripts.
source .devscripts/device-call.sh
for v in "" _bn256 _staged _fixup; do
  timeout 120 build/tests/probe_wide_consumer$v > $OUT/probe$v.txt 2>&1
  say "probe$v rc $? $(tail -1 $OUT/probe$v.txt) (t $(el) s)"
  grep -E "FAIL" $OUT/probe$v.txt | head -5 | tee -a $OUT/summary.txt
  grep -E "^time" $OUT/probe$v.txt | tee -a $OUT/summary.txt
done
# cuBLASLt at the same shapes on the same card: the op-by-op path the wide step must beat (the
# heuristic's choice, as the backend runs it)
timeout 120 build/tests/time_gemm_algos --first 32 64 128 2>&1 | tee $OUT/cublaslt.txt | tail -14
say "cuBLASLt t $(el) s"
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in *H200*) bash .devscripts/call1.sh ;; esac
