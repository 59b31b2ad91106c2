#!/usr/bin/env python3
"""Reads the raw stamps of the persistent decode kernel (kernels/pdecode.cu) that
`VOX_PDECODE_STAMPS_DIR=DIR build/tests/test_kernels_pdecode --timing-only` writes
(DIR/stamps-{bf16,fp8}-{split,row}-NNNsm.u64) and prints the step's critical path, layer by layer
(mean over the middle layers):
- per op, when its blocks begin (their wait ended) and end, in us after the last block of the
  op before it ended: the gap before an op's first begin is what its boundary costs, and the
  spread of its ends is its tail;
- inside the attention units, the 10 marks (pdecode.cu, ATTN_MARK), in us after the last
  q|k|v block ended: where the attention's chain goes;
- with bench/2026-12-05g/pdecode-stage-marks-experiment.patch, per projection, the time from a
  block's begin to its input staged.
Blocks' stamps are thread 0's: for the tensor-core consumer an op's end is warp 0's, not the
block's.

usage: scripts/pdecode_stamps.py FILE [--layers N] (N: the timing's 30)
"""
import array
import statistics
import sys

OPS = ["q|k|v", "attention", "o", "gate|up", "down"]
MARKS = ["unit begun", "q|k|v seen", "queries staged", "keys done", "partials written",
         "ticket taken", "merged (merger)", "signalled (merger)", "queries in registers",
         "first keys scored"]
N_MARKS = len(MARKS)


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    path, layers = args[0], 30
    if "--layers" in args:
        layers = int(args[args.index("--layers") + 1])
    sms = int(path.rsplit("-", 1)[1].split("sm")[0])
    raw = array.array("Q")
    with open(path, "rb") as f:
        raw.frombytes(f.read())
    steps = layers * len(OPS) + 1
    n_ops = sms * steps * 2
    if len(raw) < n_ops:
        sys.exit(f"{path}: {len(raw)} words, expected at least {n_ops} ({sms} blocks x {steps} ops x 2)")
    t0 = min(raw[:n_ops])
    begin = lambda b, s: raw[(b * steps + s) * 2] - t0
    end = lambda b, s: raw[(b * steps + s) * 2 + 1] - t0
    has_marks = len(raw) >= n_ops + sms * layers * N_MARKS
    n_marks = n_ops + sms * layers * N_MARKS
    # the staged marks: written only by bench/2026-12-05g/pdecode-stage-marks-experiment.patch
    has_staged = len(raw) >= n_marks + sms * steps and any(raw[n_marks:n_marks + sms * steps])
    staged = lambda b, s: raw[n_marks + b * steps + s] - t0
    mark = lambda b, l, k: raw[n_ops + (b * layers + l) * N_MARKS + k]

    middle = range(1, layers - 1) if layers > 2 else range(layers)
    print(f"{path}: {sms} blocks, {layers} layers, step {(max(end(b, steps - 1) for b in range(sms)) - min(begin(b, 0) for b in range(sms))) / 1e3:.1f} us")
    print("op           begin first / median / last     end first / median / last   (us after the op before)")
    for op in range(len(OPS)):
        cols = [[] for _ in range(6)]
        for l in middle:
            s = l * len(OPS) + op
            prev = max(end(b, s - 1) for b in range(sms)) if s > 0 else min(begin(b, 0) for b in range(sms))
            bs = sorted(begin(b, s) - prev for b in range(sms))
            es = sorted(end(b, s) - prev for b in range(sms))
            for i, v in enumerate([bs[0], statistics.median(bs), bs[-1], es[0], statistics.median(es), es[-1]]):
                cols[i].append(v)
        m = [statistics.mean(c) / 1e3 for c in cols]
        print(f"{OPS[op]:10s} {m[0]:8.2f} {m[1]:8.2f} {m[2]:8.2f}      {m[3]:8.2f} {m[4]:8.2f} {m[5]:8.2f}")
    if has_staged:
        print("staging, us from a block's begin to its input staged: median / last block")
        for op in range(len(OPS)):
            if op == 1:
                continue
            med, last = [], []
            for l in middle:
                s = l * len(OPS) + op
                v = [staged(b, s) - begin(b, s) for b in range(sms) if raw[n_marks + b * steps + s]]
                if v:
                    med.append(statistics.median(v)), last.append(max(v))
            if med:
                print(f"  {OPS[op]:10s} {statistics.mean(med) / 1e3:7.2f} {statistics.mean(last) / 1e3:7.2f}")
    last_down = [max(end(b, l * len(OPS) + 4) for b in range(sms)) for l in range(layers)]
    print(f"a layer: {statistics.mean(b - a for a, b in zip(last_down, last_down[1:])) / 1e3:.2f} us")
    if not has_marks:
        return
    print("attention marks, us after the last q|k|v block ended: median over units / last")
    for k in range(N_MARKS):
        med, last, n = [], [], 0
        for l in middle:
            qkv_end = max(end(b, l * len(OPS)) for b in range(sms))
            v = [mark(b, l, k) - t0 - qkv_end for b in range(sms) if mark(b, l, k)]
            if v:
                med.append(statistics.median(v)), last.append(max(v))
                n = len(v)
        if med:
            print(f"  {k} {MARKS[k]:22s} {statistics.mean(med) / 1e3:7.2f} {statistics.mean(last) / 1e3:7.2f}  ({n} a layer)")


if __name__ == "__main__":
    main()
