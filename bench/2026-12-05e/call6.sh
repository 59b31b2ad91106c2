#!/bin/bash
# call 6 of 2026-12-05e (prepared for the next session; ran as call 1 of 2026-12-05f, bench/NOTES-2026-12-05f.md section 1): is an attention key group's
# ~3.6 us its arithmetic or its loads (NOTES-2026-12-05e section 4), and does the cheaper warp
# reduction pay? Two variant binaries, built with
#   bash bench/2026-12-04e/build_variants.sh noscore=bench/2026-12-05e/pdecode-noscore-experiment.patch \
#        wsum=bench/2026-12-05e/pdecode-score-warp-sums.patch
# and packed with EXTRA_BINS="build/tests/test_kernels_pdecode_noscore build/tests/test_kernels_pdecode_wsum":
# - noscore: VOX_PDECODE_EXPERIMENT=noscore loads every group's keys and values but skips the
#   scores, the softmax and P@V (wrong numbers; the timing is what counts), against the same
#   binary without it. The patch leaves the production instance's registers and spills as they are.
#   Prediction: arithmetic-bound, the 440-key units (VOX_PDECODE_SPLITS=1) go from ~4340 us (H100,
#   main) toward ~3000 and the 4-row attention's "keys done" - "first keys scored" from ~11 us to
#   ~3; load-bound, under 10% of either moves.
# - wsum: a group's 16 scores (4 heads x 4 keys) summed over the warp together (warp_sums: 32
#   shuffles where 16 vk_warp_sum took 80), the same floats in the same order
#   (bench/2026-12-05e/sim/warp_sums_sim.py checks that on the CPU); its checks, then against main.
#   ptxas: one row 168 registers, 8 / 8 bytes of spills (main 167, 16 / 16). Prediction: worth
#   what noscore says the arithmetic costs, at most ~40% of it (the shuffles' share of a group).
# ~4 min.
source .devscripts/device-call.sh
T=build/tests/test_kernels_pdecode
N=build/tests/test_kernels_pdecode_noscore
W=build/tests/test_kernels_pdecode_wsum
exp_of() { [ $1 = off ] && echo none || echo noscore; }
for r in 1 2; do
  for cfg in bf16-split bf16-split-r4 bf16-split-r8 fp8-split-r4; do
    for x in off noscore; do
      say "round $r $(printf '%-14s' $cfg) $x $(VOX_PDECODE_EXPERIMENT=$(exp_of $x) step $N --timing-only $cfg)"
    done
  done
  for x in off noscore; do
    say "round $r splits 1 bf16-split $x $(VOX_PDECODE_SPLITS=1 VOX_PDECODE_EXPERIMENT=$(exp_of $x) step $N --timing-only bf16-split)"
  done
done
for x in none noscore; do
  mkdir -p $OUT/st-$x
  VOX_PDECODE_EXPERIMENT=$x VOX_PDECODE_STAMPS_DIR=$OUT/st-$x timeout 40 $N --timing-only bf16-split-r4 > /dev/null 2>&1
  for f in $OUT/st-$x/*.u64; do python3 scripts/pdecode_stamps.py $f | head -22; done > $OUT/stamps-$x.txt 2>&1
  say "$(grep -E 'step|keys done|first keys' $OUT/stamps-$x.txt | tr -s ' ' | tr '\n' ';')"
done
timeout 200 $W --no-timing > $OUT/checks-wsum.txt 2>&1; say "checks wsum rc $? $(tail -1 $OUT/checks-wsum.txt) (t $(el) s)"
grep -E "FAIL|outside" $OUT/checks-wsum.txt | head -8 | tee -a $OUT/summary.txt
for r in 1 2; do
  for cfg in bf16-split fp8-split bf16-split-r4 fp8-split-r4; do
    for X in $T $W; do
      say "round $r $(printf '%-14s' $cfg) $([ $X = $T ] && echo main || echo wsum) $(step $X --timing-only $cfg)"
    done
  done
  for X in $T $W; do
    say "round $r splits 1 bf16-split $([ $X = $T ] && echo main || echo wsum) $(VOX_PDECODE_SPLITS=1 step $X --timing-only bf16-split)"
  done
done
say "end t $(el) s"
