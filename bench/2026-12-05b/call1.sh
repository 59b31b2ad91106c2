#!/bin/bash
# call 1 (NOTES-2026-12-05b): b77071b's kernel checks (the ffn 3344 shapes, not yet run on a GPU),
# the tiny models end to end, the full-size step, then bench_gpu.py bf16 and fp8 with the 24 KB
# ring pages (the README's batch-1 table, last measured before them).
# Packed on the CPU machine with EXTRA_BINS=build/tests/fp8_convert_probe bash .devscripts/pack.sh
# (bench/2026-12-04c/pack.sh and common.sh, copied to .devscripts/); the probe first.
source .devscripts/common.sh
t0=$(date +%s)
echo "== fp8_convert_probe (NOTES-2026-12-05b section 2)"; timeout 60 build/tests/fp8_convert_probe
T=build/tests/test_kernels_pdecode
printf "== checks "; timeout 150 $T --no-timing > $OUT/checks.txt 2>&1; echo "rc $? $(tail -1 $OUT/checks.txt)"
grep -E "FAIL" $OUT/checks.txt | head -5; grep -E "3344" $OUT/checks.txt | head -4
for m in tiny_model tiny_model_fp8; do
  printf "tiny end to end %s: " $m; timeout 120 build/tests/test_cuda_transcribe build/$m > $OUT/e2e-$m.txt 2>&1; echo "rc $? $(tail -1 $OUT/e2e-$m.txt)"
done
for cfg in fp8-split bf16-split; do printf "%-10s " $cfg; timeout 60 $T --timing-only $cfg 2>&1 | grep -E "us a step" | head -1 | sed 's/.*position 440: //'; done
echo "t $(( $(date +%s) - t0 )) s"
run() { # name, script args...
  local name=$1; shift
  python3 "$@" --out /tmp/$name > /tmp/$name.log 2>&1; echo "$name rc $?"
  mkdir -p $OUT/$name; cp /tmp/$name/results.md /tmp/$name/results.json $OUT/$name/ 2>/dev/null
  cp /tmp/$name.log $OUT/$name/ 2>/dev/null
  grep -E "ours 30 s|ours 45 s|ours batch|transformers 30 s|fidelity" /tmp/$name.log | sed 's/^\[[^]]*\] //'
}
run gpu_bf16 scripts/bench_gpu.py --size full --device cuda --runner-device cuda --build build --budget-s 200
echo "t $(( $(date +%s) - t0 )) s"
run gpu_fp8 scripts/bench_gpu.py --size full --dtype fp8 --reuse --hf-batched off --device cuda --runner-device cuda --build build --budget-s 160
echo "t $(( $(date +%s) - t0 )) s"
