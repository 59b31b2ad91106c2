#!/bin/bash
# call 6 of 2026-12-05f: call 5's `relaxed` (the signal without its release, waits kept) gave
# -5.5% (bf16) / -7% (FP8) at one row where nofence (no waits either) gave -17%. Is the rest the
# pollers' acquire or the waiting itself? pdecode-end-stamps-experiment.patch adds pollrelaxed
# (the poll without acquire, release kept) and unordered (neither; waits kept): what a hand-off
# with no ordering instruction at all (LL words) could reach, its waits included. Timing only.
# Prediction: unordered near nofence if the acquire loads wait behind the SM's in-flight bulk
# copies as the release fence does; near relaxed if the waits themselves are the cost.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
E=build/tests/test_kernels_pdecode_endst
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4; do
    line="round $r $(printf '%-14s' $cfg) main $(step $T --timing-only $cfg | cut -d' ' -f1)"
    for x in relaxed pollrelaxed unordered nofence; do
      line="$line | $x $(VOX_PDECODE_EXPERIMENT=$x step $E --timing-only $cfg | cut -d' ' -f1)"
    done
    say "$line"
  done
done
rm -rf /tmp/st; mkdir -p /tmp/st
VOX_PDECODE_EXPERIMENT=unordered VOX_PDECODE_STAMPS_DIR=/tmp/st timeout 40 $E --timing-only bf16-split > /dev/null 2>&1
python3 scripts/pdecode_stamps.py /tmp/st/*.u64 > $OUT/stamps-unordered.txt 2>&1; head -8 $OUT/stamps-unordered.txt | tee -a $OUT/summary.txt
say "end t $(el) s"
