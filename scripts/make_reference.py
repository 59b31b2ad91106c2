#!/usr/bin/env python3
"""Reference fixtures for voxtral_runner, computed with Hugging Face transformers.

Writes, under tests/fixtures/tiny/ (see tests/fixtures/README.md for the layout):
  tekken.json                     synthetic tokenizer in the real tekken format
  reference/tokenizer.json        tiktoken encodings of ~40 strings with that tokenizer
  checkpoint_hf/                  a tiny random VoxtralForConditionalGeneration (float32)
  checkpoint_mistral/             the same weights in Mistral's consolidated layout
  reference/features.safetensors  log-mel features (and 16 kHz samples) of the fixture audio
  reference/generation.json       prompt ids, greedy decoding and teacher-forced log-probs

Everything is deterministic (fixed seeds, CPU, float32). Run with the reference venv:
  /work/refenv/bin/python scripts/make_reference.py
Needs: torch, transformers (5.17), tiktoken, soxr, soundfile, numpy, safetensors, regex,
mistral-common (see scripts/requirements-reference.txt). The audio comes from
scripts/make_fixture_audio.sh.
"""

import os

# One thread everywhere: multi-threaded reductions (STFT, GEMM) may change the last bits of the
# features from run to run; the fixtures must not.
for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse
import base64
import json
import math
import shutil
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import regex
import soundfile as sf
import soxr
import tiktoken
import torch
from safetensors.torch import load_file, save_file

import transformers
from transformers import VoxtralConfig, VoxtralForConditionalGeneration, WhisperFeatureExtractor

SEED = 20251130

# ----------------------------------------------------------------------------------------------
# Tokenizer
# ----------------------------------------------------------------------------------------------

# The pre-tokenizer pattern of the released tekken.json (also in mistral-common's tekken_*.json).
PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|"
    r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

NUM_SPECIAL = 1000
VOCAB_ENTRIES = 450  # entries written to tekken.json
INNER_VOCAB = 400  # entries used: default_vocab_size - default_num_special_tokens
VOCAB_SIZE = NUM_SPECIAL + INNER_VOCAB  # 1400

# Special tokens at their ids in the released Voxtral tekken.json. 0..19 are mistral-common's
# Tekkenizer.DEPRECATED_SPECIAL_TOKENS (same list in its tests); 24, 25, 34 are the audio ones
# used by the transcription prompt. Ids 20..23 and 26..33 are named tokens in the release
# whose names/ids could not be confirmed from sources here: they stay <SPECIAL_N>, like
# every other id below 1000.
SPECIAL_NAMES = {
    0: "<unk>", 1: "<s>", 2: "</s>", 3: "[INST]", 4: "[/INST]",
    5: "[AVAILABLE_TOOLS]", 6: "[/AVAILABLE_TOOLS]", 7: "[TOOL_RESULTS]", 8: "[/TOOL_RESULTS]",
    9: "[TOOL_CALLS]", 10: "[IMG]", 11: "<pad>", 12: "[IMG_BREAK]", 13: "[IMG_END]",
    14: "[PREFIX]", 15: "[MIDDLE]", 16: "[SUFFIX]", 17: "[SYSTEM_PROMPT]", 18: "[/SYSTEM_PROMPT]",
    19: "[TOOL_CONTENT]",
    24: "[AUDIO]", 25: "[BEGIN_AUDIO]", 34: "[TRANSCRIBE]",
}
BOS, EOS, INST, END_INST, AUDIO, BEGIN_AUDIO, TRANSCRIBE = 1, 2, 3, 4, 24, 25, 34

# BPE training text: fixed, multilingual. The merges learnt from it are the synthetic vocab.
TRAINING_TEXT = """
The quick brown fox jumps over the lazy dog. Speech recognition turns spoken words into
written text, and the transcription of this recording is the test of the model. The weather
today is sunny with a light breeze from the west; please remember to close the windows.
Transcribe the audio: the speaker reads the numbers one, two, three and 2025, 3.14, 42.
lang:en lang:fr lang:de lang:es lang:it lang:pt lang:nl lang:hi
Le renard brun rapide saute par-dessus le chien paresseux. La reconnaissance de la parole
transforme les mots prononcés en texte écrit. Il fait beau aujourd'hui, n'est-ce pas ?
Der schnelle braune Fuchs springt über den faulen Hund. Die Spracherkennung wandelt
gesprochene Wörter in geschriebenen Text um. Straße, Größe, Mädchen, schön, für.
El rápido zorro marrón salta sobre el perro perezoso. El reconocimiento de voz convierte
las palabras habladas en texto escrito. ¿Dónde está la estación? ¡Mañana será otro día!
La volpe veloce salta sopra il cane pigro. O rápido cão castanho não é preguiçoso.
Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο. Καλημέρα σας, τι κάνετε;
Быстрая коричневая лиса прыгает через ленивую собаку. Распознавание речи превращает
слова в текст. Доброе утро! Спасибо большое.
今日は良い天気ですね。音声認識は話し言葉を文字に変換します。你好，世界！谢谢。
The the the and and of of to to in in is is that that it it for for on on with with as as.
speaking speaker speech spoken recognition recording transcription transcribe listening
"""


def train_bpe(text, pattern, n_entries):
    """Byte-level BPE on the pre-tokenized text: repeatedly merge the most frequent adjacent
    pair (ties: the lexicographically smallest concatenation, then the smallest left part).
    Returns the list of token byte strings, rank order: 256 single bytes, then merges."""
    words = Counter()
    for piece in regex.findall(pattern, text):
        words[tuple(bytes([b]) for b in piece.encode("utf-8"))] += 1
    vocab = [bytes([i]) for i in range(256)]
    known = set(vocab)
    while len(vocab) < n_entries:
        pairs = Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            raise RuntimeError("training text too small for the requested vocab")
        (a, b), _ = min(pairs.items(), key=lambda kv: (-kv[1], kv[0][0] + kv[0][1], kv[0][0]))
        merged = a + b
        if merged not in known:
            vocab.append(merged)
            known.add(merged)
        new_words = Counter()
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(merged)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_words[tuple(out)] += c
        words = new_words
    return vocab


