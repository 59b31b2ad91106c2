"""Shared helpers of scripts/bench_gpu.py and scripts/compare_logprobs.py.

- a random Voxtral at full size (VoxtralConfig() defaults, Voxtral Mini 3B) or a small one, with
  make_reference.py's healthy initialisation, on any torch device;
- the synthetic tekken.json with the full vocabulary (make_reference.py's writer and BPE);
- 16 kHz PCM16 WAV input/output with the stdlib `wave` module, and the features transformers
  computes from the samples (make_reference.py's features_of / pad_30s);
- the transcription prompt (voxtral-spec.md section 5) from any tekken.json;
- the reference computations (transformers float32 and bfloat16) and the comparison of our
  runner's outputs with them: relative L2 errors, top-1 agreement, |delta logprob|.

make_reference.py is imported, not copied. It imports soundfile and soxr at module level, which
the GPU machine does not have; nothing used from it here needs them, so missing modules are
replaced by placeholders for the import (any use of them would raise).
"""

import base64
import copy
import importlib
import importlib.machinery
import json
import math
import os
import subprocess
import sys
import time
import types
import wave
from pathlib import Path

import numpy as np
import torch

SCRIPTS = Path(__file__).resolve().parent
ROOT = SCRIPTS.parent

# ----------------------------------------------------------------------------------------------
# make_reference.py, imported
# ----------------------------------------------------------------------------------------------

_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class _MissingModule(types.ModuleType):
    def __getattr__(self, attr):
        raise ImportError(f"{self.__name__} is not installed (placeholder for importing make_reference)")


def _import_make_reference():
    # make_reference sets OMP_NUM_THREADS=1 etc. at import (its fixtures must be bit-exact):
    # start torch's thread pool first and restore the variables afterwards, so that neither
    # this process nor the runner started from it is limited to one thread.
    torch.get_num_threads()
    # What make_reference takes from transformers, imported before any placeholder exists, so
    # that transformers' own checks of optional packages see the real installation.
    from transformers import VoxtralConfig, VoxtralForConditionalGeneration, WhisperFeatureExtractor  # noqa: F401
    import tiktoken  # noqa: F401
    import safetensors.torch  # noqa: F401

    saved = {v: os.environ.get(v) for v in _THREAD_VARS}
    placeholders = []
    for name in ("soundfile", "soxr", "regex"):
        try:
            importlib.import_module(name)
        except ImportError:
            mod = _MissingModule(name)
            mod.__spec__ = importlib.machinery.ModuleSpec(name, None)
            sys.modules[name] = mod
            placeholders.append(name)
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    try:
        import make_reference
    finally:
        for v, val in saved.items():
            if val is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = val
        for name in placeholders:
            sys.modules.pop(name, None)
    return make_reference, placeholders


mr, MISSING_FOR_MAKE_REFERENCE = _import_make_reference()

SEED = mr.SEED
NUM_SPECIAL = mr.NUM_SPECIAL  # 1000
FULL_VOCAB = 131072  # default_vocab_size of the release
SAMPLE_RATE = 16000
CHUNK = mr.CHUNK  # 480000 samples = 30 s
TOKENS_PER_CHUNK = 375

# ----------------------------------------------------------------------------------------------
# Logging
# ----------------------------------------------------------------------------------------------

_T0 = time.monotonic()


def command_line(script):
    """The command that ran this script, for a results header: the VOX_* variables of the
    environment (the runner's switches, which change what is measured) before it."""
    env = [f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("VOX_")]
    return " ".join(env + ["python3", script] + sys.argv[1:])


def environment_line(env, runner_device, device):
    """A results header's first line: when, which GPU and libraries, which runner build."""
    return (f"{env.get('date')}; {env.get('gpu', 'no GPU')} {env.get('nvidia_smi', '')}; torch {env.get('torch')}, "
            f"transformers {env.get('transformers')}; runner {env.get('runner_version')} "
            f"(build {env.get('build_CMAKE_BUILD_TYPE', '?')}, git {str(env.get('git', '?'))[:12]}"
            f"{' + local changes' if env.get('git_dirty') else ''}), -d {runner_device}; transformers on {device}.")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')} +{time.monotonic() - _T0:6.1f}s] {msg}", flush=True)


