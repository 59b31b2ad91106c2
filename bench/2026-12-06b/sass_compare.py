#!/usr/bin/env python3
"""Compares one persistent-decode kernel instance between two builds, without a GPU: instruction
count and the opcodes whose counts differ most. The CUDA Toolkit on the build machine has no
cuobjdump; PyPI's nvidia-cuda-cuobjdump wheel has one (pip download --no-deps
nvidia-cuda-cuobjdump, unzip, nvidia/cu13/bin/cuobjdump).
  nvcc ... -arch=sm_90 -cubin kernels/pdecode.cu -o A.cubin   (the flags of build/kernels' flags.make)
  cuobjdump -sass A.cubin > A.sass; cuobjdump -sass B.cubin > B.sass
  python3 sass_compare.py A.sass B.sass Li4ELb1ELi1E     (head_dim 128, split consumer, one row)"""
import collections
import re
import sys


def instructions(path, inst):
    out, on = [], False
    for line in open(path):
        if 'Function :' in line:
            on = ('pdecode_kernelI' + inst) in line
            continue
        m = re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);', line) if on else None
        if m:
            out.append(m.group(2).strip())
    return out


def opcode(ins):
    words = ins.split()
    return words[1] if words[0].startswith('@') else words[0]


a, b = instructions(sys.argv[1], sys.argv[3]), instructions(sys.argv[2], sys.argv[3])
print(f'{sys.argv[3]}: {len(a)} -> {len(b)} instructions')
ca, cb = collections.Counter(map(opcode, a)), collections.Counter(map(opcode, b))
for k in sorted(set(ca) | set(cb), key=lambda k: -abs(cb[k] - ca[k]))[:int(sys.argv[4]) if len(sys.argv) > 4 else 15]:
    print(f'{k:40s} {ca[k]:6d} {cb[k]:6d} {cb[k] - ca[k]:+6d}')
