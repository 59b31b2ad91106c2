#!/usr/bin/env python3
"""gate|up's pairs in the batched persistent decode (kernels/pdecode.cu: op_first_unit, next_unit,
unit_row, pair_adder_nth / pair_adder_k), transcribed, against the mapping that call 6-8's checked
kernel used (block_unit(nth): pair i = first + (nth / 2) G, its gate unit i, then its up unit
i + units / 2), for random grids, offsets and unit counts: the units each block takes, in order,
the rows prefetch_row loads for each adder lane, and the adder warp and prefetch lane of each unit.
Run: python3 pairs_sim.py"""
import random
def first_unit(b, off, G): return (b - off + G) % G
def op_first_unit(b, off, G, units, pairs):
    u = first_unit(b, off, G)
    return units if pairs and u >= units // 2 else u
def next_unit(u, nth, G, units, pairs):
    if pairs:
        if nth & 1: return u + units // 2
        i = u - units // 2 + G
        return i if i < units // 2 else units
    return u + G
def block_unit(b, off, G, units, pairs, nth):  # call 8's
    if not pairs:
        u = first_unit(b, off, G) + nth * G
        return u if u < units else -1
    i = first_unit(b, off, G) + (nth >> 1) * G
    return -1 if i >= units // 2 else i + (nth & 1) * (units // 2)
def unit_row(b, off, G, units, pairs, nth, w):
    if pairs:
        half = units // 2; i = first_unit(b, off, G) + (nth >> 1) * G
        return (i + (nth & 1) * half) * 8 + w if i < half else -1
    u = first_unit(b, off, G) + nth * G
    return u * 8 + w if u < units else -1
def pair_adder_nth(warp, k): return 2 * warp + (k & 1) + 16 * (k >> 1)
def pair_adder_k(nth): return nth // 16 * 2 + (nth & 1)
random.seed(2)
for trial in range(20000):
    G = random.choice([1, 2, 3, 7, 16, 132]); pairs = random.random() < 0.7
    units = 2 * random.randint(1, 1100) if pairs else random.randint(1, 2200); off = random.randrange(G)
    for b in random.sample(range(G), min(G, 4)):
        seq, u, nth = [], op_first_unit(b, off, G, units, pairs), 0
        while u < units:
            seq.append(u); nth += 1; u = next_unit(u, nth, G, units, pairs)
        ref, n = [], 0
        while block_unit(b, off, G, units, pairs, n) >= 0:
            ref.append(block_unit(b, off, G, units, pairs, n)); n += 1
        assert seq == ref, (trial, G, units, pairs, off, b, seq[:6], ref[:6])
        for nth, u in enumerate(seq):
            assert unit_row(b, off, G, units, pairs, nth, 3) == u * 8 + 3
            if pairs:  # the adder of unit nth holds its prefetched values in lanes 8k .. 8k + 7
                warp, k = (nth >> 1) % 8, pair_adder_k(nth)
                assert k >= 4 or pair_adder_nth(warp, k) == nth, (nth, warp, k)
        assert unit_row(b, off, G, units, pairs, len(seq), 0) == -1
print("ok")
