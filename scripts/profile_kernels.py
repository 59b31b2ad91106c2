#!/usr/bin/env python3
"""Per-kernel profile of voxtral_runner with Nsight Compute (ncu), on a GPU machine.

Runs the runner under ncu on the given clips with --ignore-eos -n TOKENS (plus --args), profiling
the kernels whose names match --kernels (graph nodes one by one, `--graph-profiling node`), each
with its cache flushed and the clocks left as they are; then prints one row per kernel and grid:
calls per token, mean duration, DRAM bytes read and the bandwidth that makes, the sum per token
and the total. ncu runs kernels one at a time, so the sum is the work without launch gaps or
overlap: compare it with the runner's stage times to see what the gaps and the overlap come to.

The default regex picks the decode step's kernels (one clip: decode ms/token); `--kernels .`
with several clips and `--args "--batch-size 8"` profiles a batched run whole (encoder groups,
prefill chunks, batched decode), where the grid tells the stages apart.

usage: scripts/profile_kernels.py --runner BUILD/voxtral_runner --model MODEL_DIR --wav CLIP...
                                  [--tokens 4] [--args "..."] [--csv OUT.csv] [--kernels REGEX]
"""
import argparse
import collections
import csv
import io
import re
import subprocess
import sys

METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "launch__grid_size"]
# The decode step's kernels (prefill and the encoder use cuBLAS and other kernels).
DEFAULT_KERNELS = r"matvec|attn_decode|logits|embed"


def short_name(name):
    name = re.sub(r"\(anonymous namespace\)::", "", name)
    name = re.sub(r"\(.*\)$", "", name)  # parameter list
    return name.replace("void ", "").strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runner", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--wav", required=True, nargs="+")
    ap.add_argument("--tokens", type=int, default=4)
    ap.add_argument("--csv", default=None, help="keep ncu's raw CSV here")
    ap.add_argument("--kernels", default=DEFAULT_KERNELS, help="regex of kernel names to profile")
    ap.add_argument("--args", default="", help="more runner arguments, e.g. \"--batch-size 8\"")
    a = ap.parse_args()
    cmd = ["ncu", "--graph-profiling", "node", "--clock-control", "none", "--csv",
           "--metrics", ",".join(METRICS), "--kernel-name", f"regex:{a.kernels}",
           a.runner, "-m", a.model, "-d", "cuda", "--ignore-eos", "-n", str(a.tokens)] + a.args.split() + a.wav
    print("+", " ".join(cmd), file=sys.stderr)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-4000:])
        sys.exit(f"ncu failed with status {p.returncode}")
    text = p.stdout[p.stdout.find('"ID"'):]
    if a.csv:
        open(a.csv, "w").write(text)
    kernels = collections.OrderedDict()  # launch id -> {metric: value, name}
    for row in csv.DictReader(io.StringIO(text)):
        k = kernels.setdefault(row["ID"], {"name": short_name(row["Kernel Name"])})
        k[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
    groups = collections.OrderedDict()
    for k in kernels.values():
        key = (k["name"], int(k.get("launch__grid_size", 0)))
        groups.setdefault(key, []).append(k)
    # Durations in ns (ncu reports gpu__time_duration in nsecond or usecond: normalise by unit)
    unit = 1.0
    for row in csv.DictReader(io.StringIO(text)):
        if row["Metric Name"] == "gpu__time_duration.sum":
            unit = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}[row["Metric Unit"]]
            break
    tokens = a.tokens
    total = 0.0
    print(f"{'kernel':58s} {'grid':>7s} {'calls/tok':>9s} {'mean us':>8s} {'MB read':>8s} {'GB/s':>6s} {'us/tok':>8s} {'total ms':>8s}")
    for (name, grid), ks in groups.items():
        us = [k["gpu__time_duration.sum"] * unit for k in ks]
        mb = [k.get("dram__bytes_read.sum", 0.0) / 1e6 for k in ks]
        mean_us = sum(us) / len(us)
        mean_mb = sum(mb) / len(mb)
        per_tok = sum(us) / tokens
        total += per_tok
        gbs = mean_mb / mean_us * 1e3 if mean_us > 0 else 0.0  # MB/us is TB/s
        print(f"{name[:58]:58s} {grid:7d} {len(ks) / tokens:9.1f} {mean_us:8.2f} {mean_mb:8.2f} "
              f"{gbs:6.0f} {per_tok:8.1f}")
    print(f"sum of kernel times per token (run one at a time, caches flushed): {total / 1e3:.3f} ms; "
          f"in all: {total * tokens / 1e3:.3f} ms")


if __name__ == "__main__":
    main()
