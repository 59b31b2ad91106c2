#!/bin/bash
# call 3: where the FP8 step's time goes inside the consumers: Nsight Compute's warp-state samples
# per SASS instruction (one launch of the full-size timing, FP8 and bf16, split consumer); then the
# prompt order A/B of last session (largest budget first vs admission order) on the full bf16 model
source .devscripts/common.sh
t0=$(date +%s)
T=build/tests/test_kernels_pdecode
which ncu; ncu --version | tail -1
for cfg in fp8-split bf16-split; do
  timeout 200 ncu --set full --import-source yes -k regex:pdecode_kernel --launch-skip 3 -c 1 -f -o $OUT/pd-$cfg \
    $T --timing-only $cfg > $OUT/ncu-$cfg.log 2>&1; echo "$cfg rc $?"; tail -3 $OUT/ncu-$cfg.log
  ncu --import $OUT/pd-$cfg.ncu-rep --page source --csv --print-source sass > $OUT/src-$cfg.csv 2>$OUT/src-$cfg.err; echo "src rc $?"; head -c 600 $OUT/src-$cfg.csv; echo; head -3 $OUT/src-$cfg.err
  ncu --import $OUT/pd-$cfg.ncu-rep --page details --csv > $OUT/details-$cfg.csv 2>&1
  grep -i -E "warp cycles per issued|issued warp|No Eligible|Stall" $OUT/details-$cfg.csv | head -12
  gzip -f $OUT/src-$cfg.csv; rm -f $OUT/pd-$cfg.ncu-rep
  echo "t $(( $(date +%s) - t0 )) s"
done
python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
echo "model after $(( $(date +%s) - t0 )) s"
timeout 250 python3 scripts/batch_ab.py --runner build/voxtral_runner --model models/full --rounds 2 \
  def=- adm=VOX_PREFILL_ORDER=admission > $OUT/batch_ab-order.txt 2>&1; echo "rc $?"
tail -16 $OUT/batch_ab-order.txt
echo "t $(( $(date +%s) - t0 )) s"
