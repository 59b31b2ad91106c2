#!/bin/bash
# call 1 of 2026-12-06e (any card; the figures of issue 11 count only on an H200).
# RAN ONCE, on an H100 (results/1-call1). The step ahead it measures was reverted afterwards
# (0701dee): on main VOX_NO_STEP_AHEAD does nothing, and part 2 would time one code twice.
# 1. The hand-off probe (bench/2026-12-06d/handoff_probe.cu, carried as build/tests/handoff_probe)
#    with its two new modes: vec (a one-row boundary, 6 KB out and in) and reduce (a down
#    projection split over K: 12 KB of float reds a block, then the sum in). Prediction: vec
#    ~4.5-6 us with the stream on, reduce = vec + 1-3 us; fusing gate|up with down (one hand-off
#    fewer a layer) is worth designing where reduce < 2 x vec.
# 2. The step ahead (engine.c; this session): its GPU checks (choose_ids kernel and backend, the
#    tiny models end to end at 1 and 4 rows), then on the full-size bf16 model decode_ab at batch 1
#    and 4, the step ahead against VOX_NO_STEP_AHEAD=1, alternating, 2 rounds.
#    Prediction: batch 1 -40 to -60 us a token (the host's turn between steps: sync, reading the
#    tokens, batch copy and graph launch, ~50 us on 2026-12-06d's H100 FP8 figures: 1877 us a token
#    against a 1825 us kernel step); batch 4 the same absolute gain, per token of a sequence.
# 3. scripts/bench_gpu.py bf16 (the README's batch-1 table; issue 11's figures on an H200), with
#    the step ahead. On an H200 first the one-row in-flight cap (2 against 3, bf16, two rounds;
#    3 where >= 1% under 2 in both) for the bench's cap.
#    Prediction on an H200: decode 2.334 (2026-12-05e) -> ~1.98-2.00 ms/token, 30 s + 100 tokens
#    244 -> ~210 ms.
# 4. Time allowing: an nsys timeline of 40 tokens (what is left between steps), the FP8 bench.
# Pack: bench/2026-12-04c/pack.sh (no extra binaries; add build/tests/test_kernels_misc), this
# file, step_gaps.py and bench/device-call.sh in .devscripts/; carry [".devrun.tar.xz",
# ".devscripts", "build/tests/handoff_probe"].
source .devscripts/device-call.sh
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
[ -x build/tests/handoff_probe ] && timeout 60 build/tests/handoff_probe 2>&1 | tee -a $OUT/summary.txt
say "probe done t $(el) s"
for t in test_kernels_misc test_cuda_backend; do
  timeout 120 build/tests/$t > $OUT/$t.txt 2>&1
  say "$t rc $? $(tail -1 $OUT/$t.txt) (t $(el) s)"
  grep -E "FAIL|choose_ids" $OUT/$t.txt | head -6 | tee -a $OUT/summary.txt
done
tiny_e2e 1 4
cb=2
if [[ "$card" == *H200* ]]; then
  for r in 1 2; do step_row "round $r cap bf16-split" VOX_PDECODE_INFLIGHT build/tests/test_kernels_pdecode --timing-only bf16-split -- 2 3; done
  cb=$(grep "cap bf16-split |" $OUT/summary.txt | awk -F'|' '{split($2,a," "); split($3,b," "); n++; if (!(a[2] > 0) || !(b[2] > 0) || b[2] > 0.99 * a[2]) bad = 1}
    END {print bad || n < 2 ? 2 : 3}')
  say "bench cap bf16 $cb (t $(el) s)"
fi
VOX_PDECODE_INFLIGHT=$cb bench_run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build \
  --budget-s $([[ "$card" == *H200* ]] && echo 150 || echo 90)
say "bf16 bench done t $(el) s"
M=models/bench-full/model
if [ -f $M/voxtral.json ]; then
  for bs in 1 4; do
    VOX_PDECODE_INFLIGHT=$cb timeout 150 python3 scripts/decode_ab.py --runner build/voxtral_runner --model $M --batch-size $bs \
      --repeats 4 --rounds 2 ahead=- noahead=VOX_NO_STEP_AHEAD=1 2>&1 | tail -9 | tee -a $OUT/summary.txt
    say "decode_ab batch $bs done t $(el) s"
  done
fi
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
say "nsys: ${NSYS:-none}"
if [ -n "$NSYS" ] && [ $(el) -lt 480 ] && [ -f $M/voxtral.json ]; then
  for mode in ahead noahead; do
    env $([ $mode = noahead ] && echo VOX_NO_STEP_AHEAD=1) VOX_PDECODE_INFLIGHT=$cb timeout 50 $NSYS profile -t cuda --force-overwrite true \
      -o /tmp/dec_$mode build/voxtral_runner -m $M -d cuda --batch-size 1 -n 40 --ignore-eos models/bench-full/clip30.wav > /tmp/nsys_$mode.log 2>&1
    timeout 30 $NSYS stats -q --force-export true --report cuda_gpu_trace --format csv -o /tmp/dec_$mode /tmp/dec_$mode.nsys-rep >> /tmp/nsys_$mode.log 2>&1
    cp /tmp/nsys_$mode.log $OUT/; cp /tmp/dec_${mode}_cuda_gpu_trace.csv $OUT/ 2>/dev/null
    say "timeline $mode:"
    python3 .devscripts/step_gaps.py /tmp/dec_${mode}_cuda_gpu_trace.csv 3 2>&1 | tee -a $OUT/summary.txt | tail -14
  done
fi
if [[ "$card" == *H200* ]] && [ $(el) -lt 360 ]; then
  timeout $((590 - $(el))) python3 scripts/bench_gpu.py --size full --dtype fp8 --reuse --hf-batched off \
    --device cuda --runner-device cuda --build build --budget-s 100 --out /tmp/gpu_fp8 > /tmp/gpu_fp8.log 2>&1
  say "fp8 bench rc $? t $(el) s"
  mkdir -p $OUT/gpu_fp8; cp /tmp/gpu_fp8/results.md /tmp/gpu_fp8/results.json /tmp/gpu_fp8.log $OUT/gpu_fp8/ 2>/dev/null
  sed -n '/## Summary/,/## /p' /tmp/gpu_fp8/results.md | head -30
fi
say "end t $(el) s"