def token_str(b):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None


def make_tekken(vocab_bytes):
    special = []
    for i in range(NUM_SPECIAL):
        special.append({"rank": i, "token_str": SPECIAL_NAMES.get(i, f"<SPECIAL_{i}>"), "is_control": True})
    return {
        "config": {
            "pattern": PATTERN,
            "num_vocab_tokens": len(vocab_bytes),
            "default_vocab_size": VOCAB_SIZE,
            "default_num_special_tokens": NUM_SPECIAL,
            "version": "v7",
        },
        "vocab": [
            {"rank": r, "token_bytes": base64.b64encode(b).decode("ascii"), "token_str": token_str(b)}
            for r, b in enumerate(vocab_bytes)
        ],
        "special_tokens": special,
        "audio": {
            "sampling_rate": 16000,
            "frame_rate": 12.5,
            "audio_encoding_config": {"num_mel_bins": 128, "hop_length": 160, "window_size": 400},
            "chunk_length_s": 30.0,
        },
    }


def tiktoken_encoding(vocab_bytes):
    ranks = {b: r for r, b in enumerate(vocab_bytes[:INNER_VOCAB])}
    return tiktoken.Encoding(name="tiny_tekken", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})


TOKENIZER_STRINGS = [
    "",
    "a",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "Speech recognition turns spoken words into written text.",
    "lang:en",
    "lang:fr",
    "café naïve résumé façade",
    "Straße Größe Mädchen schön",
    "¿Dónde está la estación? ¡Mañana!",
    "Καλημέρα σας, τι κάνετε;",
    "Быстрая коричневая лиса прыгает.",
    "e\u0301 a\u0300 o\u0302 n\u0303 (combining marks)",
    "\u1e9b\u0323 \u0915\u094d\u0937 \u0e01\u0e34",
    "12345 + 67890 = 80235",
    "3.14159, 2.71828; 1e-10 and -42",
    "٠١٢٣ ४५६ ①②③ ½",
    "!@#$%^&*()_+-=[]{}|;':\",./<>?",
    "path/to/file.txt and http://example.com/a/b?c=d",
    "今日は良い天気ですね。",
    "你好，世界！谢谢。",
    "한국어 텍스트입니다",
    "emoji 😀 👍🏽 🎉",
    "family 👨\u200d👩\u200d👧\u200d👦 and flag 🇫🇷 and 🏳\ufe0f\u200d🌈",
    "   leading spaces",
    "trailing spaces   ",
    "multiple     spaces   between",
    "tabs\tand\t\ttabs",
    "new\nlines\n\nand\r\nwindows",
    "  \n  mixed \t whitespace \n\n",
    "\n",
    " ",
    "MiXeD CaSe TeXt ALLCAPS camelCase snake_case",
    "don't won't it's we're I'm you'll they'd",
    "The the the and and of of to to",
    "speaking speaker speech spoken recognition recording transcription",
    "Le renard brun rapide saute par-dessus le chien paresseux.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "El reconocimiento de voz convierte las palabras habladas en texto escrito.",
    "Mixed: English, français, Deutsch, русский, ελληνικά, 日本語, 123 and 🎉!",
    "\u00a0non-breaking\u00a0space and zero\u200bwidth",
    "invalid-looking \ufffd replacement char",
]


# ----------------------------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------------------------

AUDIO_CFG = dict(
    num_mel_bins=128, max_source_positions=1500, hidden_size=64, num_hidden_layers=2,
    num_attention_heads=4, intermediate_size=256,
)
TEXT_CFG = dict(
    model_type="llama", vocab_size=VOCAB_SIZE, hidden_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, head_dim=32, intermediate_size=256,
    rope_theta=1e8, rms_norm_eps=1e-5, max_position_embeddings=32768,
    bos_token_id=BOS, eos_token_id=EOS, pad_token_id=11, tie_word_embeddings=False,
)


# With every weight at std 1/sqrt(fan_in), the decoder's attention logits have std ~1: attention
# is nearly uniform over the ~380 prompt positions, the audio is averaged away (all files gave
# the same ids) and greedy decoding falls into repeating one token after 4 steps. Tripling the
# std of the decoder's q and k weights (attention logits std ~3) makes attention selective:
# the ids then differ per audio and stay diverse for 24 steps.
DECODER_QK_GAIN = 3.0


def sinusoids_spec(length, channels):
    """voxtral-spec.md section 2, in float64: inc = ln(10000)/(C/2-1), f_j = exp(-inc*j),
    row t = [sin(t*f_j)] ++ [cos(t*f_j)]."""
    half = channels // 2
    inc = math.log(10000.0) / (half - 1)
    f = np.exp(-inc * np.arange(half, dtype=np.float64))
    st = np.arange(length, dtype=np.float64)[:, None] * f[None, :]
    return np.concatenate([np.sin(st), np.cos(st)], axis=1)


