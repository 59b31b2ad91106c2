#!/bin/bash
# call 2 of 2026-12-07g (no machine came; for the next session), any card: the default cap 3
# (from 2) and integer caps only, after call 1 found the blocks' mixed caps slower and 2 / 3 / 4
# even on an H100.
# 1. test_kernels_pdecode's checks (steps cycling caps 0, 1, 2, 3, 4, 16; the tune check).
# 2. The full-size step's cap sweep (1-8 pages, least of 5) and the stamped run's op table, bf16,
#    FP8, 4 rows.
# 3. End to end, decode_ab: cap 3 (default) against 2 at batch 1, three rounds;
#    VOX_PDECODE_TUNE=report once. Prediction: within 1% on an H100.
source .devscripts/device-call.sh
pdecode_checks
# on an H200, issue 11's committed figures instead of the H100's end-to-end A/B
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) DEVCALL_UNPACKED=1 exec bash .devscripts/call3.sh ;;
esac
for cfg in bf16-split fp8-split bf16-split-r4; do
  timeout 90 build/tests/test_kernels_pdecode --timing-only $cfg > $OUT/timing-$cfg.txt 2>&1
  grep -E "us a step|pages in flight" $OUT/timing-$cfg.txt | sed "s/^/$cfg: /" | tee -a $OUT/summary.txt
done
say "timings t $(el) s"
tiny_e2e 1
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
VOX_PDECODE_TUNE=report build/voxtral_runner -m models/full -n 8 --ignore-eos --latency \
  tests/fixtures/tiny/audio/long.wav > /dev/null 2> $OUT/tune-report.err
say "TUNE=report rc $? $(grep -E 'pages in flight' $OUT/tune-report.err | sed 's/.*a block: //')"
timeout 120 python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --repeats 4 \
  --rounds 3 cap3=- cap2=VOX_PDECODE_INFLIGHT=2 > $OUT/decode_ab.txt 2>&1
say "$(head -4 $OUT/decode_ab.txt)"
say "end t $(el) s"
