#!/bin/bash
# call 2 of 2026-12-07h (the H100 of call 1, warm): the full-size random model, then decode_ab at
# batch 1, the default cap (3) against 2, three rounds. Run as `DEVCALL_UNPACKED=1 bash call2.sh`
# (the pack unpacked by call 1).
source .devscripts/device-call.sh
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
timeout 200 python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --repeats 4 --rounds 3 cap3=- cap2=VOX_PDECODE_INFLIGHT=2 > $OUT/decode_ab.txt 2>&1
say "$(head -6 $OUT/decode_ab.txt)"
say "end t $(el) s"
