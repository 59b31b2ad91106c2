#!/bin/bash
# call 4 of 2026-12-05f: where an op boundary's ~3-6 us go at one row (call 1: no waits -14%,
# no waits and no release fence -17/-18% of the step). pdecode-end-stamps-experiment.patch
# (variant binary `endst`) moves each projection op's end stamp after the consumers' barrier
# (VOX_PDECODE_EXPERIMENT=endsync) or after the release fence too (endfence: a fence.acq_rel.gpu
# then a relaxed add, the same ordering as red.release), so the next op's "begin after the op
# before" splits into: the block's other warps after warp 0 / the fence / the counter's way to
# the pollers, their barrier. Prediction: the fence ~0.7 us (call 1: nofence - nowait ~100 us a
# step / 150 boundaries), the rest mostly the pollers' round trip. ~2 min.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
E=build/tests/test_kernels_pdecode_endst
for cfg in bf16-split fp8-split; do
  for r in 1 2; do
    say "round $r $(printf '%-10s' $cfg) main $(step $T --timing-only $cfg) | endst $(step $E --timing-only $cfg) | endsync $(VOX_PDECODE_EXPERIMENT=endsync step $E --timing-only $cfg) | endfence $(VOX_PDECODE_EXPERIMENT=endfence step $E --timing-only $cfg)"
  done
  for x in none endsync endfence; do
    rm -rf /tmp/st; mkdir -p /tmp/st
    VOX_PDECODE_EXPERIMENT=$x VOX_PDECODE_STAMPS_DIR=/tmp/st timeout 40 $E --timing-only $cfg > /dev/null 2>&1
    for f in /tmp/st/*.u64; do python3 scripts/pdecode_stamps.py $f | head -8; done > $OUT/stamps-$cfg-$x.txt 2>&1
    say "== $cfg $x"; cat $OUT/stamps-$cfg-$x.txt | tee -a $OUT/summary.txt
  done
done
say "end t $(el) s"
