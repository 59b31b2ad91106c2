#!/bin/bash
# call 2 of 2026-12-05f: memcheck on the staged keys' cp.async addresses (c1dcf40): 8 rows (64-key
# batches, the chunked o and down) and the awkward shapes (head_dim 64 stages at one row too),
# as NOTES-2026-12-05e section 2 ran them on main. Prediction: 0 errors. ~4 min.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
for f in "rows 8" "awkward" "rows 4"; do
  VOX_PDECODE_WATCHDOG_S=900 timeout 170 compute-sanitizer --tool memcheck $T --no-timing "$f" split > "$OUT/memcheck-$f.log" 2>&1
  say "memcheck $f rc $? $(grep -E 'SUMMARY|checks,' "$OUT/memcheck-$f.log" | tr '\n' ' ') (t $(el) s)"
done
