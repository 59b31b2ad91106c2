#!/usr/bin/env python3
"""Where a kernel's warps stall, by source line, from Nsight Compute's source page.

Input: the CSV that `ncu -i REPORT.ncu-rep --page source --csv --print-source cuda,sass` prints
for a report taken with `--set full --import-source yes` (the kernel built with -lineinfo, as
kernels/CMakeLists.txt does). Output: the kernel's warp-state samples by stall reason, then the
source lines with the most samples, each with its executed instructions (warp level) and its
main stall reasons. Lines of inlined CUDA headers (cuda_bf16.hpp, ...) count on their own.

    python3 scripts/ncu_stalls.py fp8-row-cudasass.csv --top 30

bench/NOTES-2026-12-04.md has the recipe that produced the CSVs and what they showed.
"""
import argparse
import collections
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read(path):
    """(samples by reason, {(file, line, source): Counter of reasons + '_instructions'})"""
    header, reasons, current_file = None, [], "?"
    by_line = collections.defaultdict(collections.Counter)
    total = collections.Counter()
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if not row:
                continue
            if row[0] == "File Path":
                current_file = row[1].rsplit("/", 1)[-1]
                continue
            if row[0] == "Line No":
                header = row
                reasons = [i for i, h in enumerate(row) if h.startswith("stall_") and "Not Issued" not in h]
                continue
            if header is None or row[0] in ("", "Function Name"):
                continue  # SASS rows under a line repeat what the line's own row sums
            counts = by_line[(current_file, int(row[0]), row[1].strip()[:72])]
            for i in reasons:
                counts[header[i][len("stall_"):]] += number(row[i])
                total[header[i][len("stall_"):]] += number(row[i])
            counts["_instructions"] += number(row[header.index("Instructions Executed")])
    if header is None:
        sys.exit(f"{path}: no 'Line No' header: not the source page of ncu with --print-source cuda,sass")
    return total, by_line


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25, help="source lines to list")
    args = ap.parse_args()
    total, by_line = read(args.csv)
    samples = sum(total.values()) or 1.0
    print(f"{args.csv}: {samples:.0f} warp-state samples")
    for reason, n in total.most_common():
        if n:
            print(f"  {reason:<20} {100 * n / samples:5.1f}%")
    print(f"top {args.top} source lines (share of samples, warp instructions executed, main reasons):")

    def line_samples(item):
        return sum(v for k, v in item[1].items() if k != "_instructions")

    for (fname, line, src), counts in sorted(by_line.items(), key=line_samples, reverse=True)[: args.top]:
        s = line_samples(((fname, line, src), counts))
        main_reasons = ", ".join(f"{k} {v:.0f}" for k, v in counts.most_common()
                                 if k != "_instructions" and v > 0.1 * s)
        print(f"  {100 * s / samples:4.1f}% {fname}:{line} I={counts['_instructions']:.3g} [{main_reasons}] {src}")


if __name__ == "__main__":
    main()