def build_model():
    config = VoxtralConfig(
        audio_config=dict(AUDIO_CFG), text_config=dict(TEXT_CFG), audio_token_id=AUDIO,
        projector_hidden_act="gelu",
    )
    torch.manual_seed(SEED)
    model = VoxtralForConditionalGeneration(config).to(torch.float32).eval()

    pos = model.model.audio_tower.embed_positions.weight
    spec = sinusoids_spec(pos.shape[0], pos.shape[1])
    init_diff = float(np.abs(pos.detach().double().numpy() - spec).max())

    gen = torch.Generator().manual_seed(SEED)

    def normal_(t, std, mean=0.0):
        t.copy_(torch.randn(t.shape, generator=gen, dtype=torch.float32) * std + mean)

    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    with torch.no_grad():
        for name, mod in model.named_modules():
            if isinstance(mod, torch.nn.Linear):
                gain = DECODER_QK_GAIN if ("language_model" in name and name.endswith(("q_proj", "k_proj"))) else 1.0
                normal_(mod.weight, gain / math.sqrt(mod.in_features))
                if mod.bias is not None:
                    normal_(mod.bias, 0.02)
            elif isinstance(mod, torch.nn.Conv1d):
                normal_(mod.weight, 1.0 / math.sqrt(mod.in_channels * mod.kernel_size[0]))
                normal_(mod.bias, 0.02)
            elif isinstance(mod, torch.nn.LayerNorm):
                normal_(mod.weight, 0.1, 1.0)
                normal_(mod.bias, 0.02)
            elif isinstance(mod, LlamaRMSNorm):
                normal_(mod.weight, 0.1, 1.0)
            elif isinstance(mod, torch.nn.Embedding):
                if name.endswith("embed_positions"):
                    # What the official conversion script stores (transformers'
                    # whisper.modeling_whisper.sinusoids, float32).
                    from transformers.models.whisper.modeling_whisper import sinusoids
                    mod.weight.copy_(sinusoids(mod.weight.shape[0], mod.weight.shape[1]))
                else:
                    normal_(mod.weight, 1.0)
    # lm_head is a Linear(hidden -> vocab): std 1/sqrt(hidden) by the fan-in rule above.
    final_diff = float(np.abs(pos.detach().double().numpy() - spec).max())
    return model, config, init_diff, final_diff


# HF (transformers checkpoint) name -> Mistral consolidated name. Source: transformers'
# models/voxtral/convert_voxtral_weights_to_hf.py (STATE_DICT_MAPPING, inverted) and vLLM's
# models/voxtral.py (load_weights / VoxtralEncoderModel.mistral_remapping).
def hf_to_mistral_name(name):
    import re
    rules = [
        (r"^language_model\.lm_head\.weight$", "output.weight"),
        (r"^language_model\.model\.norm\.weight$", "norm.weight"),
        (r"^language_model\.model\.embed_tokens\.weight$", "mm_whisper_embeddings.tok_embeddings.weight"),
        (r"^language_model\.model\.layers\.(\d+)\.input_layernorm\.weight$", r"layers.\1.attention_norm.weight"),
        (r"^language_model\.model\.layers\.(\d+)\.post_attention_layernorm\.weight$", r"layers.\1.ffn_norm.weight"),
        (r"^language_model\.model\.layers\.(\d+)\.self_attn\.([qkvo])_proj\.weight$", r"layers.\1.attention.w\2.weight"),
        (r"^language_model\.model\.layers\.(\d+)\.mlp\.gate_proj\.weight$", r"layers.\1.feed_forward.w1.weight"),
        (r"^language_model\.model\.layers\.(\d+)\.mlp\.down_proj\.weight$", r"layers.\1.feed_forward.w2.weight"),
        (r"^language_model\.model\.layers\.(\d+)\.mlp\.up_proj\.weight$", r"layers.\1.feed_forward.w3.weight"),
        (r"^audio_tower\.conv1\.(weight|bias)$", r"mm_whisper_embeddings.whisper_encoder.conv_layers.0.\1"),
        (r"^audio_tower\.conv2\.(weight|bias)$", r"mm_whisper_embeddings.whisper_encoder.conv_layers.1.\1"),
        (r"^audio_tower\.layer_norm\.(weight|bias)$", r"mm_whisper_embeddings.whisper_encoder.transformer.norm.\1"),
        (r"^audio_tower\.layers\.(\d+)\.self_attn\.([qkv])_proj\.(weight|bias)$",
         r"mm_whisper_embeddings.whisper_encoder.transformer.layers.\1.attention.w\2.\3"),
        (r"^audio_tower\.layers\.(\d+)\.self_attn\.out_proj\.(weight|bias)$",
         r"mm_whisper_embeddings.whisper_encoder.transformer.layers.\1.attention.wo.\2"),
        (r"^audio_tower\.layers\.(\d+)\.self_attn_layer_norm\.(weight|bias)$",
         r"mm_whisper_embeddings.whisper_encoder.transformer.layers.\1.attention_norm.\2"),
        (r"^audio_tower\.layers\.(\d+)\.fc1\.(weight|bias)$",
         r"mm_whisper_embeddings.whisper_encoder.transformer.layers.\1.feed_forward.w1.\2"),
        (r"^audio_tower\.layers\.(\d+)\.fc2\.(weight|bias)$",
         r"mm_whisper_embeddings.whisper_encoder.transformer.layers.\1.feed_forward.w2.\2"),
        (r"^audio_tower\.layers\.(\d+)\.final_layer_norm\.(weight|bias)$",
         r"mm_whisper_embeddings.whisper_encoder.transformer.layers.\1.ffn_norm.\2"),
        (r"^multi_modal_projector\.linear_1\.weight$", "mm_whisper_embeddings.audio_language_projection.0.weight"),
        (r"^multi_modal_projector\.linear_2\.weight$", "mm_whisper_embeddings.audio_language_projection.2.weight"),
    ]
    for pat, rep in rules:
        new, n = re.subn(pat, rep, name)
        if n:
            return new
    return None


def legacy_hf_state_dict(model):
    """The model's weights under the transformers checkpoint names of voxtral-spec.md section 7
    (audio_tower.*, multi_modal_projector.*, language_model.model.*, language_model.lm_head)."""
    out = {}
    for k, v in model.state_dict().items():
        if k.startswith("model.language_model."):
            k = "language_model.model." + k[len("model.language_model."):]
        elif k == "lm_head.weight":
            k = "language_model.lm_head.weight"
        elif k.startswith("model."):
            k = k[len("model."):]
        out[k] = v.detach().clone().contiguous()
    return out


