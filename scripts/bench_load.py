#!/usr/bin/env python3
"""Where voxtral_runner's load time goes, and the whole process for one file (GPU machine).

  1. the model: --model DIR (an export), or bench_gpu.py's random Voxtral (full size by default)
     built and exported into --work by bench_gpu.Bench.model in a child process (so that this one
     holds no CUDA context while it times the runner); the 30 s clip of bench_gpu.py (samples
     [0, 480000) of tests/fixtures/tiny/audio/long.wav);
  2. warm page cache: each setting NAME=ENV (ENV: VAR=VALUE[,VAR=VALUE...] or -, as in
     decode_ab.py) runs `voxtral_runner -n 100 --ignore-eos -o json --latency-json L clip30.wav`
     --rounds times, the settings alternating (ABAB...) so that drift favours none. Per setting,
     medians of: the process time measured from outside (spawn to exit), load_ms and its
     breakdown (--latency-json load_breakdown_ms), the file's total, and the process's edges:
     exec to main (main_start_monotonic_ms - spawn), teardown (teardown_ms), exit (what is left
     after the report: atexit handlers, the driver closing the context);
  3. cold page cache: the blobs evicted before each of --cold runs of the first setting: echo 3
     > /proc/sys/vm/drop_caches, else posix_fadvise(POSIX_FADV_DONTNEED) on each blob, else
     vmtouch -e; which one worked is reported, with the blobs' resident fraction (mincore) before
     and after;
  4. ceilings: the page cache read rate of the blobs on 1 and N threads (os.preadv of 8 MiB
     spans, as the runner reads them), a pinned host-to-device copy of 1 GiB and the time to pin
     128 MiB (torch, in a child), persistence mode and PCIe link, cuFile/GDS presence;
  5. load.md (tables) and load.json under --out.

On the GPU machine (after bench/README.md's build and bundle):
  export LD_LIBRARY_PATH=$PWD/.devlibs PYTHONUNBUFFERED=1
  python3 scripts/bench_load.py --build build --out $OUT/load
Here, on the CPU (plumbing only: the tiny model, the CPU backend):
  python3 scripts/bench_load.py --build BUILD --model BUILD/tiny_model --work /tmp/load --out /tmp/load \\
      --device cpu --tokens 2 --rounds 2 --cold 0 --settings default=- no_warmup=VOX_NO_WARMUP=1
"""

import argparse
import ctypes
import ctypes.util
import json
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import wave
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOBS = ("audio_encoder.safetensors", "token_embedding.safetensors", "text_decoder.safetensors")
DEFAULT_SETTINGS = ["default=-", "serial=VOX_LOAD_THREADS=0", "threads2=VOX_LOAD_THREADS=2",
                    "threads4=VOX_LOAD_THREADS=4", "no_warmup=VOX_NO_WARMUP=1", "warmup4=VOX_WARMUP_TOKENS=4"]
# issue 11's targets, H200, warm page cache
TARGET_LOAD_MS = 1000.0
TARGET_PROCESS_S = 1.5
SPAN = 8 << 20  # the runner's staging buffer: bytes a read


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"), help="build dir with voxtral_runner (and voxtral_export)")
    ap.add_argument("--model", default=None, help="an exported model dir (default: make one in --work)")
    ap.add_argument("--size", choices=["full", "small"], default="full", help="the random model made without --model")
    ap.add_argument("--dtype", choices=["bf16", "fp8"], default="bf16",
                    help="the export made without --model (fp8: bench_gpu.py's FP8 decoder export)")
    ap.add_argument("--work", default=str(ROOT / "models" / "bench-full"),
                    help="where the model is made (bench_gpu.py's default: an export there is reused)")
    ap.add_argument("--clip", default=None, help="the audio (default: the 30 s clip, made in --work)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out-load"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tokens", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cold", type=int, default=3, help="cold-cache runs (0: none)")
    ap.add_argument("--settings", nargs="+", default=DEFAULT_SETTINGS, help="NAME=ENV ... (the first is the cold one)")
    ap.add_argument("--timeout", type=int, default=180, help="seconds per runner invocation")
    ap.add_argument("--make-model", action="store_true", help=argparse.SUPPRESS)  # the child's job
    return ap.parse_args()


