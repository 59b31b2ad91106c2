#!/bin/bash
# call 4 of 2026-12-06g (any card): call 2 again on the second form of the fused RoPE. Call 3 (an
# H100) measured the first form slower (decode stage +3.9% on 256 x 30 s, +2.7% on 128 mixed
# files): at 24 to 128 rows a split is a whole sequence (s_max 1), so every block held the new
# key and built its tables and wrote the new row before loading any key. Now the block holding the
# new key puts it into its key tile from shared memory (it is not read back from the cache), and
# tables, rotation and the cache write come after the first loads are on their way (before them
# only where the new key's tile is among the first loads).
# Prediction: decode stage -1 to -2.5% against before on both workloads; ids equal.
AB_LIMIT=560 bash .devscripts/call2.sh
