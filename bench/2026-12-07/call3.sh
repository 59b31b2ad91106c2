#!/bin/bash
# call 3 of 2026-12-07 (any card): call 2 measured the K-sliced residual projections slower on
# the H100 (24-row steps: decode +3.7%; 128 mixed +1.4%) although every check passed. Two causes
# found since: vox_k_residual_add_norm waited on each partial's load before issuing the next
# (7.0 us with 4 partials, 5.7 with 2, against 3.9 for the RMSNorm alone), and each sliced
# projection made and freed its partials in the step's graph (allocation and free nodes). Now
# every partial of a thread's vectors is loaded before any is summed, and the partials live in
# a buffer of the backend's (kslice_ws).
# Prediction: residual_add_norm ~4.0-4.5 us (2 and 4 partials) at 24 x 3072; decode of the
# 24-row steps -2 to -3% against VOX_KSLICE_ROWS=0, 128 mixed -0.5 to -1%, ids equal.
# Not run (no machine came; 2026-12-07). Since then the default is off (VOX_KSLICE_ROWS=0): the
# A/B names both settings. LIMIT=S (seconds into the call) adds the 128 mixed files.
# Pack: `EXTRA_BINS=build/tests/test_kernels_norm bash .devscripts/pack.sh`.
source .devscripts/device-call.sh
checked test_kernels_norm 120 build/tests/test_kernels_norm
grep -E "time residual|time rms_norm" $OUT/test_kernels_norm.txt | tee -a $OUT/summary.txt
checked test_cuda_backend 200 build/tests/test_cuda_backend
VOX_KSLICE_ROWS=32 VOX_KSLICE_DEPTH=64 VOX_PDECODE_ROWS=1 checked e2e-kslice 150 \
  build/tests/test_cuda_transcribe build/tiny_model
[ -d models/full ] || python3 scripts/make_random_model.py --size full --out models/full --build build 2>&1 | tail -1
say "model after $(el) s"
timeout $((255 - $(el))) python3 scripts/batch_ab.py --runner build/voxtral_runner --model models/full \
  --large 48 --mixed 0 --batch-size 24 --work models/batch-ab --rounds 3 \
  kslice=VOX_KSLICE_ROWS=32 off=VOX_KSLICE_ROWS=0 2>&1 | tee $OUT/batch_ab_24.txt | tail -5
say "24-row A/B done t $(el) s"
# the mixed files only where the budget left allows (LIMIT, seconds into the call; 0: none)
[ $(el) -lt $((${LIMIT:-0} - 120)) ] && timeout $((${LIMIT:-0} - $(el))) python3 scripts/batch_ab.py \
  --runner build/voxtral_runner --model models/full --large 0 --rounds 2 \
  kslice=VOX_KSLICE_ROWS=32 off=VOX_KSLICE_ROWS=0 2>&1 | tee $OUT/batch_ab.txt | tail -4
say "end t $(el) s"
