#!/usr/bin/env python3
"""Teacher-forces transformers on the ids our runner produced for a file, and reports per step
and in summary: |delta logprob| against transformers float32 (mean, max), the same for
transformers bf16 (the yardstick), and top-1 agreement with float32.

Ours comes from either
  --json FILE   a JSON line of `voxtral_runner -o json --logprobs K` (or --force-tokens): its
                `tokens` and `logprobs[i].logprob`; top-1 from `logprobs[i].top_logprobs[0]`
                (needs K >= 1), or
  --dump FILE   `voxtral_runner --dump-tensors FILE`: the prompt ids, the chosen ids and the
                float32 logits of every step (log_softmax taken here), plus the audio
                embeddings (relative L2 error reported too). When the last step chose </s>
                (not in ids), that step is scored as </s>.

transformers runs the checkpoint (transformers layout, e.g. bench_gpu.py's
models/bench-full/checkpoint_hf) in float32 (no TF32, eager attention: the reference) and in
bf16 (sdpa), one forward pass over prompt + ids with the features of the same 16 kHz PCM16 WAV
(WhisperFeatureExtractor as in tests/fixtures/README.md). The prompt is voxtral-spec.md section
5, built from the checkpoint's tekken.json (checked against the dump's when given).

  voxtral_runner -m MODEL -o json --logprobs 5 -l en clip.wav > ours.jsonl
  python3 scripts/compare_logprobs.py --checkpoint CKPT --audio clip.wav --json ours.jsonl
"""

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import voxtral_random as vr  # noqa: E402
from voxtral_random import log  # noqa: E402


def ours_from_json(path, audio, line_no):
    text = sys.stdin.read() if str(path) == "-" else Path(path).read_text(encoding="utf-8", errors="replace")
    lines = vr.json_lines(text)
    if not lines:
        raise SystemExit(f"{path}: no JSON line")
    if line_no is not None:
        line = lines[line_no]
    else:
        same = [ln for ln in lines if Path(ln.get("file", "")).name == Path(audio).name]
        line = same[0] if same else lines[0]
    if not line.get("logprobs"):
        raise SystemExit(f"{path}: the line has no logprobs: run voxtral_runner with --logprobs K (K >= 1) "
                         "or --force-tokens")
    ids = [int(t) for t in line["tokens"]]
    lps = [float(e["logprob"]) for e in line["logprobs"]]
    assert [int(e["id"]) for e in line["logprobs"]] == ids, "tokens and logprobs[].id differ"
    tops = [e.get("top_logprobs") or [] for e in line["logprobs"]]
    top1 = [int(t[0]["id"]) for t in tops] if all(tops) else None
    return {"ids": ids, "ours": {"logprobs": lps, "top1": top1}, "language": line.get("language"),
            "prompt": None, "audio": None, "file": line.get("file")}


