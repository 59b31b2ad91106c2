#!/usr/bin/env python3
"""A random Voxtral, exported for voxtral_runner: the model of scripts/gpu-check.sh --sanitize.

  1. voxtral_random.build_random_model: transformers' Voxtral at full size (Voxtral Mini 3B's
     widths) or the small one, with make_reference.py's healthy initialisation, a fixed seed and
     bf16-representable weights; --decoder-layers / --encoder-layers change the layer counts and
     nothing else, so that every kernel runs at the model's real shapes while a run under
     compute-sanitizer stays small (racecheck's bookkeeping on the host and synccheck's time grow
     with the launches, and at 30 + 32 layers racecheck's got the runner killed);
  2. voxtral_random.write_tekken: the synthetic tekken.json with the full vocabulary;
  3. save_pretrained in bf16 (embed_positions float32, as the release) into a checkpoint beside
     --out, then our voxtral_export --dtype bf16|fp8 into --out; the checkpoint is deleted after
     a successful export unless --keep-checkpoint.

--out holds the exported model and random_model.json (what made it). Run again with the same
arguments, it is reused (--force makes it again); a --out that holds something else is refused.

On the GPU machine (torch and transformers installed; bench/NOTES-2026-12-01-sanitizers.md):
  python3 scripts/make_random_model.py --size full --decoder-layers 2 --encoder-layers 2 \\
      --out models/san-full-2x2 --build build
  scripts/gpu-check.sh --sanitize build models/san-full-2x2 OUT/sanitize
Here, on the CPU (plumbing):
  /work/refenv/bin/python scripts/make_random_model.py --size small --out /tmp/san-small \\
      --build BUILD --device cpu
"""

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import voxtral_random as vr  # noqa: E402
from voxtral_random import log  # noqa: E402

STAMP = "random_model.json"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=["full", "small"], default="full",
                    help="widths of Voxtral Mini 3B (full) or voxtral_random.py's small model")
    ap.add_argument("--decoder-layers", type=int, default=None, help="text decoder layers (default: the size's)")
    ap.add_argument("--encoder-layers", type=int, default=None, help="audio encoder layers (default: the size's)")
    ap.add_argument("--dtype", choices=["bf16", "fp8"], default="bf16",
                    help="voxtral_export --dtype: bf16, or fp8 (the decoder's linear layers FP8)")
    ap.add_argument("--out", required=True, help="the exported model directory")
    ap.add_argument("--build", default=str(vr.ROOT / "build"), help="build dir with voxtral_export")
    ap.add_argument("--device", default=None, help="torch device that builds the model (default cuda if present)")
    ap.add_argument("--seed", type=int, default=vr.SEED)
    ap.add_argument("--keep-checkpoint", action="store_true",
                    help="keep the transformers checkpoint (OUT-checkpoint) after the export")
    ap.add_argument("--force", action="store_true", help="make the model again even when --out has it")
    a = ap.parse_args()
    for name in ("decoder_layers", "encoder_layers"):
        v = getattr(a, name)
        if v is not None and v < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    a.out = Path(a.out)
    a.build = Path(a.build)
    a.device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    return a


def stamp_of(a):
    """What the model in --out is made of: compared to reuse it."""
    return {"size": a.size, "decoder_layers": a.decoder_layers, "encoder_layers": a.encoder_layers,
            "dtype": a.dtype, "seed": a.seed, "script": 1}


def clear_out(out):
    """Empties --out for a new model; refuses a directory that this script did not make."""
    if not out.exists():
        return
    if any(out.iterdir()) and not (out / STAMP).exists():
        raise SystemExit(f"{out} exists and holds no {STAMP}: not a model of this script; "
                         "give an empty or new --out")
    shutil.rmtree(out)


def main():
    a = parse_args()
    exporter = a.build / "voxtral_export"
    if not exporter.exists():
        raise SystemExit(f"{exporter} not found: pass --build DIR of a build with voxtral_export")
    want = stamp_of(a)
    stamp = a.out / STAMP
    if not a.force and stamp.exists() and (a.out / "voxtral.json").exists():
        have = json.loads(stamp.read_text())
        if {k: have.get(k) for k in want} == want:
            log(f"{a.out} already holds this model ({STAMP}); --force makes it again")
            print(a.out)
            return 0
    clear_out(a.out)
    ckpt = a.out.parent / (a.out.name + "-checkpoint")
    shutil.rmtree(ckpt, ignore_errors=True)

    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    log(f"building the random {a.size} Voxtral on {a.device} (decoder layers "
        f"{a.decoder_layers or 'default'}, encoder layers {a.encoder_layers or 'default'}, seed {a.seed})")
    m32, cfg = vr.build_random_model(a.size, a.device, a.seed, a.decoder_layers, a.encoder_layers)
    tc, ac = cfg.text_config, cfg.audio_config
    params = sum(p.numel() for p in m32.parameters())
    log(f"model: {params / 1e9:.3f} B parameters; decoder {tc.num_hidden_layers} x {tc.hidden_size}, "
        f"encoder {ac.num_hidden_layers} x {ac.hidden_size}, vocabulary {tc.vocab_size}")
    m16 = vr.bf16_copy(m32)
    del m32
    t0 = time.monotonic()
    m16.save_pretrained(ckpt)
    del m16
    log(f"saved the bf16 checkpoint to {ckpt} in {time.monotonic() - t0:.1f} s; writing tekken.json")
    vr.write_tekken(ckpt / "tekken.json", tc.vocab_size)

    cmd = [str(exporter), "--from", str(ckpt), "--out", str(a.out), "--dtype", a.dtype]
    log("$ " + " ".join(cmd))
    rc = subprocess.run(cmd).returncode
    if rc != 0:
        raise SystemExit(f"voxtral_export failed (exit status {rc}); the checkpoint stays in {ckpt}")
    if not a.keep_checkpoint:
        shutil.rmtree(ckpt)
    want.update(params=params, decoder_hidden=tc.hidden_size, encoder_hidden=ac.hidden_size,
                decoder_layers_made=tc.num_hidden_layers, encoder_layers_made=ac.num_hidden_layers,
                device=a.device, torch=torch.__version__, transformers=transformers.__version__)
    stamp.write_text(json.dumps(want, indent=1) + "\n")
    log(f"done: {a.out}")
    print(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