def elapsed():
    return time.monotonic() - _T0


# ----------------------------------------------------------------------------------------------
# Synthetic tekken.json with the full vocabulary
# ----------------------------------------------------------------------------------------------

def synthetic_vocab(n_inner):
    """n_inner unique token byte strings, rank == position: the 256 single bytes and the merges
    make_reference.py learns from its fixed multilingual text (450 entries, so "lang:xx"
    tokenizes through real merges), then every further two-byte string, then three-byte strings
    of printable ASCII, in a fixed order. Not merges learnt from data, but a valid ranked
    vocabulary for tiktoken and our loader."""
    vocab = mr.train_bpe(mr.TRAINING_TEXT, mr.PATTERN, min(mr.VOCAB_ENTRIES, n_inner))
    seen = set(vocab)

    def more():
        for a in range(256):
            for b in range(256):
                yield bytes([a, b])
        printable = range(0x20, 0x7F)
        for a in printable:
            for b in printable:
                for c in printable:
                    yield bytes([a, b, c])

    gen = more()
    while len(vocab) < n_inner:
        t = next(gen)
        if t not in seen:
            seen.add(t)
            vocab.append(t)
    assert vocab[:256] == [bytes([i]) for i in range(256)]
    return vocab


def write_tekken(path, vocab_size=FULL_VOCAB):
    """make_reference.py's tekken writer (real format, real special names and ids) with
    default_vocab_size = vocab_size and vocab_size - 1000 vocabulary entries."""
    vocab = synthetic_vocab(vocab_size - NUM_SPECIAL)
    tk = mr.make_tekken(vocab)
    tk["config"]["default_vocab_size"] = vocab_size
    tk["config"]["num_vocab_tokens"] = len(vocab)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tk, f, ensure_ascii=False)
        f.write("\n")
    return vocab


class Tekken:
    """Reads a tekken.json: special ids by name, and tiktoken over the used vocabulary (the
    first default_vocab_size - default_num_special_tokens entries) for plain text."""

    def __init__(self, path):
        import tiktoken

        with open(path, encoding="utf-8") as f:
            tk = json.load(f)
        cfg = tk["config"]
        self.num_special = cfg["default_num_special_tokens"]
        self.vocab_size = cfg["default_vocab_size"]
        inner = self.vocab_size - self.num_special
        self.special = {s["token_str"]: s["rank"] for s in tk["special_tokens"]}
        self.token_bytes = [base64.b64decode(v["token_bytes"]) for v in tk["vocab"][:inner]]
        ranks = {b: r for r, b in enumerate(self.token_bytes)}
        self.enc = tiktoken.Encoding(name="tekken", pat_str=cfg["pattern"], mergeable_ranks=ranks,
                                     special_tokens={})

    def sid(self, name):
        return self.special[name]

    def encode(self, text):
        return [t + self.num_special for t in self.enc.encode(text)]

    def piece(self, tok):
        if tok < self.num_special:
            names = {v: k for k, v in self.special.items()}
            return names.get(tok, f"<{tok}>")
        return self.token_bytes[tok - self.num_special].decode("utf-8", errors="replace")

    def prompt(self, n_chunks, language=None):
        """voxtral-spec.md section 5: <s>[INST][BEGIN_AUDIO] [AUDIO]*375n [/INST] (lang:xx) [TRANSCRIBE]."""
        s = self.sid
        ids = [s("<s>"), s("[INST]"), s("[BEGIN_AUDIO]")] + [s("[AUDIO]")] * (TOKENS_PER_CHUNK * n_chunks)
        ids.append(s("[/INST]"))
        if language:
            ids += self.encode(f"lang:{language}")
        ids.append(s("[TRANSCRIBE]"))
        return ids


# ----------------------------------------------------------------------------------------------
# Audio
# ----------------------------------------------------------------------------------------------

def read_wav(path):
    """16 kHz PCM16 WAV -> float32 samples (x / 32768, channels averaged), as our runner reads it."""
    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2 or w.getframerate() != SAMPLE_RATE or w.getcomptype() != "NONE":
            raise ValueError(f"{path}: need a 16 kHz PCM16 WAV (have {w.getframerate()} Hz, "
                             f"{8 * w.getsampwidth()} bit, {w.getcomptype()}); nothing here resamples")
        ch = w.getnchannels()
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    x = x.reshape(-1, ch).astype(np.float32) / 32768.0
    return x.mean(axis=1).astype(np.float32) if ch > 1 else x[:, 0].copy()


