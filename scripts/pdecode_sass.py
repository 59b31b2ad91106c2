#!/usr/bin/env python3
"""Compares the sm_90 machine code of the persistent decode kernel (kernels/pdecode.cu) between
two revisions, instance by instance, without a GPU.

The kernel's step moves by 1-3% with changes that only move its code (bench/NOTES-2026-12-06b.md
and NOTES-2026-12-06c.md: run-time switches that are off, a restructured loop), so a refactor
that must not change an instance's speed should leave that instance's instructions as they were.
For each instance (pdecode_kernel<head_dim / 32, split consumer, rows>, named by its mangled
template arguments: Li4ELb1ELi1E is head_dim 128, the split consumer, one row) this prints the
instruction counts, how many instructions differ once immediates and addresses are masked, the
local-memory spill instructions (STL + LDL), and the opcodes whose counts moved most.

usage: scripts/pdecode_sass.py REV_A [REV_B] [--cuobjdump PATH] [--instance SUBSTR] [--opcodes N]
       scripts/pdecode_sass.py --sass A.sass B.sass [--instance SUBSTR] [--opcodes N]
  REV_A, REV_B: git revisions (REV_B: the working tree when left out); --sass: two `cuobjdump
  -sass` listings made elsewhere

Needs nvcc (the CUDA Toolkit) and cuobjdump. Where the toolkit has no cuobjdump (this project's
build machines), PyPI's wheel carries one:
  pip download --no-deps nvidia-cuda-cuobjdump -d /tmp/nvd && cd /tmp/nvd && unzip -o *.whl
then --cuobjdump /tmp/nvd/nvidia/cu13/bin/cuobjdump (or put it on PATH).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the flags of kernels/CMakeLists.txt's Release build for sm_90 (no -lineinfo: it does not
# change the instructions)
NVCC_FLAGS = ["-O3", "-DNDEBUG", "-DVOX_HAVE_ATTN_SM90=1", "-arch=sm_90", "-cubin"]


def tree_of(rev, tmp):
    """A directory holding kernels/ and src/ as of rev (None: the working tree)."""
    if rev is None:
        return ROOT
    out = os.path.join(tmp, re.sub(r"[^A-Za-z0-9_.-]", "_", rev))
    os.makedirs(out)
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "kernels", "src"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", out], input=archive, check=True)
    return out


def sass_of(tree, tmp, cuobjdump, name):
    cubin = os.path.join(tmp, name + ".cubin")
    subprocess.run(["nvcc", *NVCC_FLAGS, "-I", os.path.join(tree, "kernels"), "-I", os.path.join(tree, "src"),
                    os.path.join(tree, "kernels", "pdecode.cu"), "-o", cubin], check=True)
    return subprocess.run([cuobjdump, "-sass", cubin], check=True, capture_output=True, text=True).stdout


def instances(sass):
    """{template arguments: [instructions]} of every pdecode_kernel instance."""
    out, cur = {}, None
    for line in sass.splitlines():
        if "Function :" in line:
            m = re.search(r"pdecode_kernelI(\w+?)EEvN", line)
            cur = m.group(1) if m else None
            if cur:
                out[cur] = []
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?);", line) if cur else None
        if m:
            out[cur].append(m.group(1).strip())
    return out


def masked(ins):
    return re.sub(r"0x[0-9a-f]+", "X", ins)


def opcode(ins):
    words = ins.split()
    return words[1] if words[0].startswith("@") else words[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rev_a", nargs="?")
    ap.add_argument("rev_b", nargs="?")
    ap.add_argument("--sass", nargs=2, metavar=("A", "B"), help="compare two cuobjdump -sass listings")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump"))
    ap.add_argument("--instance", default="", help="only instances whose template arguments contain this")
    ap.add_argument("--opcodes", type=int, default=6, help="opcodes listed an instance (default 6)")
    a = ap.parse_args()
    if a.sass:
        with open(a.sass[0]) as fa, open(a.sass[1]) as fb:
            sa, sb = instances(fa.read()), instances(fb.read())
        names = a.sass
    else:
        if not a.rev_a:
            ap.error("a revision to compare, or --sass A B")
        if not a.cuobjdump or not os.path.exists(a.cuobjdump):
            sys.exit("pdecode_sass: no cuobjdump (see --help for PyPI's nvidia-cuda-cuobjdump)")
        with tempfile.TemporaryDirectory() as tmp:
            sa = instances(sass_of(tree_of(a.rev_a, tmp), tmp, a.cuobjdump, "a"))
            sb = instances(sass_of(tree_of(a.rev_b, tmp), tmp, a.cuobjdump, "b"))
        names = [a.rev_a, a.rev_b or "working tree"]
    if not sa and not sb:
        sys.exit("pdecode_sass: no pdecode_kernel instance in either listing")
    print(f"pdecode_kernel<...> instances: {names[0]} -> {names[1]}")
    print(f"{'instance':14s} {'A':>7s} {'B':>7s} {'differ':>7s} {'spills':>9s}  opcodes that moved most")
    for k in sorted(set(sa) | set(sb)):
        if a.instance not in k:
            continue
        x, y = sa.get(k, []), sb.get(k, [])
        differ = sum(p != q for p, q in zip(map(masked, x), map(masked, y))) + abs(len(x) - len(y))
        ca, cb = collections.Counter(map(opcode, x)), collections.Counter(map(opcode, y))
        moved = sorted(set(ca) | set(cb), key=lambda o: -abs(cb[o] - ca[o]))[:a.opcodes]
        moves = " ".join(f"{o}{cb[o] - ca[o]:+d}" for o in moved if cb[o] != ca[o])
        spill = lambda c: sum(n for o, n in c.items() if o.split(".")[0] in ("STL", "LDL"))
        spills = f"{spill(ca)}->{spill(cb)}"
        print(f"{k:14s} {len(x):7d} {len(y):7d} {differ:7d} {spills:>9s}  {moves}")


if __name__ == "__main__":
    main()
