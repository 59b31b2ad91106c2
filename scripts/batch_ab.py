#!/usr/bin/env python3
"""Batched throughput of voxtral_runner under several environment settings, side by side (GPU
machine): the A/B tool for changes to the batching engine, where decode_ab.py is for one clip.

Two workloads, made once in --work (seeded, so every call makes the same files): LARGE clips of
30 s decoded for --tokens tokens each (--ignore-eos -n TOKENS: bench_batch.py's step 2 shape) and
MIXED files of 3 to 30 s decoded to their default token budget (--ignore-eos: step 4's shape).
The signal is a tone with noise, not bench_batch.py's windows, so compare settings with each
other, not with RESULTS-*. Each round runs every setting on LARGE then MIXED (ABAB... so drift
favours none), and the table gives per run: RTFx over the stage sum and over the wall, the
encoder, prefill, decode and audio stage sums (ms), steps, and the GPU's mean SM clock (MHz) and
power (W) over the run (nvidia-smi sampled every 100 ms; "nan" without it): a setting that looks
slower on the same work may be one the card ran at a lower clock. Then the medians over the
rounds, and whether every file's ids equal the first setting's (first round). Settings are decode_ab.py's
NAME=ENV (ENV: VAR=VALUE[,VAR=VALUE...] or -; RUNNER=PATH runs another build); --trace-dir keeps a
VOX_STEP_TRACE file of each setting's first round (scripts/step_trace.py reads them).

    scripts/batch_ab.py --runner build/voxtral_runner --model models/full \\
        new=- old=VOX_ATTN_DECODE=1,VOX_GRAPH_RECORD_AFTER=0
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_ab import parse_settings  # noqa: E402


def make_inputs(work, n_large, n_mixed):
    import numpy as np
    import wave

    def write(path, x):
        f = wave.open(path, "wb")
        f.setnchannels(1), f.setsampwidth(2), f.setframerate(16000)
        f.writeframes((np.clip(x, -1, 1) * 32000).astype("<i2").tobytes())
        f.close()

    large = [os.path.join(work, "large", f"w{i:03d}.wav") for i in range(n_large)]
    mixed = [os.path.join(work, "mixed", f"m{i:03d}.wav") for i in range(n_mixed)]
    if all(os.path.exists(p) for p in large + mixed):
        return large, mixed
    os.makedirs(os.path.join(work, "large"), exist_ok=True)
    os.makedirs(os.path.join(work, "mixed"), exist_ok=True)
    rng = np.random.default_rng(11)
    n = 16000 * 30
    t = np.arange(n) / 16000
    base = 0.3 * np.sin(2 * np.pi * 220 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
    for p in large:
        write(p, base + 0.05 * rng.standard_normal(n))
    for p, s in zip(mixed, rng.uniform(3, 30, n_mixed)):
        k = int(16000 * s)
        write(p, base[:k] + 0.05 * rng.standard_normal(k))
    return large, mixed


class GpuSampler:
    """The SM clock and power draw of one GPU, sampled by nvidia-smi while a run lasts."""

    def __init__(self, device):
        index = device.split(",")[0].split(":")[1] if ":" in device.split(",")[0] else "0"
        try:
            self.p = subprocess.Popen(["nvidia-smi", "-i", index, "--query-gpu=clocks.sm,power.draw",
                                       "--format=csv,noheader,nounits", "-lms", "100"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self.p = None

    def stop(self):
        """(mean MHz, mean W) over the samples, nan where there were none."""
        if not self.p:
            return float("nan"), float("nan")
        self.p.terminate()
        out, _ = self.p.communicate()
        mhz, watts = [], []
        for line in out.splitlines():
            try:
                c, w = (float(v) for v in line.split(","))
            except ValueError:
                continue
            mhz.append(c), watts.append(w)
        mean = lambda v: sum(v) / len(v) if v else float("nan")  # noqa: E731
        return mean(mhz), mean(watts)


def run_once(a, extra, files, tokens, trace):
    env = dict(os.environ)
    env.update(extra)
    runner = env.pop("RUNNER", a.runner)
    if trace:
        env["VOX_STEP_TRACE"] = trace
    with tempfile.NamedTemporaryFile(suffix=".json") as lat:
        cmd = [runner, "-m", a.model, "-d", a.device, "--ignore-eos", "--no-progress", "-o", "json",
               "--latency-json", lat.name] + (["-n", str(tokens)] if tokens else []) + \
              (["--batch-size", str(a.batch_size)] if a.batch_size else []) + files
        gpu = GpuSampler(a.device)
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        mhz, watts = gpu.stop()
        if p.returncode != 0:
            return None, p.stderr[-2000:]
        with open(lat.name) as f:
            run = json.load(f)
    ids = [json.loads(l).get("ids") for l in p.stdout.splitlines() if l.startswith("{")]
    ms = run["latency_ms"]
    row = [run["rtfx"], run["rtfx_wall"], ms["audio_encoder"], ms["text_decoder_prefill"],
           ms["text_decoder_decode"], ms["audio"], run["batch"]["steps"], mhz, watts]
    return (row, ids), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runner", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--work", default="models/batch-ab", help="where the input files are made")
    ap.add_argument("--large", type=int, default=256, help="30 s clips (0: none)")
    ap.add_argument("--mixed", type=int, default=128, help="files of 3 to 30 s (0: none)")
    ap.add_argument("--tokens", type=int, default=100, help="tokens a 30 s clip of LARGE")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=0,
                    help="the runner's --batch-size in every run (0: its default): steps of that many rows")
    ap.add_argument("--trace-dir", default=None)
    ap.add_argument("settings", nargs="+", help="NAME=ENV (ENV: VAR=VALUE[,VAR=VALUE...] or -)")
    a = ap.parse_args()
    settings = parse_settings(a.settings)
    large, mixed = make_inputs(a.work, a.large, a.mixed)
    loads = [(f"{len(large)} x 30 s", large, a.tokens, "large"), (f"{len(mixed)} mixed", mixed, 0, "mixed")]
    loads = [l for l in loads if l[1]]
    rows, ids = {}, {}
    cols = "rtfx  rtfx_wall  encoder  prefill   decode    audio  steps   mhz  watts"
    print(f"{'run':34s} {cols}")
    for r in range(a.rounds):
        for name, extra in settings:
            for load, files, tokens, key in loads:
                trace = None
                if a.trace_dir and r == 0:
                    os.makedirs(a.trace_dir, exist_ok=True)
                    trace = os.path.join(a.trace_dir, f"trace_{name}_{key}.txt")
                got, err = run_once(a, extra, files, tokens, trace)
                if got is None:
                    print(f"{name} {load}: runner failed:\n{err}", file=sys.stderr)
                    continue
                row, file_ids = got
                rows.setdefault((name, load), []).append(row)
                if r == 0:
                    ids[(name, load)] = file_ids
                print(f"{name + ' ' + load + ' r' + str(r + 1):34s} {row[0]:6.1f} {row[1]:8.1f} "
                      + " ".join(f"{v:8.1f}" for v in row[2:6]) + f" {row[6]:6d} {row[7]:5.0f} {row[8]:6.0f}",
                      flush=True)
    print(f"\nmedians over {a.rounds} rounds")
    print(f"{'run':34s} {cols}  ids as {settings[0][0]}")
    for load, _, _, _ in loads:
        for name, _ in settings:
            got = rows.get((name, load))
            if not got:
                continue
            med = [statistics.median(c) for c in zip(*got)]
            a_ids, b_ids = ids.get((settings[0][0], load)), ids.get((name, load))
            same = sum(x == y for x, y in zip(a_ids or [], b_ids or []))
            print(f"{name + ' ' + load:34s} {med[0]:6.1f} {med[1]:8.1f} "
                  + " ".join(f"{v:8.1f}" for v in med[2:6]) + f" {med[6]:6.0f} {med[7]:5.0f} {med[8]:6.0f}"
                  + f"  {same}/{len(b_ids or [])}")


if __name__ == "__main__":
    main()