# ---- the model and the clip (child process: torch, transformers) -----------------------------

def make_model(a):
    """bench_gpu.py's random model, checkpoint and export (reused when --work holds a matching
    one); prints the model dir as JSON on the last line."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_gpu

    work = Path(a.work)
    ns = argparse.Namespace(size=a.size, device="cuda" if a.device.startswith("cuda") else "cpu",
                            work=work, out=work / "load-model-logs", build=Path(a.build), reuse=True,
                            dtype=a.dtype)
    b = bench_gpu.Bench(ns)
    b.model()
    if not b.wait_export():
        raise SystemExit("voxtral_export failed: see " + str(b.logs / "export.log"))
    print(json.dumps({"model": str(b.model_dir)}))


def clip30(dst):
    """bench_gpu.py's 30 s clip: samples [0, 480000) of long.wav (16 kHz mono PCM16)."""
    with wave.open(str(ROOT / "tests/fixtures/tiny/audio/long.wav"), "rb") as src:
        assert src.getframerate() == 16000 and src.getnchannels() == 1 and src.getnframes() >= 480000
        frames = src.readframes(480000)
        params = src.getparams()
    with wave.open(str(dst), "wb") as w:
        w.setparams(params)
        w.writeframes(frames)
    return dst


def ensure_model(a):
    """The model dir and the clip."""
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    clip = Path(a.clip) if a.clip else clip30(work / "clip30.wav")
    if a.model:
        return Path(a.model), clip
    log(f"making the {a.size} random model ({a.dtype}) in {a.work} (reused when it is there)")
    p = subprocess.run([sys.executable, __file__, "--make-model", "--size", a.size, "--dtype", a.dtype,
                        "--work", a.work, "--build", a.build, "--device", a.device],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-3000:] + p.stderr[-3000:])
        raise SystemExit("making the model failed")
    return Path(json.loads(p.stdout.strip().splitlines()[-1])["model"]), clip


# ---- one runner invocation, timed from outside -----------------------------------------------

def run_runner(a, model, clip, env_extra):
    with tempfile.TemporaryDirectory() as tmp:
        lat = Path(tmp) / "latency.json"
        cmd = [str(Path(a.build) / "voxtral_runner"), "-m", str(model), "-d", a.device, "--ignore-eos",
               "-n", str(a.tokens), "-o", "json", "--latency-json", str(lat), str(clip)]
        env = dict(os.environ, **env_extra)
        t_spawn = time.monotonic()
        p = subprocess.run(cmd, env=env, capture_output=True, timeout=a.timeout)
        t_end = time.monotonic()
        if p.returncode != 0 or not lat.exists():
            raise RuntimeError(f"voxtral_runner exit {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}")
        L = json.loads(lat.read_text())
    lines = [json.loads(x) for x in p.stdout.decode(errors="replace").splitlines() if x.startswith("{")]
    start = L["main_start_monotonic_ms"]
    r = {"process_s": t_end - t_spawn, "load_ms": L["load_ms"], "wall_ms": L["wall_ms"],
         "teardown_ms": L["teardown_ms"], "exec_to_main_ms": start - t_spawn * 1e3,
         "exit_ms": t_end * 1e3 - (start + L["wall_ms"] + L["teardown_ms"]),
         "file_total_ms": lines[0]["latency_ms"]["total"] if lines else float("nan"),
         "load_bytes": L.get("load_bytes", 0), "load_threads": L.get("load_threads", 0)}
    for k, v in L.get("load_breakdown_ms", {}).items():
        r["load." + k] = v
    return r


def medians(runs):
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]} if runs else {}


