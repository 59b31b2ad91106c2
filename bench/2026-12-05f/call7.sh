#!/bin/bash
# call 7 of 2026-12-05f: calls 4-6 put the op boundary's ~4.4 us on the memory system's latency
# at that moment (no ordering instruction at all still leaves it): at an op's end every producer
# has refilled its free pages, ~8 x 24 KB a block in flight (~25 MB over 132 SMs, ~8 us of HBM
# time by Little's law), and the last block's signal, the pollers' loads and the staging's L2
# reads queue behind them. pdecode-inflight-cap.patch (variant `infl`): VOX_PDECODE_INFLIGHT=N
# lets a producer have at most N pages copied and not landed. Prediction: N = 2-3 (~6-9 MB in
# flight, still above what 3 TB/s needs at ~1 us latency) shortens the boundaries and the step
# by up to ~10% at one row; N = 1 starves the stream.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
I=build/tests/test_kernels_pdecode_infl
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4; do
    line="round $r $(printf '%-14s' $cfg) main $(step $T --timing-only $cfg | cut -d' ' -f1)"
    for n in 0 1 2 3 4 6; do
      line="$line | $n $(VOX_PDECODE_INFLIGHT=$n step $I --timing-only $cfg | cut -d' ' -f1)"
    done
    say "$line"
  done
done
for n in 2 4; do
  rm -rf /tmp/st; mkdir -p /tmp/st
  VOX_PDECODE_INFLIGHT=$n VOX_PDECODE_STAMPS_DIR=/tmp/st timeout 40 $I --timing-only bf16-split > /dev/null 2>&1
  python3 scripts/pdecode_stamps.py /tmp/st/*.u64 > $OUT/stamps-infl$n.txt 2>&1; head -8 $OUT/stamps-infl$n.txt | tee -a $OUT/summary.txt
done
say "end t $(el) s"
