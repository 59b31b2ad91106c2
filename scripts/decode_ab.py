#!/usr/bin/env python3
"""Decode speed of voxtral_runner under several environment settings, side by side (GPU machine).

Each setting runs the runner once on REPEATS copies of one clip (--ignore-eos, -n TOKENS, -o json
--latency-json), and reports the medians over the copies after the first: decode ms/token
(text_decoder_decode / (tokens - 1)), the encoder, prefill and end-to-end ms. Settings are NAME=ENV
pairs, ENV a comma-separated list of VAR=VALUE ("-" for none); RUNNER=PATH in ENV runs another
build instead of --runner (binary A/B), e.g.
    scripts/decode_ab.py --runner B/voxtral_runner --model M [--wav clip30.wav] \\
        default=- no_pdl=VOX_NO_PDL=1 cublas=VOX_NO_MATVEC=1 old=RUNNER=old/voxtral_runner
Rounds alternate the settings (ABAB...) so clock or thermal drift does not favour one.
A second table gives each setting's whole runs (the --latency-json stage sums over all copies
and the run's wall time, medians over the rounds): with --batch-size > 1 a file's stage times
are shares of batched steps, and the run totals are what an A/B of a batched change compares.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run_once(a, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    runner = env.pop("RUNNER", a.runner)
    with tempfile.NamedTemporaryFile(suffix=".json") as lat:
        cmd = [runner, "-m", a.model, "-d", a.device, "--batch-size", str(a.batch_size), "--ignore-eos",
               "-n", str(a.tokens), "-o", "json",
               "--latency-json", lat.name] + [a.wav] * a.repeats
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            return None, None, p.stderr[-2000:]
        with open(lat.name) as f:
            run = json.load(f)
    run_ms = run.get("latency_ms", {})
    run_totals = [run_ms.get("text_decoder_decode", float("nan")),
                  run_ms.get("text_decoder_prefill", float("nan")),
                  run_ms.get("audio_encoder", float("nan")), run_ms.get("total", float("nan")),
                  run.get("wall_ms", float("nan"))]
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    lines = lines[1:]  # the first run warms up
    dec = [l["latency_ms"]["text_decoder_decode"] / max(1, len(l["tokens"]) - 1) for l in lines]
    enc = [l["latency_ms"].get("audio_encoder", float("nan")) for l in lines]
    pre = [l["latency_ms"].get("text_decoder_prefill", float("nan")) for l in lines]
    tot = [l["latency_ms"]["total"] for l in lines]
    return (dec, enc, pre, tot), run_totals, None


def parse_settings(args):
    """NAME=ENV arguments as (name, {VAR: VALUE}) pairs; ENV is VAR=VALUE[,VAR=VALUE...] or -."""
    settings = []
    for s in args:
        name, _, env = s.partition("=")
        extra = {}
        if env and env != "-":
            for kv in env.split(","):
                k, _, v = kv.partition("=")
                extra[k] = v
        settings.append((name, extra))
    return settings


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runner", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--wav", default=None,
                    help="the clip (default: bench_gpu.py's 30 s clip, written to a temporary file)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tokens", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=1,
                    help="sequences in flight (1: the copies run one after another, each decoding alone)")
    ap.add_argument("--repeats", type=int, default=4, help="clip copies per run (the first is dropped)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("settings", nargs="+", help="NAME=ENV (ENV: VAR=VALUE[,VAR=VALUE...] or -)")
    a = ap.parse_args()
    settings = parse_settings(a.settings)
    if a.wav is None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_load  # noqa: E402 (light: its heavy imports are inside its functions)
        a.wav = str(bench_load.clip30(os.path.join(tempfile.mkdtemp(prefix="decode_ab-"), "clip30.wav")))
    results = {name: ([], [], [], []) for name, _ in settings}
    runs = {name: [] for name, _ in settings}
    for _ in range(a.rounds):
        for name, extra in settings:
            r, totals, err = run_once(a, extra)
            if r is None:
                print(f"{name}: runner failed:\n{err}", file=sys.stderr)
                continue
            for acc, vals in zip(results[name], r):
                acc.extend(vals)
            runs[name].append(totals)
    print(f"{'setting':24s} {'decode ms/tok':>13s} {'min':>7s} {'encoder ms':>10s} {'prefill ms':>10s} "
          f"{'total ms':>9s}  runs")
    for name, _ in settings:
        dec, enc, pre, tot = results[name]
        if not dec:
            print(f"{name:24s} failed")
            continue
        print(f"{name:24s} {statistics.median(dec):13.4f} {min(dec):7.4f} {statistics.median(enc):10.2f} "
              f"{statistics.median(pre):10.2f} {statistics.median(tot):9.1f}  {len(dec)}")
    print(f"\nwhole runs ({a.repeats} copies, medians over rounds; ms)")
    print(f"{'setting':24s} {'decode':>9s} {'prefill':>9s} {'encoder':>9s} {'stages':>9s} {'wall':>9s}  runs")
    for name, _ in settings:
        if not runs[name]:
            continue
        cols = [statistics.median(c) for c in zip(*runs[name])]
        print(f"{name:24s} " + " ".join(f"{v:9.1f}" for v in cols) + f"  {len(runs[name])}")


if __name__ == "__main__":
    main()
