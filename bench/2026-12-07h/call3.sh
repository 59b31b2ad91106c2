#!/bin/bash
# call 3 of 2026-12-07h (the same machine): decode_ab over caps 2, 3 and 4, eight rounds, after
# call 2 found cap 3 0.4% slower than 2 end to end.
source .devscripts/device-call.sh
timeout 300 python3 scripts/decode_ab.py --runner build/voxtral_runner --model models/full --repeats 4 --rounds 8 cap2=VOX_PDECODE_INFLIGHT=2 cap3=- cap4=VOX_PDECODE_INFLIGHT=4 > $OUT/decode_ab2.txt 2>&1
say "$(head -12 $OUT/decode_ab2.txt)"
say "end t $(el) s"