# ---- the page cache ---------------------------------------------------------------------------

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def resident_fraction(paths):
    """Fraction of the files' pages in the page cache (mincore over a private mapping)."""
    res = tot = 0
    for p in paths:
        size = os.path.getsize(p)
        if size == 0:
            continue
        with open(p, "rb") as f:
            m = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY)
        try:
            page = mmap.PAGESIZE
            n = (size + page - 1) // page
            buf = (ctypes.c_char * size).from_buffer(m)
            vec = (ctypes.c_ubyte * n)()
            if _libc.mincore(ctypes.c_void_p(ctypes.addressof(buf)), ctypes.c_size_t(size), vec) != 0:
                return float("nan")
            res += sum(v & 1 for v in vec)
            tot += n
            del buf
        finally:
            m.close()
    return res / tot if tot else float("nan")


def evict(paths):
    """Tries to drop the files from the page cache; returns (method that worked or None, tries)."""
    tries = []
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        tries.append("drop_caches: written")
        if resident_fraction(paths) < 0.05:
            return "drop_caches", tries
    except OSError as e:
        tries.append(f"drop_caches: {e.strerror}")
    try:
        for p in paths:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        frac = resident_fraction(paths)
        tries.append(f"posix_fadvise(DONTNEED): {frac:.1%} resident after")
        if frac < 0.05:
            return "posix_fadvise", tries
    except OSError as e:
        tries.append(f"posix_fadvise: {e.strerror}")
    if shutil.which("vmtouch"):
        subprocess.run(["vmtouch", "-e", *map(str, paths)], capture_output=True)
        frac = resident_fraction(paths)
        tries.append(f"vmtouch -e: {frac:.1%} resident after")
        if frac < 0.05:
            return "vmtouch", tries
    else:
        tries.append("vmtouch: not installed")
    return None, tries


def read_rate(paths, threads):
    """GB/s of reading the files (warm cache) in 8 MiB spans on `threads` threads, as the runner
    does: spans taken in file order from a shared counter, each read into the thread's buffer."""
    spans = [(p, off, min(SPAN, os.path.getsize(p) - off)) for p in paths
             for off in range(0, os.path.getsize(p), SPAN)]
    fds = {p: os.open(p, os.O_RDONLY) for p in paths}
    lock, nxt = threading.Lock(), [0]

    def work():
        buf = bytearray(SPAN)
        view = memoryview(buf)
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(spans):
                return
            p, off, n = spans[i]
            os.preadv(fds[p], [view[:n]], off)

    t0 = time.monotonic()
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.monotonic() - t0
    for fd in fds.values():
        os.close(fd)
    return sum(s[2] for s in spans) / dt / 1e9


H2D_PROBE = r"""
import json, time, torch
t = time.perf_counter(); pinned = torch.empty(128 << 20, dtype=torch.uint8, pin_memory=True); pin = time.perf_counter() - t
x = torch.empty(1 << 30, dtype=torch.uint8, pin_memory=True); y = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
ts = []
for i in range(6):
    torch.cuda.synchronize(); t = time.perf_counter(); y.copy_(x, non_blocking=True); torch.cuda.synchronize()
    ts.append(time.perf_counter() - t)
print(json.dumps({"h2d_gb_s": (1 << 30) / min(ts[1:]) / 1e9, "pin_128mib_ms": pin * 1e3}))
"""


def ceilings(a, paths):
    c = {}
    for n in (1, 8):
        c[f"page_cache_read_gb_s_{n}_threads"] = read_rate(paths, n)
    if a.device.startswith("cuda"):
        p = subprocess.run([sys.executable, "-c", H2D_PROBE], capture_output=True, text=True, timeout=120)
        if p.returncode == 0:
            c.update(json.loads(p.stdout.strip().splitlines()[-1]))
        else:
            c["h2d_probe_error"] = p.stderr[-500:]
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,persistence_mode,pcie.link.gen.current,pcie.link.width.current",
                            "--format=csv,noheader"], capture_output=True, text=True)
        c["gpu"] = q.stdout.strip()
    gds = {"libcufile": sorted(str(x) for x in Path("/usr/local/cuda/lib64").glob("libcufile.so*")),
           "nvidia_fs_module": Path("/proc/driver/nvidia-fs").exists(),
           "cufile_json": Path("/etc/cufile.json").exists()}
    gdscheck = shutil.which("gdscheck") or next(iter(Path("/usr/local/cuda").glob("gds/tools/gdscheck*")), None)
    if gdscheck:
        g = subprocess.run([str(gdscheck), "-p"], capture_output=True, text=True, timeout=30)
        gds["gdscheck"] = (g.stdout + g.stderr)[-1500:]
    c["gds"] = gds
    return c


