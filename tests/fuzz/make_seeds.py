#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses into tests/fuzz/corpus/NAME/ (committed; rerun
after a change). Small valid inputs of each format plus a few near misses, so that the fuzzer
starts deep in each parser. Standard library only; the audio seeds are encoded by libsndfile
itself (through ctypes), as the project reads them."""
import base64
import ctypes
import ctypes.util
import json
import math
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
FIXTURES = HERE.parent / "fixtures"


def write(name, files):
    d = CORPUS / name
    d.mkdir(parents=True, exist_ok=True)
    for old in d.iterdir():
        old.unlink()
    for fname, data in files.items():
        (d / fname).write_bytes(data if isinstance(data, bytes) else data.encode())


# ---- safetensors ---------------------------------------------------------------------------------

def safetensors(tensors, metadata=None, pad=True):
    """tensors: [(name, dtype, shape, bytes)] in file order."""
    header, offset = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-(8 + len(h)) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(t[3] for t in tensors)


def safetensors_seeds():
    f32 = struct.pack("<6f", 1, -2, 3.5, 0, 1e-3, -7)
    return {
        "empty.safetensors": safetensors([]),
        "two.safetensors": safetensors(
            [("a.weight", "F32", [2, 3], f32), ("b", "BF16", [4], bytes(range(8)))],
            {"format": "pt", "note": "caf\u00e9"}),
        "scalar_and_empty.safetensors": safetensors(
            [("s", "U8", [], b"\x07"), ("z", "F16", [0, 5], b""), ("i", "I64", [1], b"\x01" * 8)]),
        "all_dtypes.safetensors": safetensors(
            [(f"t{i}", d, [1], b"\x00" * n) for i, (d, n) in enumerate(
                [("F64", 8), ("I32", 4), ("U16", 2), ("I8", 1), ("BOOL", 1), ("F8_E4M3", 1)])]),
        "overlap.safetensors": struct.pack("<Q", 96) + json.dumps(
            {"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
             "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}},
            separators=(",", ":")).encode().ljust(96) + b"abc",
        "short.safetensors": b"\x10\x00\x00\x00\x00\x00\x00\x00{}",
    }


# ---- manifest --------------------------------------------------------------------------------

def manifest():
    return {
        "format": "voxtral_runner", "format_version": 1,
        "source": {"layout": "transformers", "path": "tests/fixtures/tiny/checkpoint_hf",
                   "dtype": "F32"},
        "audio_encoder": {"file": "audio_encoder.safetensors", "dtype": "F32", "num_mel_bins": 128,
                          "d_model": 64, "layers": 2, "heads": 4, "head_dim": 16, "ffn_dim": 128,
                          "max_source_positions": 1500, "layer_norm_eps": 1e-5,
                          "downsample_factor": 4, "projector_dim": 96},
        "token_embedding": {"file": "token_embedding.safetensors", "dtype": "F32"},
        "text_decoder": {"file": "text_decoder.safetensors", "dtype": "BF16", "vocab_size": 1400,
                         "hidden": 96, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 24,
                         "ffn_dim": 192, "rope_theta": 1e8, "rms_norm_eps": 1e-5,
                         "max_position_embeddings": 32768},
        "tokenizer": {"file": "tekken.json", "bos": 1, "eos": 2, "inst": 3, "inst_end": 4,
                      "audio": 24, "begin_audio": 25, "transcribe": 34},
        "audio": {"sample_rate": 16000, "chunk_seconds": 30, "frame_rate": 12.5},
    }


def manifest_seeds():
    good = manifest()
    v2 = json.loads(json.dumps(good))
    v2["format_version"] = 2
    bad_heads = json.loads(json.dumps(good))
    bad_heads["text_decoder"]["kv_heads"] = 3
    missing = json.loads(json.dumps(good))
    del missing["tokenizer"]["eos"]
    return {
        "good.json": json.dumps(good, indent=1),
        "compact.json": json.dumps(good, separators=(",", ":")),
        "version2.json": json.dumps(v2),
        "kv_heads.json": json.dumps(bad_heads),
        "missing_eos.json": json.dumps(missing),
        "nested.json": '{"a": {"b": {"c": [1, 2.5, "x", null, true]}}, "n": -2147483648, '
                       '"big": 1e400, "s": "\\u00e9\\ud83d\\ude00"}',
    }


# ---- tekken.json -----------------------------------------------------------------------------

PATTERN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
           r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|"
           r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def tekken(version="v11", merges=(b"ab", b"abc", b"  ", b"\xc3\xa9"), specials=4,
           listed=("<unk>", "<s>", "</s>"), pattern=PATTERN):
    def entry(rank, b):
        try:
            s = b.decode("utf-8")
        except UnicodeDecodeError:
            s = None
        return {"rank": rank, "token_bytes": base64.b64encode(b).decode(), "token_str": s}
    vocab = [entry(i, bytes([i])) for i in range(256)]
    vocab += [entry(256 + i, m) for i, m in enumerate(merges)]
    d = {"config": {"pattern": pattern, "num_vocab_tokens": len(vocab),
                    "default_vocab_size": specials + len(vocab),
                    "default_num_special_tokens": specials, "version": version},
         "vocab": vocab}
    if listed is not None:
        d["special_tokens"] = [{"rank": i, "token_str": s, "is_control": True}
                               for i, s in enumerate(listed)]
    return json.dumps(d, separators=(",", ":"))


def tekken_seeds():
    return {
        "v11.json": tekken(),
        "v3_deprecated_specials.json": tekken(version="v3", specials=24, listed=None),
        "fillers.json": tekken(specials=12, listed=("<unk>", "<s>", "</s>", "[INST]")),
        "class_pattern.json": tekken(pattern=r"[\s\S]|\Q\s\E|[[:alpha:]]+|\S+|\s"),
        "not_json.json": '{"config": {"pattern": "x",',
    }


# ---- tokenizer (text and ids for the fixture tokenizer) --------------------------------------

def tokenizer_seeds():
    return {
        "english.txt": "Good morning everyone, let's start with the quarterly numbers.\n",
        "mixed.txt": "caf\u00e9 na\u00efve \u65e5\u672c\u8a9e \U0001F600 x\u00b2 \u0661\u0662 "
                     "\u2028\u00a0\u180e end",
        "spaces.txt": "a  b   c\t\t\n\n\r\n    \n  x  ",
        "digits.txt": "3.14159 2025-12-01 10,000 $5 #1 @user",
        "invalid_utf8.bin": b"ok \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf \xff",
        "ids.bin": bytes([3, 0xE8, 3, 0xE9, 3, 0xEA, 4, 0x10, 0, 1, 0x05, 0x77]),
    }


# ---- audio ------------------------------------------------------------------------------------

SF_FORMAT = {"WAV": 0x010000, "AIFF": 0x020000, "AU": 0x030000, "FLAC": 0x170000,
             "OGG": 0x200000, "MPEG": 0x230000, "CAF": 0x180000, "W64": 0x0B0000}
SF_SUB = {"PCM_16": 0x0002, "PCM_24": 0x0003, "PCM_U8": 0x0005, "FLOAT": 0x0006,
          "ULAW": 0x0010, "IMA_ADPCM": 0x0012, "VORBIS": 0x0060, "OPUS": 0x0064,
          "MP3": 0x0082}


class SF_INFO(ctypes.Structure):
    _fields_ = [("frames", ctypes.c_int64), ("samplerate", ctypes.c_int),
                ("channels", ctypes.c_int), ("format", ctypes.c_int),
                ("sections", ctypes.c_int), ("seekable", ctypes.c_int)]


def encode_audio(path, container, subtype, rate, channels, seconds):
    lib = ctypes.CDLL(ctypes.util.find_library("sndfile"))
    lib.sf_open.restype = ctypes.c_void_p
    lib.sf_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(SF_INFO)]
    lib.sf_writef_float.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float),
                                    ctypes.c_int64]
    lib.sf_close.argtypes = [ctypes.c_void_p]
    info = SF_INFO(0, rate, channels, SF_FORMAT[container] | SF_SUB[subtype], 0, 0)
    snd = lib.sf_open(str(path).encode(), 0x20, ctypes.byref(info))  # SFM_WRITE
    if not snd:
        raise RuntimeError(f"libsndfile cannot write {container}/{subtype}")
    n = int(rate * seconds)
    samples = [0.5 * math.sin(2 * math.pi * (220 + 110 * c) * i / rate) * (1 - i / n)
               for i in range(n) for c in range(channels)]
    buf = (ctypes.c_float * len(samples))(*samples)
    lib.sf_writef_float(snd, buf, n)
    lib.sf_close(snd)
    data = Path(path).read_bytes()
    Path(path).unlink()
    return data


def audio_seeds():
    tmp = CORPUS / "tmp.audio"
    seeds = {
        "pcm16_16k_mono.wav": encode_audio(tmp, "WAV", "PCM_16", 16000, 1, 0.1),
        "pcm24_44k_stereo.wav": encode_audio(tmp, "WAV", "PCM_24", 44100, 2, 0.03),
        "float_8k.wav": encode_audio(tmp, "WAV", "FLOAT", 8000, 1, 0.1),
        "u8_6ch_11k.wav": encode_audio(tmp, "WAV", "PCM_U8", 11025, 6, 0.05),
        "ima_adpcm.wav": encode_audio(tmp, "WAV", "IMA_ADPCM", 16000, 1, 0.1),
        "ulaw.au": encode_audio(tmp, "AU", "ULAW", 8000, 1, 0.1),
        "pcm16.aiff": encode_audio(tmp, "AIFF", "PCM_16", 22050, 1, 0.05),
        "flac_22k.flac": encode_audio(tmp, "FLAC", "PCM_16", 22050, 1, 0.1),
        "vorbis.ogg": encode_audio(tmp, "OGG", "VORBIS", 16000, 1, 0.2),
        "opus.opus": encode_audio(tmp, "OGG", "OPUS", 48000, 1, 0.1),
        "mp3.mp3": encode_audio(tmp, "MPEG", "MP3", 24000, 1, 0.2),
    }
    for name in ["nan.wav", "text.wav", "truncated.wav", "zero_frames.wav"]:
        seeds[name] = (FIXTURES / "bad_audio" / name).read_bytes()
    return seeds


# ---- options, --files-from, writers ------------------------------------------------------------

def options_input(ids_file, *args):
    content = ids_file.encode() if isinstance(ids_file, str) else ids_file
    return bytes([len(content)]) + content + b"\0".join(a.encode() for a in args)


def options_seeds():
    return {
        "plain": options_input("", "a.wav"),
        "force_inline": options_input("", "--force-tokens", "1,2, 3\t4", "-o", "json", "x.wav"),
        "force_file": options_input("10 20\n30,\r\n40", "--force-tokens=@ids", "--logprobs",
                                    "5", "x.wav"),
        "segment": options_input("", "-s", "--silence-threshold", "-40", "--min-silence=0.25",
                                 "-o", "srt", "-f", "list.txt", "-O", "out"),
        "confidence": options_input("", "--print-confidence", "--confidence-threshold", "0.3",
                                    "-l", "en", "-n", "64", "--no-progress", "a", "b"),
        "errors": options_input("1,x", "--force-tokens", "@f", "-o", "vtt", "--bogus", "-n"),
        "help": options_input("", "-sh", "--version"),
    }


def inputs_seeds():
    return {
        "simple": "a.wav\nb.flac\n",
        "crlf": "one.wav\r\ntwo words.wav\r\n\r\n# not a comment.wav\r\n",
        "no_newline": "  spaced name.mp3  \n\n\nlast",
        "nul": b"good.wav\nbad\0name.wav\n",
        "odd": b"\r\r\n\xff\xfe.wav\n\t\n/abs/path.ogg\r",
    }


def output_input(flags, path, language, segs, pieces, audio=12345, total=678):
    """segs: [(start_ms, end_ms, text, [(id, logprob_byte, [(top_id, top_lp)])])]."""
    b = bytes([flags]) + path + b"\0" + language + b"\0"
    b += struct.pack(">I", audio)
    if not flags & 8:
        b += struct.pack(">I", total)
    if flags & 1:
        b += bytes([len(segs)])
    for start, end, text, toks in segs:
        b += text + b"\0" + struct.pack(">II", start, end) + bytes([len(toks)])
        for tid, lp, tops in toks:
            b += bytes([tid + 2])
            if flags & 2:
                b += bytes([lp, len(tops)])
                for top_id, top_lp in tops:
                    b += bytes([top_id + 2, top_lp])
    return b + b"\xff".join(pieces)


def output_seeds():
    pieces = [b"Hello", b" world", b"!", b" caf", b"\xc3", b"\xa9", b" <i>", b" --> ", b"&amp;",
              b"\n", b"\0", b"[INST]", b" \xe6\x97\xa5"]
    toks = [(0, 1, [(1, 10)]), (1, 40, []), (2, 255, [(3, 2), (4, 0)])]
    return {
        "txt": output_input(0, b"talk.wav", b"", [(0, 0, b"Hello world!", toks)], pieces),
        "json_logprobs": output_input(2 | 4, b"dir/\xffname.wav", b"en",
                                      [(0, 0, b"Hello caf\xc3\xa9", toks + [(4, 9, []), (5, 254, [])])],
                                      pieces),
        "segments": output_input(1 | 2 | 16, b"a\nb.wav", b"",
                                 [(250, 4100, b" Hello --> <b>&</b>\r\nworld ", toks),
                                  (5000, 5000, b"   ", []),
                                  (3600000, 3723456, b"\x1b[31mred\x7f", [(7, 0, [])])], pieces),
        "confidence": output_input(32 | 64 | 16, b"x.wav", b"",
                                   [(0, 0, b"Hello world! caf\xc3\xa9", toks + [(3, 200, []),
                                                                            (4, 3, []), (5, 3, [])])],
                                   pieces),
        "invalid_text": output_input(1 | 128, b"\xc0\xaf", b"\xed\xa0\x80",
                                     [(10, 20, b"bad \xe2\x82 utf8 \xf8", [])], pieces),
    }


def main():
    write("safetensors", safetensors_seeds())
    write("manifest", manifest_seeds())
    write("tekken", tekken_seeds())
    write("tokenizer", tokenizer_seeds())
    write("audio", audio_seeds())
    write("options", options_seeds())
    write("inputs", inputs_seeds())
    write("output", output_seeds())


if __name__ == "__main__":
    main()