def hf_to_interleaved(w, n_heads, head_dim):
    """Inverse of the conversion script's permute_for_rope: HF rotate-half rows -> Mistral
    interleaved rows. Mistral row 2i+p = HF row p*head_dim/2 + i, within each head."""
    dim2 = w.shape[1]
    return w.view(n_heads, 2, head_dim // 2, dim2).transpose(1, 2).reshape(n_heads * head_dim, dim2)


def permute_for_rope(tensor, n_heads, dim1, dim2):
    """transformers' convert_voxtral_weights_to_hf.py, verbatim math (Mistral -> HF)."""
    tensor = tensor.view(n_heads, dim1 // n_heads // 2, 2, dim2)
    tensor = tensor.transpose(1, 2)
    return tensor.reshape(dim1, dim2)


def mistral_state_dict(hf_sd, tc):
    out = {}
    for k, v in hf_sd.items():
        if k == "audio_tower.embed_positions.weight":
            continue  # not stored in the Mistral checkpoint; loaders generate it
        m = hf_to_mistral_name(k)
        if m is None:
            raise KeyError(f"no Mistral name for {k}")
        if k.startswith("language_model.") and ".self_attn.q_proj." in k:
            v = hf_to_interleaved(v, tc.num_attention_heads, tc.head_dim)
        elif k.startswith("language_model.") and ".self_attn.k_proj." in k:
            v = hf_to_interleaved(v, tc.num_key_value_heads, tc.head_dim)
        out[m] = v.contiguous()
    return out


@torch.no_grad()
def interleaved_decoder_logits(msd, params, ids):
    """Independent float64 forward of the text decoder from the Mistral tensors, with RoPE on
    interleaved pairs (2i, 2i+1) as Mistral's reference code applies it. Used to check that the
    q/k permutation goes the right way (it must reproduce transformers' logits)."""
    d = lambda k: msd[k].double()
    hd, nh, nkv = params["head_dim"], params["n_heads"], params["n_kv_heads"]
    x = d("mm_whisper_embeddings.tok_embeddings.weight")[torch.tensor(ids)]
    T = len(ids)
    inv = params["rope_theta"] ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    cos, sin = ang.cos(), ang.sin()

    def rope(t):  # t: [T, heads, hd], pairs (2i, 2i+1)
        a, b = t[..., 0::2], t[..., 1::2]
        out = torch.empty_like(t)
        out[..., 0::2] = a * cos[:, None, :] - b * sin[:, None, :]
        out[..., 1::2] = a * sin[:, None, :] + b * cos[:, None, :]
        return out

    def rms(v, w):
        return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + params["norm_eps"]) * w

    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for i in range(params["n_layers"]):
        p = f"layers.{i}."
        h = rms(x, d(p + "attention_norm.weight"))
        q = rope((h @ d(p + "attention.wq.weight").T).view(T, nh, hd))
        k = rope((h @ d(p + "attention.wk.weight").T).view(T, nkv, hd))
        v = (h @ d(p + "attention.wv.weight").T).view(T, nkv, hd)
        k = k.repeat_interleave(nh // nkv, dim=1)
        v = v.repeat_interleave(nh // nkv, dim=1)
        att = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd) + mask
        o = torch.einsum("hts,shd->thd", att.softmax(-1), v).reshape(T, nh * hd)
        x = x + o @ d(p + "attention.wo.weight").T
        h = rms(x, d(p + "ffn_norm.weight"))
        g = torch.nn.functional.silu(h @ d(p + "feed_forward.w1.weight").T) * (h @ d(p + "feed_forward.w3.weight").T)
        x = x + g @ d(p + "feed_forward.w2.weight").T
    return rms(x, d("norm.weight")) @ d("output.weight").T


def mistral_params(config):
    ac, tc = config.audio_config, config.text_config
    return {
        "dim": tc.hidden_size,
        "n_layers": tc.num_hidden_layers,
        "head_dim": tc.head_dim,
        "hidden_dim": tc.intermediate_size,
        "n_heads": tc.num_attention_heads,
        "n_kv_heads": tc.num_key_value_heads,
        "rope_theta": 1e8,
        "norm_eps": tc.rms_norm_eps,
        "vocab_size": tc.vocab_size,
        "max_seq_len": tc.max_position_embeddings,
        "multimodal": {
            "whisper_model_args": {
                "encoder_args": {
                    "audio_encoding_args": {
                        "sampling_rate": 16000,
                        "num_mel_bins": ac.num_mel_bins,
                        "hop_length": 160,
                        "window_size": 400,
                    },
                    "dim": ac.hidden_size,
                    "n_layers": ac.num_hidden_layers,
                    "head_dim": ac.hidden_size // ac.num_attention_heads,
                    "hidden_dim": ac.intermediate_size,
                    "n_heads": ac.num_attention_heads,
                    "vocab_size": ac.vocab_size,
                    "max_source_positions": ac.max_source_positions,
                },
                "downsample_args": {"downsample_factor": 4},
            }
        },
    }


# ----------------------------------------------------------------------------------------------
# Audio front end
# ----------------------------------------------------------------------------------------------

AUDIO_CASES = ["short.wav", "long.wav", "stereo44k.wav", "speech.flac"]
CHUNK = 480000


def load_16k(path):
    """mistral-common's Audio.from_bytes(strict=False) + Audio.resample(16000): soundfile read
    as float32, mean over channels, soxr HQ when the rate differs."""
    x, sr = sf.read(str(path), dtype="float32", always_2d=False)
    if x.ndim != 1:
        x = x.mean(axis=1)
    if sr != 16000:
        x = soxr.resample(x, sr, 16000, quality="HQ")
    return np.ascontiguousarray(x), sr


def pcm16_roundtrip(x):
    """What soundfile/libsndfile does to float samples written as a PCM16 WAV and read back:
    v = lrintf(x * (float)0x7FFFFFFF) (the float32 constant is 2^31), then v >> 16 (arithmetic
    shift: a floor, not a rounding) and / 32768 on reading. PCM16 input survives it unchanged;
    other samples lose up to one LSB, biased downwards. transformers'
    VoxtralProcessor.apply_transcription_request and vLLM's transcription endpoint both pass the
    16 kHz float audio through such a WAV before mistral-common reads it."""
    v = np.clip(np.rint(x.astype(np.float64) * 2147483648.0), -2147483648.0, 2147483647.0).astype(np.int64)
    return ((v >> 16) / 32768.0).astype(np.float32)


def pad_30s(x):
    """mistral-common AudioEncoder.pad with chunk_length_s=30: zeros up to the next multiple of
    480000 samples."""
    n = math.ceil(len(x) / CHUNK) * CHUNK
    return np.pad(x, (0, n - len(x)))


def features_of(x16, fe):
    """VoxtralProcessor._retrieve_input_features with the processor's default audio kwargs."""
    inputs = fe(x16, sampling_rate=16000, padding=True, truncation=False, pad_to_multiple_of=CHUNK,
                return_tensors="pt")
    f = inputs["input_features"]  # [1, 128, T] over the whole signal
    return f.reshape(fe.feature_size, -1, 3000).transpose(0, 1).contiguous()  # [n_chunks, 128, 3000]


# ----------------------------------------------------------------------------------------------
# Generation
# ----------------------------------------------------------------------------------------------

def forced_ids_for_check():
    """The 16 teacher-forced ids: random text ids (1000..1399), fixed seed."""
    rng = np.random.default_rng(SEED)
    return [int(t) for t in rng.integers(NUM_SPECIAL, VOCAB_SIZE, size=16)]


def prompt_ids(n_chunks, language, enc):
    ids = [BOS, INST, BEGIN_AUDIO] + [AUDIO] * (375 * n_chunks) + [END_INST]
    if language is not None:
        ids += [t + NUM_SPECIAL for t in enc.encode(f"lang:{language}")]
    return ids + [TRANSCRIBE]


def r7(x):
    return float(round(float(x), 7))


def top_k(lp, k=20):
    v, i = torch.topk(lp, k)
    return [[int(a), r7(b)] for a, b in zip(i.tolist(), v.tolist())]


@torch.no_grad()
def greedy(model, ids, feats, max_new=24):
    out = model(input_ids=torch.tensor([ids]), input_features=feats, use_cache=True)
    past, logits = out.past_key_values, out.logits[0, -1].float()
    res = {"ids": [], "margins": [], "logprobs": [], "top": []}
    for _ in range(max_new):
        lp = torch.log_softmax(logits, dim=-1)
        two = torch.topk(logits, 2).values
        tok = int(torch.argmax(logits))
        res["ids"].append(tok)
        res["margins"].append(r7(two[0] - two[1]))
        res["logprobs"].append(r7(lp[tok]))
        res["top"].append(top_k(lp))
        if tok == EOS:
            break
        out = model(input_ids=torch.tensor([[tok]]), past_key_values=past, use_cache=True)
        past, logits = out.past_key_values, out.logits[0, -1].float()
    return res


@torch.no_grad()
def forced(model, ids, feats, forced_ids):
    out = model(input_ids=torch.tensor([ids + forced_ids]), input_features=feats)
    lp = torch.log_softmax(out.logits[0].float(), dim=-1)
    res = {"ids": list(forced_ids), "logprobs": [], "top": []}
    for k, t in enumerate(forced_ids):
        row = lp[len(ids) - 1 + k]
        res["logprobs"].append(r7(row[t]))
        res["top"].append(top_k(row))
    return res


# ----------------------------------------------------------------------------------------------
# FP8 (E4M3) text decoder: the scheme of issue 10, simulated in float32
# ----------------------------------------------------------------------------------------------

E4M3_MAX = 448.0
# The decoder's linear layers that the scheme quantizes (lm_head, embeddings, norms, the audio
# encoder and the projector stay as they are).
FP8_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def fp8_quantize_rows(x):
    """The scheme, per row of x (last dim): s = max|x_row| / 448 in float32 (1 for an all-zero
    row), q = round-to-nearest-even(clamp(x / s, -448, 448)) as float8_e4m3fn. Returns (q, s)
    with s shaped like x's rows (keepdim)."""
    x = x.float()
    amax = x.abs().amax(dim=-1, keepdim=True)
    s = torch.where(amax == 0, torch.ones_like(amax), amax / E4M3_MAX)
    return (x / s).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn), s


def fp8_dequantize_rows(x):
    """x quantized by the scheme and turned back into float32 (q * s)."""
    q, s = fp8_quantize_rows(x)
    return q.float() * s


def fp8_linears(model):
    """(name, module) of the decoder's linear layers the scheme quantizes, in module order."""
    return [(n, m) for n, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) and "language_model" in n and n.endswith(FP8_LINEARS)]


