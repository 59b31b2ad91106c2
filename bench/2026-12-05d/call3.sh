#!/bin/bash
# call 3 of 2026-12-05d (not run yet; NOTES-2026-12-05d section 3): where the batched persistent
# decode's step goes. The stamps (VOX_PDECODE_STAMPS_DIR, scripts/pdecode_stamps.py: per op, the
# wait before it and its work; inside the attention units, their marks) at 1, 4 and 8 rows, bf16
# and FP8, then the attention's share by its splits: one row with VOX_PDECODE_SPLITS 1 and 4 (a
# unit of 440 and of 110 keys, as the 8- and 4-row launches' units hold 220 and 110), and 4 / 8
# rows with VOX_PDECODE_SPLITS=1. ~4 min. Packed as call 1b (.devscripts/pack.sh).
source .devscripts/common.sh
T=build/tests/test_kernels_pdecode
mkdir -p $OUT/st
for dt in fp8 bf16; do
  for cfg in $dt-split $dt-split-r4 $dt-split-r8; do
    VOX_PDECODE_STAMPS_DIR=$OUT/st timeout 40 $T --timing-only $cfg > $OUT/timing-$cfg.txt 2>&1
    echo "$cfg rc $? $(grep 'us a step' $OUT/timing-$cfg.txt | sed 's/.*position 440: //')"
  done
done
for f in $OUT/st/*.u64; do echo "== $(basename $f)"; python3 scripts/pdecode_stamps.py $f | head -30; done > $OUT/stamps.txt 2>&1
head -c 6000 $OUT/stamps.txt
for sp in 1 4; do
  printf "splits %s one row bf16 " $sp; VOX_PDECODE_SPLITS=$sp timeout 40 $T --timing-only bf16-split 2>&1 | grep 'us a step' | sed 's/.*position 440: //'
done
for cfg in bf16-split-r4 bf16-split-r8; do
  printf "splits 1 %s " $cfg; VOX_PDECODE_SPLITS=1 timeout 40 $T --timing-only $cfg 2>&1 | grep 'us a step' | sed 's/.*position 440: //'
done
