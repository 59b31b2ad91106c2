#!/bin/bash
# call 2 of 2026-12-07e: issue 11 on whatever card comes. On an H200 (the targets' card),
# bench/2026-12-07c/call1.sh as prepared (the one-row in-flight cap sweep, then bench_gpu.py bf16
# with the cap best_cap picks, FP8 with time left); its predictions stand: cap 3 -1 to -4% at one
# row, bf16 decode 2.156 -> ~2.07-2.12 ms/token. On any other card, the cap sweep alone (~20 s),
# recorded as that card's data point (no rule applies there).
# Pack: mkdir -p .devscripts && cp bench/device-call.sh bench/2026-12-04c/pack.sh
# bench/2026-12-07c/call1.sh bench/2026-12-07e/call2.sh .devscripts/ && bash .devscripts/pack.sh;
# carry .devrun.tar.xz and .devscripts.
source .devscripts/device-call.sh
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) exec bash .devscripts/call1.sh ;;
  *) cap_sweep; say "end t $(el) s" ;;
esac