# ---- the report -------------------------------------------------------------------------------

COLUMNS = [("process s", "process_s", "{:.3f}"), ("load", "load_ms", "{:.0f}"), ("file", "file_total_ms", "{:.0f}"),
           ("exec>main", "exec_to_main_ms", "{:.0f}"), ("teardown", "teardown_ms", "{:.0f}"), ("exit", "exit_ms", "{:.0f}")]
BREAKDOWN = [("device", "load.device"), ("context", "load.context"), ("staging", "load.staging"),
             ("cuBLASLt", "load.blas"), ("files", "load.model_files"), ("tokenizer", "load.tokenizer"),
             ("dev wait", "load.device_wait"), ("weights", "load.weights"), ("alloc", "load.alloc"),
             ("1 by 1", "load.serial"), ("parallel", "load.bulk"), ("reads", "load.read"),
             ("buf wait", "load.buffer_wait"), ("uploads", "load.upload"), ("after reads", "load.upload_after_reads"),
             ("blas wait", "load.blas_wait"), ("tok wait", "load.tokenizer_wait"), ("sync", "load.sync"),
             ("warm-up", "load.warmup")]


def table(rows, cols):
    head = "| setting | " + " | ".join(c[0] for c in cols) + " |"
    sep = "|---" * (len(cols) + 1) + "|"
    out = [head, sep]
    for name, m in rows:
        cells = []
        for c in cols:
            v = m.get(c[1])
            cells.append("-" if v is None else (c[2] if len(c) > 2 else "{:.1f}").format(v))
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def report(res):
    md = ["# voxtral_runner load", "",
          f"{res['env'].get('date')}, {res['env'].get('gpu', res['env'].get('device'))}, git {res['env'].get('git', '?')}; "
          f"model {res['model']} ({res['model_bytes'] / 1e9:.2f} GB of blobs), clip {res['clip']}, "
          f"-n {res['tokens']} --ignore-eos; medians of {res['rounds']} runs a setting (ms unless stated).", "",
          "## Warm page cache", "", table([(k, v) for k, v in res["warm"].items()], COLUMNS), "",
          "Load breakdown (voxtral_load_timings; device and tokenizer run beside the rest):", "",
          table([(k, v) for k, v in res["warm"].items()], BREAKDOWN), ""]
    d = res["warm"].get(next(iter(res["warm"]), ""), {})
    if d:
        md.append(f"Targets (issue 11): load <= {TARGET_LOAD_MS:.0f} ms: {d['load_ms']:.0f} "
                  f"({'met' if d['load_ms'] <= TARGET_LOAD_MS else 'NOT met'}); whole process <= {TARGET_PROCESS_S} s: "
                  f"{d['process_s']:.3f} ({'met' if d['process_s'] <= TARGET_PROCESS_S else 'NOT met'}). Reads: "
                  f"{d.get('load_bytes', 0) / 1e9:.2f} GB on {d.get('load_threads', 0):.0f} threads.")
        md.append("")
    if res.get("warmup_effect"):
        md += ["Warm-up: " + res["warmup_effect"], ""]
    cold = res.get("cold")
    md += ["## Cold page cache", ""]
    if not cold:
        md += ["Not run (--cold 0).", ""]
    elif cold.get("runs"):
        md += [f"Eviction: {cold['method']} ({'; '.join(cold['tries'])}); resident before {cold['resident_before']:.1%}, "
               f"after {cold['resident_after']:.1%}.", "",
               table([(cold["setting"], cold["median"])], COLUMNS), "",
               table([(cold["setting"], cold["median"])], BREAKDOWN), ""]
    else:
        md += [f"Not measured: the blobs could not be evicted ({'; '.join(cold.get('tries', []))}).", ""]
    md += ["## Ceilings", "", "```", json.dumps(res.get("ceilings", {}), indent=1), "```", ""]
    if res["errors"]:
        md += ["## Errors", ""] + [f"- {e}" for e in res["errors"]] + [""]
    return "\n".join(md)


