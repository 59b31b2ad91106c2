#!/bin/bash
# call 1 of 2026-12-07f, any card: the decoder step's shrink on a GPU (commit 863cb2d), then, on
# an H200 only, bench/2026-12-07c/call1.sh (issue 11's in-flight cap sweep and bench_gpu.py bf16).
# The shrink: the tiny bf16 and FP8 models on the GPU, 6 files of 3 lengths, --batch-size 6,
# --ignore-eos -n 24, json; VOX_FAULT=seqs:K for K = 4, 2, 1, and chunks:1 (long.wav is two
# chunks), against no fault. Expected: exit 0,
# every file, the "ran again smaller" line, and ids equal to the no-fault run's
# except where a batch's summation order flips a near-tie (reported, not a failure: the CPU's
# test_runner_faults holds the exact check), then the product's GPU tests of the engine
# (test_cuda_transcribe, the tiny models, rows 4 and 1).
# Pack: mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh
# bench/2026-12-07c/call1.sh bench/2026-12-07f/call1.sh .devscripts/ && cp bench/2026-12-07f/call1.sh
# .devscripts/call1f.sh && EXTRA_BINS=build/tests/time_gemm_algos bash .devscripts/pack.sh; carry
# .devrun.tar.xz and .devscripts.
source .devscripts/device-call.sh
aud=$PWD/tests/fixtures/tiny/audio
mkdir -p /tmp/in
i=0
for f in short.wav long.wav speech.flac short.wav speech.ogg long.wav; do
  i=$((i + 1)); ln -sf "$aud/$f" /tmp/in/f$i.${f##*.}
done
ins=$(ls /tmp/in/* | sort)
for m in tiny_model tiny_model_fp8; do
  R="build/voxtral_runner -m build/$m -d cuda --batch-size 6 --ignore-eos -n 24 -o json"
  $R $ins > /tmp/ref-$m.json 2> $OUT/shrink-$m-ref.err
  say "shrink $m no fault rc $? lines $(wc -l < /tmp/ref-$m.json)"
  for k in 4 2 1 c1; do
    fault=seqs:$k; [ $k = c1 ] && fault=chunks:1
    VOX_FAULT=$fault $R --latency-json /tmp/lat-$m-$k.json $ins > /tmp/out-$m-$k.json 2> $OUT/shrink-$m-$k.err
    rc=$?
    cmp=$(python3 - /tmp/ref-$m.json /tmp/out-$m-$k.json /tmp/lat-$m-$k.json <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
lat = json.load(open(sys.argv[3]))["batch"]
same = sum(x["file"] == y["file"] and x["tokens"] == y["tokens"] for x, y in zip(a, b))
print(f"files {len(b)} ids equal {same}/{len(a)} shrinks {lat['shrinks']} smallest {lat['smallest_step_limit']}")
PY
)
    say "shrink $m $fault rc $rc $cmp line: $(grep -c 'ran again smaller' $OUT/shrink-$m-$k.err)"
  done
done
tiny_e2e 4
say "shrink part done t $(el) s"
# Batch-1 prompt work (issue 11's 30 s + 100 tokens: encoder 5.7 + prefill 5.3 ms of 227 on an
# H200): cuBLASLt's heuristic against its best candidate at one 30 s chunk (encoder M = 1500) and
# a 30 s prompt (decoder M = 380). Rule: a shape whose best is >= 10% under the heuristic and
# >= 0.1 ms a file is worth choosing by timing at load (the warm-up runs these shapes anyway).
timeout 60 build/tests/time_gemm_algos --encoder 1500 > $OUT/algos-encoder.txt 2>&1
say "$(cat $OUT/algos-encoder.txt | grep 'M=' | cut -c1-150)"
timeout 60 build/tests/time_gemm_algos --shape qkv 380 > $OUT/algos-prefill.txt 2>&1
for sh in o 'gate|up' down; do timeout 60 build/tests/time_gemm_algos --shape "$sh" 380 >> $OUT/algos-prefill.txt 2>&1; done
say "$(cat $OUT/algos-prefill.txt | grep 'M=' | cut -c1-150)"
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) exec bash .devscripts/call1.sh ;;
esac
say "end t $(el) s"