def read_wav_int16(path):
    with wave.open(str(path), "rb") as w:
        assert w.getsampwidth() == 2 and w.getframerate() == SAMPLE_RATE and w.getnchannels() == 1, path
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").copy()


def write_wav(path, pcm16):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(np.asarray(pcm16, dtype="<i2").tobytes())


def circular_slice(pcm, off, length):
    """length samples of pcm from offset off, wrapping around its end as often as needed."""
    off %= len(pcm)
    reps = -(-(off + length) // len(pcm))
    return np.concatenate([pcm] * reps)[off:off + length] if reps > 1 else pcm[off:off + length].copy()


def windows(pcm, n, length, step):
    """The n windows of `length` samples at offsets k * step (k = 0..n-1), circular over pcm:
    bench_gpu.py's and bench_batch.py's batch clips (30 s windows 0.5 s apart in long.wav).
    Returns [(offset, samples)]; the offsets are distinct (checked)."""
    offs = [(k * step) % len(pcm) for k in range(n)]
    if len(set(offs)) != n:
        raise ValueError(f"{n} windows {step} samples apart repeat in {len(pcm)} samples")
    return [(off, circular_slice(pcm, off, length)) for off in offs]


_FE = None


def features(x16):
    """transformers' features of 16 kHz samples: make_reference.py's pad_30s + features_of
    (WhisperFeatureExtractor(feature_size=128) over the whole padded signal, chunks of 3000
    frames). float32 [n_chunks, 128, 3000] on the CPU."""
    global _FE
    if _FE is None:
        from transformers import WhisperFeatureExtractor
        _FE = WhisperFeatureExtractor(feature_size=128)
    return mr.features_of(mr.pad_30s(x16), _FE)


# ----------------------------------------------------------------------------------------------
# Random models
# ----------------------------------------------------------------------------------------------

SMALL_AUDIO = dict(num_mel_bins=128, max_source_positions=1500, hidden_size=128, num_hidden_layers=2,
                   num_attention_heads=4, intermediate_size=512)
SMALL_TEXT = dict(model_type="llama", vocab_size=FULL_VOCAB, hidden_size=256, num_hidden_layers=2,
                  num_attention_heads=8, num_key_value_heads=2, head_dim=32, intermediate_size=512,
                  rope_theta=1e8, rms_norm_eps=1e-5, max_position_embeddings=131072,
                  bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)


def make_config(size, decoder_layers=None, encoder_layers=None):
    """VoxtralConfig of the full or the small model; decoder_layers / encoder_layers (when given)
    replace the layer counts and nothing else, so that every kernel keeps its shapes (full width,
    fewer layers: make_random_model.py's models for compute-sanitizer)."""
    from transformers import VoxtralConfig

    if size == "full":
        cfg = VoxtralConfig()  # the defaults are Voxtral Mini 3B
    elif size == "small":
        cfg = VoxtralConfig(audio_config=dict(SMALL_AUDIO), text_config=dict(SMALL_TEXT))
    else:
        raise ValueError(size)
    for sub, n in ((cfg.text_config, decoder_layers), (cfg.audio_config, encoder_layers)):
        if n is not None:
            sub.num_hidden_layers = n
            if isinstance(getattr(sub, "layer_types", None), list):  # per-layer, where there is one
                sub.layer_types = sub.layer_types[:n]
    cfg.audio_token_id = mr.AUDIO  # 24
    return cfg


@torch.no_grad()
def init_healthy_(model, seed=SEED):
    """make_reference.py's initialisation rule (its build_model), drawn on the model's device:
    every Linear weight normal(0, 1/sqrt(fan_in)), the decoder's q/k_proj DECODER_QK_GAIN (3)
    times that; Conv1d normal(0, 1/sqrt(in_channels * k)); biases normal(0, 0.02); LayerNorm
    weight 1 + normal(0, 0.1), bias normal(0, 0.02); RMSNorm weight 1 + normal(0, 0.1); token
    embedding normal(0, 1); embed_positions = whisper sinusoids() in float32 (transformers does
    not initialise it so)."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.models.whisper.modeling_whisper import sinusoids

    dev = next(model.parameters()).device
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear):
            gain = mr.DECODER_QK_GAIN if ("language_model" in name and name.endswith(("q_proj", "k_proj"))) else 1.0
            mod.weight.normal_(0.0, gain / math.sqrt(mod.in_features), generator=gen)
            if mod.bias is not None:
                mod.bias.normal_(0.0, 0.02, generator=gen)
        elif isinstance(mod, torch.nn.Conv1d):
            mod.weight.normal_(0.0, 1.0 / math.sqrt(mod.in_channels * mod.kernel_size[0]), generator=gen)
            mod.bias.normal_(0.0, 0.02, generator=gen)
        elif isinstance(mod, torch.nn.LayerNorm):
            mod.weight.normal_(1.0, 0.1, generator=gen)
            mod.bias.normal_(0.0, 0.02, generator=gen)
        elif isinstance(mod, LlamaRMSNorm):
            mod.weight.normal_(1.0, 0.1, generator=gen)
        elif isinstance(mod, torch.nn.Embedding):
            if name.endswith("embed_positions"):
                mod.weight.copy_(sinusoids(mod.weight.shape[0], mod.weight.shape[1]).to(dev))
            else:
                mod.weight.normal_(0.0, 1.0, generator=gen)


def _is_fp32_kept(name):
    # VoxtralForConditionalGeneration._keep_in_fp32_modules_strict = ["embed_positions"]
    return "embed_positions" in name


@torch.no_grad()
def round_to_bf16_(model):
    """Every weight to its bfloat16 value (kept in float32), except the fp32-kept positions:
    the float32 reference then runs exactly the weights of the bf16 checkpoint."""
    for name, p in model.named_parameters():
        if not _is_fp32_kept(name):
            p.copy_(p.to(torch.bfloat16))


def bf16_copy(m32, attn_implementation="sdpa"):
    """What from_pretrained(dtype=bfloat16) gives for the same checkpoint: parameters in bf16
    except embed_positions (float32), buffers (rotary inv_freq) in float32 (checked against
    from_pretrained at small size by bench_gpu.py)."""
    m16 = copy.deepcopy(m32).to(torch.bfloat16)
    for name, buf in m32.named_buffers():
        mod_name, _, b = name.rpartition(".")
        m16.get_submodule(mod_name)._buffers[b] = buf.detach().clone()
    for name, p in m32.named_parameters():
        if _is_fp32_kept(name):
            mod_name, _, pn = name.rpartition(".")
            m16.get_submodule(mod_name)._parameters[pn] = torch.nn.Parameter(p.detach().clone(), requires_grad=False)
    m16.set_attn_implementation(attn_implementation)
    return m16.eval()


def build_random_model(size, device, seed=SEED, decoder_layers=None, encoder_layers=None):
    """The float32 model with bf16-representable weights, on `device`; eager attention (the
    float32 reference is computed with plain matmuls + softmax). decoder_layers and
    encoder_layers: make_config's."""
    from transformers import VoxtralForConditionalGeneration

    cfg = make_config(size, decoder_layers, encoder_layers)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    with torch.device(device):
        model = VoxtralForConditionalGeneration(cfg)
    model = model.to(torch.float32).eval()
    init_healthy_(model, seed)
    round_to_bf16_(model)
    model.set_attn_implementation("eager")
    return model, cfg


def fp8_reference_models(m32):
    """The FP8 scheme of issue 10 on a copy of the float32 model (make_reference.py's
    fp8_simulate_: decoder linear weights quantize-dequantized, their input rows quantized by
    forward pre-hooks), and its bf16 copy (the hooks come along; they quantize the bf16 inputs
    in float32 and hand back bf16): transformers float32 and bf16 "running the same scheme"."""
    m8 = copy.deepcopy(m32)
    mr.fp8_simulate_(m8)
    return m8.eval(), bf16_copy(m8)


def load_reference(checkpoint, device):
    """float32 (eager attention) and bf16 (sdpa) transformers models from a checkpoint dir."""
    from transformers import VoxtralForConditionalGeneration

    m32 = VoxtralForConditionalGeneration.from_pretrained(checkpoint, dtype=torch.float32,
                                                          attn_implementation="eager").to(device).eval()
    return m32, bf16_copy(m32)


def set_exact_fp32():
    """No TF32 anywhere: the float32 reference must be float32."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def param_bytes(model):
    return sum(p.numel() * p.element_size() for p in model.parameters())


# ----------------------------------------------------------------------------------------------
# Reference computations
# ----------------------------------------------------------------------------------------------

def model_dtype(model):
    return model.model.audio_tower.conv1.weight.dtype


@torch.no_grad()
def reference_forced(model, prompt, forced, feats):
    """Teacher forcing in one forward pass over prompt + forced ids. Returns float32 CPU tensors:
    audio = the projector output [n_audio, hidden] (get_audio_features().pooler_output),
    logits [len(forced), vocab]: row k is the distribution that scores forced[k] (position
    len(prompt) - 1 + k), i.e. what our runner's step k chose from."""
    dev = next(model.parameters()).device
    f = feats.to(device=dev, dtype=model_dtype(model))
    audio = model.get_audio_features(f, return_dict=True).pooler_output.float().cpu()
    ids = torch.tensor([list(prompt) + list(forced)], device=dev)
    n = len(forced)
    out = model(input_ids=ids, input_features=f, logits_to_keep=n + 1)
    logits = out.logits[0, :n].float().cpu()
    return {"audio": audio, "logits": logits}


# ----------------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------------

def rel_l2(x, ref):
    x = torch.as_tensor(x, dtype=torch.float64)
    ref = torch.as_tensor(ref, dtype=torch.float64)
    if x.shape != ref.shape:
        raise ValueError(f"shape {tuple(x.shape)} vs reference {tuple(ref.shape)}")
    return float(torch.linalg.vector_norm(x - ref) / torch.linalg.vector_norm(ref))


def logits_view(logits, ids):
    """log_softmax in float32 over the full vocabulary: chosen log-probs, argmax, top-2 margin."""
    lg = torch.as_tensor(logits).float()
    lp = torch.log_softmax(lg, dim=-1)
    idx = torch.as_tensor(ids, dtype=torch.long)
    top2 = torch.topk(lg, 2, dim=-1)
    return {"logprobs": lp.gather(1, idx[:, None])[:, 0].tolist(), "top1": lg.argmax(-1).tolist(),
            "margin": (top2.values[:, 0] - top2.values[:, 1]).tolist()}


def compare_forced(ids, ref_logits, candidates):
    """ids: the scored tokens (step k scores ids[k]); ref_logits: float32 reference [n, vocab];
    candidates: {name: {"logits": [n, vocab]} or {"logprobs": [n], "top1": [n] or None}}.
    Returns {"steps": [...], "summary": {name: {...}}, "reference": {...}}."""
    n = len(ids)
    ref = logits_view(ref_logits, ids)
    views, summary = {}, {}
    for name, c in candidates.items():
        if c.get("logits") is not None:
            v = logits_view(c["logits"], ids)
            v["rel_l2_logits"] = rel_l2(torch.as_tensor(c["logits"]).float(), torch.as_tensor(ref_logits).float())
        else:
            v = {"logprobs": [float(x) for x in c["logprobs"]], "top1": c.get("top1"), "margin": None,
                 "rel_l2_logits": None}
        if len(v["logprobs"]) != n:
            raise ValueError(f"{name}: {len(v['logprobs'])} steps, expected {n}")
        d = [abs(a - b) for a, b in zip(v["logprobs"], ref["logprobs"])]
        s = {"mean_abs_dlogprob": float(np.mean(d)) if d else float("nan"),
             "max_abs_dlogprob": float(np.max(d)) if d else float("nan"),
             "argmax_abs_dlogprob": int(np.argmax(d)) if d else None,
             "rel_l2_logits": v["rel_l2_logits"]}
        if v["top1"] is not None:
            agree = [int(a == b) for a, b in zip(v["top1"], ref["top1"])]
            s["top1_agree"] = sum(agree)
            s["top1_agreement"] = sum(agree) / n if n else float("nan")
        else:
            s["top1_agree"] = s["top1_agreement"] = None
        s["steps"] = n
        views[name], summary[name] = v, s
    steps = []
    for k in range(n):
        row = {"step": k, "id": int(ids[k]), "ref_logprob": ref["logprobs"][k], "ref_top1": ref["top1"][k],
               "ref_margin": ref["margin"][k]}
        for name, v in views.items():
            row[f"{name}_logprob"] = v["logprobs"][k]
            row[f"{name}_dlogprob"] = v["logprobs"][k] - ref["logprobs"][k]
            row[f"{name}_top1"] = v["top1"][k] if v["top1"] is not None else None
        steps.append(row)
    return {"steps": steps, "summary": summary,
            "reference": {"min_top2_margin": float(min(ref["margin"])) if n else None,
                          "mean_logprob": float(np.mean(ref["logprobs"])) if n else None}}


def fmt(x, spec=".3g"):
    if x is None:
        return "n/a"
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    return format(x, spec)


def steps_table(cmp, names, tk=None):
    """Markdown table of the per-step comparison."""
    head = ["step", "id"] + (["token"] if tk else []) + ["fp32 lp", "fp32 top-2 margin"]
    for nm in names:
        head += [f"{nm} lp", f"{nm} dlp", f"{nm} top1=fp32"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in cmp["steps"]:
        cells = [str(r["step"]), str(r["id"])]
        if tk:
            cells.append("`" + json.dumps(tk.piece(r["id"]), ensure_ascii=False)[1:-1].replace("|", "\\|").replace("`", "'") + "`")
        cells += [f"{r['ref_logprob']:.4f}", f"{r['ref_margin']:.3g}"]
        for nm in names:
            t1 = r[f"{nm}_top1"]
            cells += [f"{r[nm + '_logprob']:.4f}", f"{r[nm + '_dlogprob']:+.2e}",
                      "n/a" if t1 is None else ("yes" if t1 == r["ref_top1"] else f"no ({t1})")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_table(cmp, names):
    lines = ["| vs transformers fp32 | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    s = cmp["summary"]
    rows = [("mean abs dlogprob", "mean_abs_dlogprob", ".3e"), ("max abs dlogprob", "max_abs_dlogprob", ".3e"),
            ("rel L2 of logits", "rel_l2_logits", ".3e")]
    for label, key, spec in rows:
        lines.append(f"| {label} | " + " | ".join(fmt(s[n][key], spec) for n in names) + " |")
    lines.append("| top-1 agreement | " + " | ".join(
        "n/a" if s[n]["top1_agree"] is None else f"{s[n]['top1_agree']}/{s[n]['steps']}" for n in names) + " |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# Our runner
# ----------------------------------------------------------------------------------------------

def _text(b):
    return b.decode("utf-8", errors="replace") if isinstance(b, bytes) else (b or "")


def run_cmd(cmd, log_path, timeout, env=None):
    """Runs cmd, stdout and stderr to log_path(.out/.err); returns (rc, stdout, wall_s)."""
    log_path = Path(log_path)
    t0 = time.monotonic()
    try:
        # bytes: our JSON lines carry token pieces as raw bytes, not always valid UTF-8
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env)
        rc, out, err = p.returncode, _text(p.stdout), _text(p.stderr)
    except subprocess.TimeoutExpired as e:
        rc = 124
        out = _text(e.stdout)
        err = _text(e.stderr) + f"\nTIMEOUT after {timeout} s\n"
    wall = time.monotonic() - t0
    with open(log_path, "w") as f:
        f.write("$ " + " ".join(str(c) for c in cmd) + "\n")
        f.write(f"# rc={rc} wall={wall:.2f}s\n")
        f.write("## stdout\n" + out + "\n## stderr\n" + err)
    return rc, out, wall


def read_dump(path):
    from safetensors.torch import load_file

    d = load_file(str(path))
    return {"audio": d["audio_embeddings"].float(), "logits": d["logits"].float(),
            "prompt_ids": d["prompt_ids"].tolist(), "ids": d["ids"].tolist()}


def json_lines(text):
    out = []
    for line in text.split("\n"):  # not splitlines(): it also breaks at U+0085, U+2028, ...
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out