def main():
    a = parse_args()
    if a.make_model:
        make_model(a)
        return
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    model, clip = ensure_model(a)
    blobs = [model / b for b in BLOBS]
    res = {"env": {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "device": a.device, "cpus": os.cpu_count()},
           "model": str(model), "clip": str(clip), "model_bytes": sum(p.stat().st_size for p in blobs),
           "tokens": a.tokens, "rounds": a.rounds, "settings": a.settings, "warm": {}, "errors": []}
    try:
        res["env"]["git"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                           capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    settings = []
    for s in a.settings:
        name, _, env = s.partition("=")
        extra = dict(kv.split("=", 1) for kv in env.split(",")) if env and env != "-" else {}
        settings.append((name, extra))

    def save():
        (out / "load.json").write_text(json.dumps(res, indent=1) + "\n")
        (out / "load.md").write_text(report(res))

    log("ceilings: page cache reads, pinned uploads, GDS")
    for p in blobs:  # warm the page cache first
        with open(p, "rb") as f:
            while f.read(64 << 20):
                pass
    try:
        res["ceilings"] = ceilings(a, blobs)
        res["env"]["gpu"] = res["ceilings"].get("gpu")
    except Exception as e:  # noqa: BLE001 - context only
        res["errors"].append(f"ceilings: {e}")
    log(json.dumps(res.get("ceilings", {}))[:600])

    try:
        run_runner(a, model, clip, {})  # the first run pays for what later runs find ready (disk, driver)
    except Exception as e:  # noqa: BLE001
        res["errors"].append(f"first run: {e}")
    runs = {name: [] for name, _ in settings}
    for rnd in range(a.rounds):
        for name, extra in settings:
            try:
                r = run_runner(a, model, clip, extra)
                runs[name].append(r)
                log(f"round {rnd + 1} {name}: process {r['process_s']:.3f} s, load {r['load_ms']:.0f} ms "
                    f"(weights {r.get('load.weights', 0):.0f}, warm-up {r.get('load.warmup', 0):.0f}), "
                    f"file {r['file_total_ms']:.0f} ms, teardown {r['teardown_ms']:.0f}, exit {r['exit_ms']:.0f}")
            except Exception as e:  # noqa: BLE001
                res["errors"].append(f"{name}: {e}")
                log(f"ERROR {name}: {e}")
        res["warm"] = {name: medians(rs) for name, rs in runs.items() if rs}
        save()

    w = res["warm"]
    base = w.get(settings[0][0])
    nw = w.get("no_warmup")
    if base and nw:
        res["warmup_effect"] = (
            f"costs {base['load.warmup']:.0f} ms of load; the file takes {nw['file_total_ms']:.0f} ms without it and "
            f"{base['file_total_ms']:.0f} ms with it (saves {nw['file_total_ms'] - base['file_total_ms']:.0f}); "
            f"whole process {nw['process_s']:.3f} s without, {base['process_s']:.3f} s with.")

    if a.cold > 0:
        name, extra = settings[0]
        cold = {"setting": name, "resident_before": resident_fraction(blobs), "runs": []}
        for i in range(a.cold):
            method, tries = evict(blobs)
            cold.update(method=method, tries=tries, resident_after=resident_fraction(blobs))
            if method is None:
                break
            try:
                r = run_runner(a, model, clip, extra)
                cold["runs"].append(r)
                log(f"cold {i + 1} ({method}): process {r['process_s']:.3f} s, load {r['load_ms']:.0f} ms, "
                    f"reads {r.get('load.read', 0):.0f} ms")
            except Exception as e:  # noqa: BLE001
                res["errors"].append(f"cold: {e}")
        cold["median"] = medians(cold["runs"])
        res["cold"] = cold
    save()
    print(report(res))
    return 1 if res["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
