#!/bin/bash
# call 5 of 2026-12-05f: call 4 found the op boundary's 3-6 us to be the release fence (the end
# stamp after the fence: the next op begins 0.4-0.9 us later). What a hand-off without a fence
# could reach: VOX_PDECODE_EXPERIMENT=relaxed (pdecode-end-stamps-experiment.patch) keeps every
# wait and drops only the signal's release (timing only, values may be stale), beside nowait
# and nofence (call 1). Prediction: relaxed within ~2% of nofence (-15 to -18% at one row).
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
E=build/tests/test_kernels_pdecode_endst
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4; do
    line="round $r $(printf '%-14s' $cfg) main $(step $T --timing-only $cfg | cut -d' ' -f1)"
    for x in none relaxed nowait nofence; do
      line="$line | $x $(VOX_PDECODE_EXPERIMENT=$x step $E --timing-only $cfg | cut -d' ' -f1)"
    done
    say "$line"
  done
done
rm -rf /tmp/st; mkdir -p /tmp/st
VOX_PDECODE_EXPERIMENT=relaxed VOX_PDECODE_STAMPS_DIR=/tmp/st timeout 40 $E --timing-only bf16-split > /dev/null 2>&1
python3 scripts/pdecode_stamps.py /tmp/st/*.u64 > $OUT/stamps-relaxed.txt 2>&1; head -8 $OUT/stamps-relaxed.txt | tee -a $OUT/summary.txt
say "end t $(el) s"
