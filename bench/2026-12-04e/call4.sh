#!/bin/bash
# call 4 (for the next device session, once call 1 has shown the wgmma consumer correct): end to
# end on the full FP8 and bf16 models, the wgmma consumer against the split consumer of the same
# build and against HEAD's runner, then the tiny models end to end with it. Built on the CPU
# machine first (the wgmma build's runner, HEAD's as build/voxtral_runner):
#   VARIANT_RUNNER=1 bash bench/2026-12-04e/build_variants.sh wg=bench/2026-12-04e/pdecode-wgmma-consumer.patch
#   EXTRA_BINS="build/voxtral_runner_wg build/tests/test_cuda_transcribe_wg build/tests/test_kernels_pdecode_wg" bash .devscripts/pack.sh
# VOX_PDECODE_MAP_RANK=2 in the wg settings below if call 1's TMA probe refused the 3-D map.
source .devscripts/common.sh
t0=$(date +%s)
W=build/voxtral_runner_wg
echo "== tiny end to end, wgmma consumer"; for m in tiny_model tiny_model_fp8; do
  printf "%s: " $m; VOX_PDECODE_CONSUMER=wg timeout 120 build/tests/test_cuda_transcribe_wg build/$m 2>&1 | tail -1; done
python3 -c 'import sys; sys.path.insert(0, "scripts"); import voxtral_random as vr
vr.write_wav("/tmp/clip30.wav", vr.circular_slice(vr.read_wav_int16(vr.ROOT / "tests/fixtures/tiny/audio/long.wav"), 0, 480000))' # bench_gpu.py's clip30.wav
for dt in fp8 bf16; do
  m=models/full_$dt; [ $dt = bf16 ] && m=models/full
  python3 scripts/make_random_model.py --size full $([ $dt = fp8 ] && echo --dtype fp8) --out $m --build build 2>&1 | tail -1
  echo "$dt model after $(( $(date +%s) - t0 )) s"
  timeout 200 python3 scripts/decode_ab.py --runner build/voxtral_runner --model $m --wav /tmp/clip30.wav \
    --repeats 5 --rounds 3 head=- split=RUNNER=$W wg=RUNNER=$W,VOX_PDECODE_CONSUMER=wg 2>&1 | tail -12
  echo "t $(( $(date +%s) - t0 )) s"
done
