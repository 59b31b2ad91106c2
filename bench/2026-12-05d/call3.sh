#!/bin/bash
# call 3 of 2026-12-05d (not run yet; NOTES-2026-12-05d section 3): where the batched persistent
# decode's step goes. The stamps (VOX_PDECODE_STAMPS_DIR, scripts/pdecode_stamps.py: per op, the
# wait before it and its work; inside the attention units, their marks) at 1, 4 and 8 rows, bf16
# and FP8, then the attention's share by its splits: one row with VOX_PDECODE_SPLITS 1 and 4 (a
# unit of 440 and of 110 keys, as the 8- and 4-row launches' units hold 220 and 110), and 4 / 8
# rows with VOX_PDECODE_SPLITS=1; 5cec6a6's one row beside main's; the if8 variant at 8 rows. ~5 min.
# Packed as call 1b, with EXTRA_BINS="build/tests/test_kernels_pdecode_base build/tests/test_kernels_pdecode_if8".
source .devscripts/common.sh
T=build/tests/test_kernels_pdecode
mkdir -p $OUT/st
for dt in fp8 bf16; do
  for cfg in $dt-split $dt-split-r4 $dt-split-r8; do
    VOX_PDECODE_STAMPS_DIR=$OUT/st timeout 40 $T --timing-only $cfg > $OUT/timing-$cfg.txt 2>&1
    echo "$cfg rc $? $(grep 'us a step' $OUT/timing-$cfg.txt | sed 's/.*position 440: //')"
  done
done
# 5cec6a6's one-row instance (test_kernels_pdecode_base, from bench/2026-12-05c/build_base.sh):
# its stamps beside main's say where main's one row lost 1.4-1.8% (NOTES-2026-12-05d section 1)
mkdir -p $OUT/st_base
for cfg in fp8-split bf16-split; do
  VOX_PDECODE_STAMPS_DIR=$OUT/st_base timeout 40 build/tests/test_kernels_pdecode_base --timing-only $cfg > $OUT/timing-base-$cfg.txt 2>&1
  echo "base $cfg rc $? $(grep 'us a step' $OUT/timing-base-$cfg.txt | sed 's/.*position 440: //')"
done
for f in $OUT/st_base/*.u64; do echo "== base $(basename $f)"; python3 scripts/pdecode_stamps.py $f | head -30; done > $OUT/stamps-base.txt 2>&1
for f in $OUT/st/*.u64; do echo "== $(basename $f)"; python3 scripts/pdecode_stamps.py $f | head -30; done > $OUT/stamps.txt 2>&1
head -c 6000 $OUT/stamps.txt
for sp in 1 4; do
  printf "splits %s one row bf16 " $sp; VOX_PDECODE_SPLITS=$sp timeout 40 $T --timing-only bf16-split 2>&1 | grep 'us a step' | sed 's/.*position 440: //'
done
for cfg in bf16-split-r4 bf16-split-r8; do
  printf "splits 1 %s " $cfg; VOX_PDECODE_SPLITS=1 timeout 40 $T --timing-only $cfg 2>&1 | grep 'us a step' | sed 's/.*position 440: //'
done
# every row's staging loads in flight at once (pdecode-rows-inflight8.patch, built as
# `bash bench/2026-12-04e/build_variants.sh if8=bench/2026-12-05d/pdecode-rows-inflight8.patch`
# and packed with EXTRA_BINS=build/tests/test_kernels_pdecode_if8): its 8-row checks, then the
# 8-row step against main's in alternating rounds. Half the staging's round trips at 8 rows for
# ptxas's spills: NOTES-2026-12-05d section 3.
V=${T}_if8
if [ -x $V ]; then
  printf "checks if8 rows 8: "; timeout 120 $V --no-timing "rows 8" split 2>&1 | tail -1
  for r in 1 2; do
    for cfg in bf16-split-r8 fp8-split-r8; do
      for X in $T $V; do
        printf "round %s %-13s %-4s " $r $cfg $([ $X = $T ] && echo main || echo if8); timeout 40 $X --timing-only $cfg 2>&1 | grep 'us a step' | sed 's/.*position 440: //'
      done
    done
  done
fi
