#!/usr/bin/env python3
"""A persistent kernel's loops and where its warps stall in each, from Nsight Compute's SASS page.

A persistent kernel is one launch whose loops (per page, per unit, per op) run a known number of
times a block, so the SASS instructions of one loop body share one execution count. Grouping the
instructions by it splits the kernel into its loops without source lines: executions a block
(count / --blocks) names the loop (8 warps x 1803 FP8 pages, 8 x 151 ops, ...), and each group
gets its share of the warp-state samples, its main stall reasons, its opcodes, and its
shared-memory loads and stores with bank conflicts.

Input: the CSV that `ncu -i REPORT.ncu-rep --page source --csv --print-source sass` prints for a
report taken with `--set full --import-source yes` (bench/NOTES-2026-12-04d.md section 2 has the
recipe and what it showed). scripts/ncu_stalls.py reads the `cuda,sass` page by source line.

    python3 scripts/ncu_loops.py src-fp8-split.csv --blocks 132 --top 12
"""
import argparse
import collections
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_stalls import number  # noqa: E402


def read(path):
    """The header and the instruction rows of the SASS source page."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    for i, row in enumerate(rows):
        if row[:2] == ["Address", "Source"]:
            return row, [r for r in rows[i + 1:] if len(r) == len(row)]
    sys.exit(f"{path}: no 'Address,Source' header: not ncu's source page with --print-source sass")


def opcode(source):
    words = source.split()
    if words and words[0].startswith("@"):  # a predicate
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--blocks", type=int, default=132, help="blocks of the launch (an SM each)")
    ap.add_argument("--top", type=int, default=12, help="groups to list, by share of the samples")
    args = ap.parse_args()
    header, rows = read(args.csv)
    col = {h: i for i, h in enumerate(header)}
    reasons = [i for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]
    conflicts = col.get("L1 Conflicts Shared N-Way")
    groups = collections.defaultdict(lambda: {"n": 0, "states": collections.Counter(),
                                               "ops": collections.Counter(), "smem": []})
    total = 0.0
    for r in rows:
        g = groups[int(number(r[col["Instructions Executed"]]))]
        g["n"] += 1
        g["ops"][opcode(r[col["Source"]])] += 1
        for i in reasons:
            g["states"][header[i][len("stall_"):]] += number(r[i])
            total += number(r[i])
        if conflicts is not None and number(r[conflicts]) > 1:
            g["smem"].append(f"{opcode(r[col['Source']])} {number(r[conflicts]):.0f}-way")
    total = total or 1.0
    print(f"{args.csv}: {total:.0f} warp-state samples, {len(rows)} instructions, {len(groups)} execution counts")

    def share(item):
        return sum(item[1]["states"].values())

    for count, g in sorted(groups.items(), key=share, reverse=True)[: args.top]:
        s = sum(g["states"].values())
        states = ", ".join(f"{k} {100 * v / s:.0f}%" for k, v in g["states"].most_common(4) if v > 0.05 * s)
        ops = " ".join(f"{k}x{v}" for k, v in g["ops"].most_common(8))
        print(f"  {100 * s / total:5.1f}%  {count / args.blocks:9.1f} a block  {g['n']:4d} instructions  [{states}]")
        print(f"         {ops}" + (f"; bank conflicts: {', '.join(g['smem'][:4])}" if g["smem"] else ""))


if __name__ == "__main__":
    main()
