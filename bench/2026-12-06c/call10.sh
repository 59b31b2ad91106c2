#!/bin/bash
# call 10 of 2026-12-06c, PREPARED FOR THE NEXT SESSION, NOT RUN (any card): compute-sanitizer on
# f2c278d's adding lag and SwiGLU units (issue 11 asks the tools on every new decode path), each
# tool started only when the elapsed time leaves it room: racecheck on one row FP8 at full width
# (the lag: an adder reads the partial sums one unit later), synccheck at awkward sizes (FP8), memcheck
# with down's K over a partial page (the SwiGLU units' act buffer, ffn 3344), racecheck at 4 rows
# FP8 (the batched lag). Pack: main's binaries (bench/2026-12-04c/pack.sh, no EXTRA_BINS).
# Prediction: 0 errors and 0 hazards everywhere (the slots' barriers order the lagged reads).
source .devscripts/device-call.sh
export VOX_PDECODE_WATCHDOG_S=900
sanitize racecheck 200 "full width fp8" split
sanitize synccheck 90 "awkward fp8" split
sanitize memcheck 90 "ffn chunks fp8" split
sanitize racecheck 180 "rows 4 full width fp8" split
say "end t $(el) s"
