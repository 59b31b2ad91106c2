#!/usr/bin/env python3
"""What happens on the GPU between two decode steps (2026-12-06e): reads nsys's cuda_gpu_trace CSV
of a batch-1 runner run and prints, for the last N pdecode kernels, every GPU operation from the
end of one pdecode to the end of the next: its start relative to the previous pdecode's end, its
duration, and the idle gap before it (us). The sum of the gaps and of the non-pdecode operations
is what a token costs beyond the kernel's step.
    python3 step_gaps.py trace.csv [N]"""
import csv
import sys


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    key_start = next(k for k in rows[0] if k.startswith("Start"))
    key_dur = next(k for k in rows[0] if k.startswith("Duration"))
    key_name = "Name"
    ops = sorted(((int(r[key_start]), int(r[key_dur]), r[key_name]) for r in rows), key=lambda o: o[0])
    pd = [i for i, o in enumerate(ops) if "pdecode" in o[2]]
    if len(pd) < 2:
        print(f"step_gaps: {len(pd)} pdecode kernels in the trace")
        return
    totals = []
    for a, b in list(zip(pd, pd[1:]))[-n:]:
        end0 = ops[a][0] + ops[a][1]
        print(f"-- after pdecode ending at {end0 / 1e3:.1f} us ({ops[a][1] / 1e3:.1f} us long)")
        prev_end, gaps, others = end0, 0, 0
        for s, d, name in ops[a + 1:b + 1]:
            gap = max(0, s - prev_end)
            gaps += gap
            if "pdecode" not in name:
                others += d
            print(f"   +{(s - end0) / 1e3:8.1f}  {d / 1e3:8.1f}  gap {gap / 1e3:6.1f}  {name[:70]}")
            prev_end = max(prev_end, s + d)
        totals.append((gaps, others))
        print(f"   idle {gaps / 1e3:.1f} us, other operations {others / 1e3:.1f} us")
    g = sorted(t[0] for t in totals)[len(totals) // 2]
    o = sorted(t[1] for t in totals)[len(totals) // 2]
    print(f"median of {len(totals)}: idle {g / 1e3:.1f} us, other operations {o / 1e3:.1f} us a token")


if __name__ == "__main__":
    main()
