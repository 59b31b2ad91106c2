#!/usr/bin/env python3
"""Checks on the CPU the warp_sums algorithm of pdecode-score-warp-sums.patch: for N values a
lane (N = 1 .. 32, powers of two), a lane keeps half its values and trades the other half with
its xor-partner at offsets 16, 8, ... (log2 N steps), ends the butterfly on one value, then
gathers the N sums. Every lane's every sum must equal, bit for bit in float32, what
vk_warp_sum (kernels/common.cuh: v += shfl_xor(v, o) for o = 16, 8, 4, 2, 1) gives for that
value alone. Simulates the 32 lanes with numpy; prints one line a size, exits 1 on a difference.
    python3 bench/2026-12-05e/sim/warp_sums_sim.py
"""
import sys

import numpy as np


def butterfly(vals):
    v = vals.astype(np.float32)
    for o in (16, 8, 4, 2, 1):
        v = (v + v[np.arange(32) ^ o]).astype(np.float32)
    return v


def warp_sums(x):
    n = x.shape[1]
    log = n.bit_length() - 1
    w = x.astype(np.float32)
    for step in range(log):
        half, off = n >> (step + 1), 16 >> step
        nw = np.zeros((32, half), np.float32)
        for lane in range(32):
            partner = lane ^ off
            upper, p_upper = bool(lane & off), bool(partner & off)
            for j in range(half):
                keep = w[lane][half + j] if upper else w[lane][j]
                recv = w[partner][j] if p_upper else w[partner][half + j]
                nw[lane][j] = np.float32(keep + recv)
        w = nw
    w0 = w[:, 0].copy()
    off = 16 >> log
    while off:
        w0 = (w0 + w0[np.arange(32) ^ off]).astype(np.float32)
        off >>= 1
    return np.array([[w0[i << (5 - log)] for i in range(n)] for _ in range(32)], np.float32)


def main():
    rng = np.random.default_rng(20261205)
    bad = 0
    for n in (1, 2, 4, 8, 16, 32):
        for trial in range(20):
            x = (rng.standard_normal((32, n)) * 10 ** rng.uniform(-3, 3)).astype(np.float32)
            got = warp_sums(x)
            same = all(np.array_equal(got[:, i].view(np.uint32), butterfly(x[:, i]).view(np.uint32))
                       for i in range(n))
            bad += not same
        print(f"N = {n:2d}: 20 draws, {'every lane and value bit-identical' if not bad else 'DIFFERENT'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