def ours_from_dump(path, eos):
    d = vr.read_dump(path)
    ids, logits = list(d["ids"]), d["logits"]
    if logits.shape[0] == len(ids) + 1:
        ids.append(eos)  # the step that chose </s>
    elif logits.shape[0] != len(ids):
        raise SystemExit(f"{path}: {logits.shape[0]} logits rows for {len(ids)} ids")
    return {"ids": ids, "ours": {"logits": logits}, "language": None, "prompt": d["prompt_ids"],
            "audio": d["audio"], "file": None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="transformers-layout checkpoint dir (config.json, safetensors)")
    ap.add_argument("--audio", required=True, help="the 16 kHz PCM16 WAV our runner transcribed")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--json", help="file with our runner's JSON line(s) (-o json --logprobs K); - for stdin")
    src.add_argument("--dump", help="our runner's --dump-tensors file")
    ap.add_argument("--line", type=int, default=None, help="which JSON line (default: the one for --audio, else the first)")
    ap.add_argument("--language", default=None, help="the -l CODE our runner was given (default: the JSON line's)")
    ap.add_argument("--tokenizer", default=None, help="tekken.json (default: CHECKPOINT/tekken.json)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", default=None, help="write the comparison as JSON here")
    ap.add_argument("--md", default=None, help="write the markdown report here")
    ap.add_argument("--quiet-steps", action="store_true", help="summary only on stdout")
    a = ap.parse_args()
    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()

    tk = vr.Tekken(a.tokenizer or Path(a.checkpoint) / "tekken.json")
    if a.dump:
        ours = ours_from_dump(a.dump, tk.sid("</s>"))
    else:
        ours = ours_from_json(a.json, a.audio, a.line)
    language = a.language if a.language is not None else ours["language"]
    x = vr.read_wav(a.audio)
    feats = vr.features(x)
    prompt = tk.prompt(feats.shape[0], language)
    notes = []
    if ours["prompt"] is not None and ours["prompt"] != prompt:
        # the dump's prompt is what our runner ran: score that, but say so
        notes.append(f"our prompt ({len(ours['prompt'])} ids) differs from the one built here ({len(prompt)} ids, "
                     f"language {language!r}): using ours")
        prompt = ours["prompt"]
    ids = ours["ids"]
    if not ids:
        raise SystemExit("no ids to score")
    log(f"{a.audio}: {len(x) / vr.SAMPLE_RATE:.2f} s, {feats.shape[0]} chunk(s), prompt {len(prompt)} ids, "
        f"{len(ids)} steps; loading {a.checkpoint} on {a.device}")

    dev = torch.device(a.device)
    if dev.type == "cuda":
        vr.set_exact_fp32()
    m32, m16 = vr.load_reference(a.checkpoint, dev)
    r32 = vr.reference_forced(m32, prompt, ids, feats)
    r16 = vr.reference_forced(m16, prompt, ids, feats)
    del m32, m16
    cmp = vr.compare_forced(ids, r32["logits"], {"ours": ours["ours"], "bf16": {"logits": r16["logits"]}})
    res = {"checkpoint": str(a.checkpoint), "audio": str(a.audio), "language": language, "n_prompt": len(prompt),
           "source": "dump" if a.dump else "json", "notes": notes, **cmp}
    if ours["audio"] is not None:
        res["audio_rel_l2"] = {"ours": vr.rel_l2(ours["audio"], r32["audio"]), "bf16": vr.rel_l2(r16["audio"], r32["audio"])}

    s = cmp["summary"]
    md = [f"# {Path(a.audio).name}: ours vs transformers, teacher-forced on our {len(ids)} ids", "",
          f"checkpoint {a.checkpoint}; language {language}; prompt {len(prompt)} ids; ours from {res['source']}; "
          f"transformers {transformers.__version__} on {a.device}: float32 reference (no TF32, eager), bf16 yardstick "
          f"(sdpa). Log-probs: log_softmax in float32 over the full vocabulary.", ""]
    md += [f"note: {n}" for n in notes]
    md += [vr.summary_table(cmp, ["ours", "bf16"]), ""]
    if "audio_rel_l2" in res:
        md += [f"audio embeddings rel L2 vs fp32: ours {res['audio_rel_l2']['ours']:.3e}, bf16 "
               f"{res['audio_rel_l2']['bf16']:.3e}", ""]
    o, b = s["ours"], s["bf16"]
    ratio = o["mean_abs_dlogprob"] / b["mean_abs_dlogprob"] if b["mean_abs_dlogprob"] else float("inf")
    md.append(f"mean |dlogprob| ours / bf16 = {ratio:.3g}; fp32 smallest top-2 margin "
              f"{cmp['reference']['min_top2_margin']:.3g} (a near-tie can flip top-1 legitimately)")
    md.append("")
    steps = vr.steps_table(cmp, ["ours", "bf16"], tk)
    full = "\n".join(md + ["## Per step", "", steps, ""])
    print(full if not a.quiet_steps else "\n".join(md), flush=True)
    if a.md:
        Path(a.md).write_text(full)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
