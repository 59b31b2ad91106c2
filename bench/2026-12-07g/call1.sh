#!/bin/bash
# call 1 of 2026-12-07g, any card: the decode kernel's in-flight cap tuned at load (the first
# form: caps in quarter pages, a block's cap (q + b % 4) / 4, tuning on by default; since changed).
# 1. test_kernels_pdecode's checks: every step at another cap (quarter pages, 1 to 16), and
#    vox_k_pdecode_tune leaving a step's logits and cache rows as one launch does.
# 2. The full-size step at caps 1 to 4 pages in quarter steps (5 rounds, least), bf16, FP8, 4 rows.
# 3. The tiny models end to end at rows 1 and 4 (test_cuda_transcribe).
# 4. The runner's own tune (VOX_PDECODE_TUNE=report) and what it costs the warm-up, then
#    scripts/decode_ab.py: tuned (the default now) against the fixed 2 pages of before.
# Prediction: on an H100 the tune takes 2 or 2.5 pages, decode within 1% of cap 2's, the warm-up
# +30-45 ms; on an H200 2.5 to 3 pages and decode 1-4% under cap 2's.
# Pack: mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh
# bench/2026-12-07g/call1.sh .devscripts/ && bash .devscripts/pack.sh; carry .devrun.tar.xz and
# .devscripts.
source .devscripts/device-call.sh
pdecode_checks
for cfg in bf16-split fp8-split bf16-split-r4; do
  timeout 90 build/tests/test_kernels_pdecode --timing-only $cfg 2>&1 | grep -E "us a step|pages in flight" \
    | sed "s/^/$cfg: /" | tee -a $OUT/summary.txt
done
say "timings t $(el) s"
tiny_e2e 1 4
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
wav=tests/fixtures/tiny/audio/long.wav
for tune in report 0 report 0; do
  VOX_PDECODE_TUNE=$tune build/voxtral_runner -m models/full -n 8 --ignore-eos --latency $wav \
    > /dev/null 2> $OUT/tune-$tune.err
  say "TUNE=$tune rc $? $(grep -E 'pages in flight' $OUT/tune-$tune.err | sed 's/.*a block: //') \
| $(grep -E 'load: warm-up' $OUT/tune-$tune.err | tr -s ' ')"
done
timeout 150 python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --repeats 4 \
  --rounds 3 tuned=- cap2=VOX_PDECODE_INFLIGHT=2 2>&1 | tee $OUT/decode_ab.txt | tail -8
say "$(tail -6 $OUT/decode_ab.txt)"
say "end t $(el) s"
