#!/bin/bash
# call 3 of 2026-12-07e: with too little device time left for bench_gpu.py (~350 s), the H200's
# in-flight cap sweep alone (~20 s): device-call.sh's cap_sweep and best_cap, two rounds. Rule
# (NOTES-2026-12-07b): land bench/2026-12-06/pdecode-inflight-by-device.patch if the pick is 3.
# On any other card nothing runs (the H100's sweep is call 2's).
source .devscripts/device-call.sh
only_on H200
cap_sweep
say "end t $(el) s"