@torch.no_grad()
def fp8_simulate_(model):
    """Makes `model` (float32) run the scheme: each decoder linear's weight becomes its
    quantize-dequantize (codes and scales returned by module name), and a forward pre-hook
    quantize-dequantizes every input row of those layers. The products are then the float32
    sums of dequantized values, which equal (sum of code products) * s_x * s_w up to float32
    rounding."""
    codes = {}
    for name, mod in fp8_linears(model):
        q, s = fp8_quantize_rows(mod.weight)
        codes[name] = (q, s[:, 0].contiguous())
        mod.weight.copy_(q.float() * s)
        mod.register_forward_pre_hook(lambda m, args: (fp8_dequantize_rows(args[0]).to(args[0].dtype),) + args[1:])
    return codes


def fp8_blob_tensors(codes, n_layers):
    """Our text_decoder blob's FP8 tensors from the per-module codes: q|k|v and gate|up fused by
    rows (per-row scales make fusing and quantizing commute), each with its F32 row scales."""
    out = {}
    fused = {"attn.qkv": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
             "attn.o": ("self_attn.o_proj",), "mlp.gate_up": ("mlp.gate_proj", "mlp.up_proj"),
             "mlp.down": ("mlp.down_proj",)}
    for layer in range(n_layers):
        for ours, parts in fused.items():
            names = [next(n for n in codes if n.endswith(f"layers.{layer}.{p}")) for p in parts]
            out[f"layers.{layer}.{ours}.weight"] = torch.cat([codes[n][0] for n in names]).contiguous()
            out[f"layers.{layer}.{ours}.weight_scale"] = torch.cat([codes[n][1] for n in names]).contiguous()
    return out


