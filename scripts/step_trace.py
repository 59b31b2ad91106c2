#!/usr/bin/env python3
"""Summarises a VOX_STEP_TRACE file (voxtral_runner's engine, src/engine/engine.c): where a batched
run's device time went, step by step.

Summarises the last engine in the file (the load's warm-up clip runs an engine of its own first).
Prints the encoder groups (count, chunks, ms a chunk), the steps that ran prompt rows (count, rows,
device ms, us a row) and the pure decode steps bucketed by their decode rows (count, mean device
ms a step, mean K/V positions read, and a least-squares fit of ms = a + b * rows + c * kv over all
pure decode steps: a is the fixed cost of a step, mostly weights, b a row's cost, c a cached
position's), then the host gaps (wall clock between lines beyond the device time).

usage: scripts/step_trace.py TRACE [TRACE ...]
"""
import sys


def parse(path):
    lines = []
    for raw in open(path):
        f = raw.split()
        if len(f) < 6:
            continue
        d = {"dev": f[0], "at": float(f[2]), "gap": float(f[4]), "kind": f[5]}
        rest = f[6:]
        if d["kind"] == "step":  # "step N key value ..."
            d["n"], rest = int(rest[0]), rest[1:]
        for k, v in zip(rest[::2], rest[1::2]):
            d[k] = float(v)
        lines.append(d)
    return lines


def runs(lines):
    """The engines of the file, one after another: the load's warm-up clip and each run append
    to the same file, and each engine's clock starts again at 0."""
    out, last = [], None
    for d in lines:
        if last is None or d["at"] < last:
            out.append([])
        out[-1].append(d)
        last = d["at"]
    return out


def summary(path):
    engines = runs(parse(path))
    if len(engines) > 1:
        print(f"== {path}: {len(engines)} engines (a warm-up clip first when loaded with one); the last:")
    ls = engines[-1] if engines else []
    enc = [d for d in ls if d["kind"] == "encode"]
    steps = [d for d in ls if d["kind"] == "step"]
    prompt = [d for d in steps if d["rows"] > d["decode"]]
    pure = [d for d in steps if d["rows"] == d["decode"]]
    print(f"== {path}: {len(enc)} encoder groups, {len(steps)} steps ({len(prompt)} with prompt rows)")
    if enc:
        ch = sum(d["chunks"] for d in enc)
        ms = sum(d["encoder_ms"] for d in enc)
        print(f"  encoder: {ch:.0f} chunks, {ms:.1f} ms, {ms / ch:.3f} ms a chunk; mel {sum(d['mel_ms'] for d in enc):.1f} ms")
    if prompt:
        rows = sum(d["rows"] for d in prompt)
        ms = sum(d["gpu_ms"] for d in prompt)
        print(f"  steps with prompt rows: {rows:.0f} rows, {ms:.1f} ms, {1000 * ms / rows:.2f} us a row")
    if pure:
        buckets = [(1, 1), (2, 8), (9, 32), (33, 64), (65, 128), (129, 256), (257, 1 << 30)]
        print("  pure decode steps:   rows      steps   ms a step   kv positions   ms total")
        for lo, hi in buckets:
            b = [d for d in pure if lo <= d["decode"] <= hi]
            if not b:
                continue
            n = len(b)
            print(f"  {lo:>9}-{hi if hi < 1 << 30 else '':<9} {n:8d} {sum(d['gpu_ms'] for d in b) / n:11.3f} "
                  f"{sum(d['kv_decode'] for d in b) / n:14.0f} {sum(d['gpu_ms'] for d in b):10.1f}")
        if len(pure) >= 3:
            try:
                import numpy as np
                A = np.array([[1.0, d["decode"], d["kv_decode"]] for d in pure])
                y = np.array([d["gpu_ms"] for d in pure])
                (a, b, c), *_ = np.linalg.lstsq(A, y, rcond=None)
                print(f"  fit: ms = {a:.3f} + {1000 * b:.2f} us a row + {1e6 * c:.2f} ns a cached position "
                      f"(K/V of a position at 4 TB/s: {1e9 * 122880 / 4e12:.1f} ns for the full-size model)")
            except ImportError:
                pass
    gpu = sum(d.get("gpu_ms", 0) + d.get("mel_ms", 0) + d.get("encoder_ms", 0) + d.get("embed_ms", 0) for d in ls)
    wall = ls[-1]["at"] if ls else 0.0
    print(f"  device ms in the lines {gpu:.1f}, wall clock to the last line {wall:.1f} ms ({wall - gpu:.1f} ms not covered)")


for p in sys.argv[1:]:
    summary(p)