def e4m3_cases():
    """Values whose E4M3 encoding the C encoder must reproduce: every finite code's value and
    the midpoints between neighbouring codes (ties, to even), a little either side of each
    midpoint, zeros, subnormals and the range up to 464 (past 464 torch gives NaN, which the
    scheme's clamp never produces)."""
    vals = torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).float()
    finite = torch.sort(torch.unique(vals[torch.isfinite(vals)].abs())).values.double()
    mids = (finite[1:] + finite[:-1]) / 2
    both = torch.cat([finite, mids, mids * (1 + 2.0 ** -20), mids * (1 - 2.0 ** -20),
                      torch.tensor([464.0, 460.0, 449.0, 2.0 ** -10, 3 * 2.0 ** -11, 1e-30])])
    x = torch.cat([both, -both]).float()
    return x, x.to(torch.float8_e4m3fn).view(torch.uint8)


def fp8_layer_check(model, codes):
    """Rows x [6, hidden] and what the simulated layer 0 q|k|v projection gives for them: a
    normal row, a row 100x larger, an all-zero row, a row whose x / s land exactly on E4M3
    midpoints (s = 1: its largest element is 448), a row of mostly subnormal codes (one large
    element), and a row with a single non-zero element."""
    hidden = model.config.text_config.hidden_size
    gen = torch.Generator().manual_seed(SEED + 10)
    x = torch.randn(6, hidden, generator=gen)
    x[1] *= 100.0
    x[2] = 0.0
    mids = torch.tensor([1.0625, 1.1875, 3.25, 0.0029296875, 0.0009765625, 13.0, 104.0, 464.0 - 16.0])
    x[3] = mids.repeat(hidden // len(mids) + 1)[:hidden] * torch.where(torch.arange(hidden) % 3 == 0, -1.0, 1.0)
    x[3, 5] = 448.0
    x[4] = torch.randn(hidden, generator=gen) * 1e-3
    x[4, 7] = 40.0
    x[5] = 0.0
    x[5, 11] = -3.0
    mods = [m for n, m in fp8_linears(model) if ".layers.0.self_attn." in n and n.endswith(("q_proj", "k_proj", "v_proj"))]
    with torch.no_grad():
        y = torch.cat([m(x) for m in mods], dim=1)  # the pre-hooks quantize x
    return x, y


def fp8_reference(model, config, ids_of_case, feats, forced_ids, enc, out_dir, notes):
    """The FP8 fixture: reference/fp8.safetensors (our decoder blob's FP8 tensors as PyTorch
    quantizes them, the layer check, the E4M3 encoding cases) and reference/generation_fp8.json
    (generation.json's cases on the simulated model). Also measures how far float32 rounding
    alone moves the simulated model (the activation quantizer turns rounding-level differences
    into whole E4M3 steps): the forced cases with one-ulp noise on the features, recorded as
    config.fp8.order_sensitivity."""
    import copy
    m8 = copy.deepcopy(model)
    codes = fp8_simulate_(m8)
    tensors = fp8_blob_tensors(codes, config.text_config.num_hidden_layers)
    cx, cy = fp8_layer_check(m8, codes)
    ev, ec = e4m3_cases()
    tensors.update({"check.x": cx, "check.qkv_y": cy.contiguous(), "e4m3.values": ev, "e4m3.codes": ec})
    save_file(tensors, str(out_dir / "fp8.safetensors"), metadata={"producer": "scripts/make_reference.py"})

    # Sensitivity: the forced cases again with the features moved by about one float32 ulp
    # (relative noise 1.2e-7, seeded), which reaches every layer as an independent float32
    # implementation's rounding differences do.
    cases, diffs = [], []
    gen = torch.Generator().manual_seed(SEED + 11)
    for name, lang, ids in ids_of_case:
        f = feats[name]
        c = {"audio": name, "language": lang, "prompt_ids": ids, "n_chunks": f.shape[0],
             "greedy": greedy(m8, ids, f), "forced": forced(m8, ids, f, forced_ids)}
        noisy = f * (1 + 1.2e-7 * torch.randn(f.shape, generator=gen))
        alt = forced(m8, ids, noisy, forced_ids)
        diffs += [abs(a - b) for a, b in zip(c["forced"]["logprobs"], alt["logprobs"])]
        cases.append(c)
    d = np.array(diffs)
    sens = {"perturbation": "features * (1 + 1.2e-7 N(0,1))", "steps": int(d.size),
            "over_1e-4": int((d > 1e-4).sum()), "mean": r7(d.mean()), "max": r7(d.max())}
    notes.append(f"fp8: forced log-probs moved by one-ulp noise on the features: {sens}")
    return cases, sens


# ----------------------------------------------------------------------------------------------

def main():
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(root / "tests/fixtures/tiny"))
    ap.add_argument("--pcm16-roundtrip", action="store_true",
                    help="quantize the 16 kHz samples as a PCM16 WAV round trip before the mel "
                         "(what the transformers processor and vLLM do); off for the committed fixtures")
    args = ap.parse_args()
    out = Path(args.out)
    audio_dir = out / "audio"
    ref = out / "reference"
    ref.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    notes = []

    # a) tokenizer -----------------------------------------------------------------------------
    vocab_bytes = train_bpe(TRAINING_TEXT, PATTERN, VOCAB_ENTRIES)
    assert len(set(vocab_bytes)) == len(vocab_bytes) == VOCAB_ENTRIES
    tekken = make_tekken(vocab_bytes)
    tekken_path = out / "tekken.json"
    with open(tekken_path, "w", encoding="utf-8") as f:
        json.dump(tekken, f, ensure_ascii=False, indent=1)
        f.write("\n")
    enc = tiktoken_encoding(vocab_bytes)

    # b) tokenizer reference -------------------------------------------------------------------
    tok_cases = []
    used_ranks = set()
    for s in TOKENIZER_STRINGS:
        ids = [t + NUM_SPECIAL for t in enc.encode(s)]
        used_ranks.update(t - NUM_SPECIAL for t in ids)
        assert enc.decode([t - NUM_SPECIAL for t in ids]) == s
        tok_cases.append({"text": s, "ids": ids})
    with open(ref / "tokenizer.json", "w", encoding="utf-8") as f:
        json.dump(tok_cases, f, ensure_ascii=False, indent=1)
        f.write("\n")
    # Cross-check with mistral-common's Tekkenizer reading our tekken.json.
    try:
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer
        tk = Tekkenizer.from_file(str(tekken_path))
        bad = [c["text"] for c in tok_cases if tk.encode(c["text"], bos=False, eos=False) != c["ids"]]
        assert tk.n_words == VOCAB_SIZE and tk.get_control_token("[TRANSCRIBE]") == TRANSCRIBE
        notes.append(f"mistral-common Tekkenizer.from_file agrees on {len(tok_cases) - len(bad)}/{len(tok_cases)} strings")
        if bad:
            raise AssertionError(f"mistral-common disagrees on {bad}")
    except ImportError:
        notes.append("mistral-common not installed: tekken.json not cross-checked")
    # Which ranks the strings exercise; would any string use a truncated entry (rank >= 400)?
    full = tiktoken.Encoding(name="full", pat_str=PATTERN,
                             mergeable_ranks={b: r for r, b in enumerate(vocab_bytes)}, special_tokens={})
    truncation_hits = sum(1 for s in TOKENIZER_STRINGS if any(t >= INNER_VOCAB for t in full.encode(s)))

    # c) model ---------------------------------------------------------------------------------
    model, config, pos_init_diff, pos_final_diff = build_model()
    tc = config.text_config
    hf_dir = out / "checkpoint_hf"
    if hf_dir.exists():
        shutil.rmtree(hf_dir)
    model.save_pretrained(hf_dir, safe_serialization=True)
    shutil.copy(tekken_path, hf_dir / "tekken.json")
    # transformers 5.17's save_pretrained reverses its load-time renaming twice for the decoder
    # and writes "language_model.model.model.*" (lm_head stays "language_model.lm_head.weight").
    # Released checkpoints (mistralai/Voxtral-Mini-3B-2507) use "language_model.model.*"; the
    # fixture stores those names, and 5.17 loads either spelling to the same weights (checked).
    legacy = legacy_hf_state_dict(model)
    saved_names = set()
    for p in sorted(hf_dir.glob("*.safetensors")):
        saved_names.update(load_file(str(p)).keys())
        p.unlink()
    quirk = {k.replace("language_model.model.", "language_model.model.model.", 1) for k in legacy}
    if saved_names != set(legacy):
        assert saved_names == quirk, sorted(saved_names ^ quirk)[:10]
        notes.append("save_pretrained wrote 'language_model.model.model.*' decoder names; rewrote "
                     "model.safetensors with the release names 'language_model.model.*'")
    save_file(legacy, str(hf_dir / "model.safetensors"), metadata={"format": "pt"})
    reloaded = VoxtralForConditionalGeneration.from_pretrained(hf_dir, dtype=torch.float32).eval()
    rsd, msd0 = reloaded.state_dict(), model.state_dict()
    assert set(rsd) == set(msd0) and all(torch.equal(rsd[k], msd0[k]) for k in rsd)
    del reloaded, rsd, msd0

    # d) Mistral layout ------------------------------------------------------------------------
    mi_dir = out / "checkpoint_mistral"
    if mi_dir.exists():
        shutil.rmtree(mi_dir)
    mi_dir.mkdir(parents=True)
    msd = mistral_state_dict(legacy, tc)
    save_file(msd, str(mi_dir / "consolidated.safetensors"), metadata={"format": "pt"})
    with open(mi_dir / "params.json", "w") as f:
        json.dump(mistral_params(config), f, indent=4)
        f.write("\n")
    shutil.copy(tekken_path, mi_dir / "tekken.json")
    # Round trip through the conversion script's own math (Mistral -> HF).
    for k, v in legacy.items():
        if k == "audio_tower.embed_positions.weight":
            continue
        w = msd[hf_to_mistral_name(k)]
        if k.startswith("language_model.") and ".q_proj." in k:
            w = permute_for_rope(w, tc.num_attention_heads, tc.num_attention_heads * tc.head_dim, tc.hidden_size)
        elif k.startswith("language_model.") and ".k_proj." in k:
            w = permute_for_rope(w, tc.num_key_value_heads, tc.num_key_value_heads * tc.head_dim, tc.hidden_size)
        assert torch.equal(w, v), k

    # The Mistral tensors, run with interleaved RoPE, give transformers' logits (text only).
    check_ids = [BOS, INST] + forced_ids_for_check() + [END_INST, TRANSCRIBE]
    with torch.no_grad():
        ref_logits = model(input_ids=torch.tensor([check_ids])).logits[0].double()
    mi_logits = interleaved_decoder_logits(msd, mistral_params(config), check_ids)
    rope_check = float((ref_logits - mi_logits).abs().max())
    assert rope_check < 1e-3, rope_check
    notes.append(f"Mistral layout + interleaved RoPE (float64) vs transformers logits: max|diff| {rope_check:.2g}")

    # e) features ------------------------------------------------------------------------------
    fe = WhisperFeatureExtractor(feature_size=128)
    feat_tensors, feats, samples16 = {}, {}, {}
    for name in AUDIO_CASES:
        stem = Path(name).stem
        x16, sr = load_16k(audio_dir / name)
        if args.pcm16_roundtrip:
            x16 = pcm16_roundtrip(x16)
        samples16[name] = x16
        f = features_of(pad_30s(x16), fe)
        feats[name] = f
        feat_tensors[stem] = f
        if name != "long.wav":
            feat_tensors[stem + ".samples"] = torch.from_numpy(x16.astype(np.float32))
    save_file(feat_tensors, str(ref / "features.safetensors"),
              # one key: safetensors writes metadata keys in no fixed order
              metadata={"producer": f"scripts/make_reference.py, transformers {transformers.__version__}"})

    # f) generation ----------------------------------------------------------------------------
    forced_ids = forced_ids_for_check()
    cases = []
    for name in AUDIO_CASES:
        f = feats[name]
        n_chunks = f.shape[0]
        with torch.no_grad():
            proj = model.get_audio_features(f, return_dict=True).pooler_output
        rows = [0, 374] + ([375, 375 * n_chunks - 1] if n_chunks > 1 else [])
        for lang in (None, "en"):
            ids = prompt_ids(n_chunks, lang, enc)
            g = greedy(model, ids, f)
            with torch.no_grad():
                gen_ids = model.generate(
                    input_ids=torch.tensor([ids]), input_features=f, do_sample=False, max_new_tokens=24,
                    eos_token_id=EOS, pad_token_id=11, attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                )[0, len(ids):].tolist()
            assert gen_ids == g["ids"], (name, lang, gen_ids, g["ids"])
            cases.append({
                "audio": name,
                "language": lang,
                "prompt_ids": ids,
                "n_chunks": n_chunks,
                "projector_rows": {str(r): [r7(v) for v in proj[r, :8].tolist()] for r in rows},
                "greedy": g,
                "forced": forced(model, ids, f, forced_ids),
            })

    # Prompt ids against the processor (transformers + mistral-common), where it can run here.
    try:
        from transformers import VoxtralProcessor
        from transformers.tokenization_mistral_common import MistralCommonBackend
        proc = VoxtralProcessor(feature_extractor=fe, tokenizer=MistralCommonBackend(tokenizer_path=str(tekken_path)))
        for c in cases:
            x = samples16[c["audio"]]
            got = proc.apply_transcription_request(audio=x, model_id="tiny", language=c["language"],
                                                   sampling_rate=16000, format="wav")
            pids = got["input_ids"][0].tolist()
            assert pids == c["prompt_ids"], (c["audio"], c["language"])
            d = float((got["input_features"] - feats[c["audio"]]).abs().max())
            if not args.pcm16_roundtrip:
                d2 = float((got["input_features"] - features_of(pad_30s(pcm16_roundtrip(x)), fe)).abs().max())
                assert d2 == 0.0, (c["audio"], d2)  # pcm16_roundtrip() models the processor exactly
            if c["language"] is None:
                notes.append(f"apply_transcription_request({c['audio']}): prompt ids equal; features max|diff| "
                             f"{d:.3g} (its PCM16 round trip of the 16 kHz samples; 0 after pcm16_roundtrip())")
    except Exception as e:  # noqa: BLE001 - report, the hand-built ids stand
        notes.append(f"apply_transcription_request could not run: {type(e).__name__}: {e}")

    doc = {
        "config": {
            "producer": "scripts/make_reference.py",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "tiktoken": tiktoken.__version__, "soxr": soxr.__version__, "numpy": np.__version__},
            "seed": SEED,
            "dtype": "float32",
            "device": "cpu",
            "vocab_size": VOCAB_SIZE,
            "num_special_tokens": NUM_SPECIAL,
            "special_ids": {"bos": BOS, "eos": EOS, "inst": INST, "end_inst": END_INST, "audio": AUDIO,
                            "begin_audio": BEGIN_AUDIO, "transcribe": TRANSCRIBE},
            "audio_tokens_per_chunk": 375,
            "max_new_tokens": 24,
            "stop_id": EOS,
            "top_k": 20,
            "forced_ids": forced_ids,
            "audio_config": {k: getattr(config.audio_config, k) for k in
                             ("num_mel_bins", "max_source_positions", "hidden_size", "num_hidden_layers",
                              "num_attention_heads", "intermediate_size")},
            "text_config": {k: getattr(tc, k) for k in
                            ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                             "num_key_value_heads", "head_dim", "intermediate_size", "rms_norm_eps",
                             "max_position_embeddings")},
            "rope_theta": 1e8,
        },
        "cases": cases,
    }
    with open(ref / "generation.json", "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")

    # f2) FP8 decoder (issue 10): the same cases on the model running the scheme --------------
    ids_of_case = [(c["audio"], c["language"], c["prompt_ids"]) for c in cases]
    fp8_cases, sens = fp8_reference(model, config, ids_of_case, feats, forced_ids, enc, ref, notes)
    doc_fp8 = dict(doc, cases=fp8_cases)
    doc_fp8["config"] = dict(doc["config"], fp8={
        "scheme": "fp8_dynamic", "layers": list(FP8_LINEARS),
        "weights": "E4M3 codes of w / s_w, s_w = max|w_row| / 448 (float32, 1 for a zero row)",
        "activations": "each input row of those layers quantize-dequantized the same way (forward pre-hook)",
        "order_sensitivity": sens})
    with open(ref / "generation_fp8.json", "w") as f:
        json.dump(doc_fp8, f, indent=None, separators=(",", ":"))
        f.write("\n")

    # g) summary -------------------------------------------------------------------------------
    print(f"tokenizer: {len(vocab_bytes)} vocab entries, {INNER_VOCAB} used; {len(TOKENIZER_STRINGS)} strings use "
          f"{len(used_ranks)} distinct ranks; {truncation_hits} strings would use a rank >= {INNER_VOCAB} "
          f"without truncation")
    print(f"embed_positions: transformers' VoxtralEncoder init is not sinusoidal (max|init - spec formula| = "
          f"{pos_init_diff:.3g}); set to whisper sinusoids() (float32): max|table - spec formula in float64| = "
          f"{pos_final_diff:.3g}")
    for n in notes:
        print("note:", n)
    print("\ncase            lang  n  min margin  first step <= 1e-3  distinct  greedy ids")
    for c in cases:
        g = c["greedy"]
        ties = [i for i, m in enumerate(g["margins"]) if m <= 1e-3]
        print(f"{c['audio']:<15} {str(c['language']):<5} {len(g['ids']):>2}  {min(g['margins']):>10.4f}  "
              f"{str(ties[0]) if ties else '-':>18}  {len(set(g['ids'])):>8}  {g['ids']}")
    print("\nfiles:")
    total = 0
    for p in sorted(out.rglob("*")):
        if p.is_file():
            total += p.stat().st_size
            print(f"  {p.relative_to(out)!s:<45} {p.stat().st_size:>10}")
    print(f"  total {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
