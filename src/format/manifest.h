/* voxtral.json: the manifest of an exported model directory.
 *
 * It names the three blobs and the tokenizer, records every hyper-parameter the forward pass
 * needs, the special-token ids, each blob's dtype and the source checkpoint. The loader checks
 * every tensor of the blobs against these numbers before it allocates anything.
 *
 * {
 *   "format": "voxtral_runner", "format_version": 1,
 *   "source": {"layout": "transformers" | "mistral", "path": "...", "dtype": "F32" | "BF16"},
 *   "audio_encoder": {"file": "audio_encoder.safetensors", "dtype": "BF16",
 *       "num_mel_bins": 128, "d_model": 1280, "layers": 32, "heads": 20, "head_dim": 64,
 *       "ffn_dim": 5120, "max_source_positions": 1500, "layer_norm_eps": 1e-5,
 *       "downsample_factor": 4, "projector_dim": 3072},
 *   "token_embedding": {"file": "token_embedding.safetensors", "dtype": "BF16"},
 *   "text_decoder": {"file": "text_decoder.safetensors", "dtype": "BF16",
 *       "vocab_size": 131072, "hidden": 3072, "layers": 30, "heads": 32, "kv_heads": 8,
 *       "head_dim": 128, "ffn_dim": 8192, "rope_theta": 1e8, "rms_norm_eps": 1e-5,
 *       "max_position_embeddings": 32768,
 *       "quantization": {...}},   (optional: absent means none; see below)
 *   "tokenizer": {"file": "tekken.json", "bos": 1, "eos": 2, "inst": 3, "inst_end": 4,
 *       "audio": 24, "begin_audio": 25, "transcribe": 34},
 *   "audio": {"sample_rate": 16000, "chunk_seconds": 30, "frame_rate": 12.5}
 * }
 *
 * Tensor names inside the blobs (shapes as [rows, cols]; L = layer index):
 *   audio_encoder:  conv1.weight [d, mel, 3], conv1.bias [d], conv2.weight [d, d, 3], conv2.bias [d],
 *                   positions [max_source_positions, d] (always F32),
 *                   layers.L.attn_norm.{weight,bias} [d], layers.L.attn.q.{weight [d,d], bias [d]},
 *                   layers.L.attn.k.weight [d,d], layers.L.attn.v.{weight,bias},
 *                   layers.L.attn.o.{weight,bias}, layers.L.ffn_norm.{weight,bias},
 *                   layers.L.fc1.{weight [ffn,d], bias [ffn]}, layers.L.fc2.{weight [d,ffn], bias [d]},
 *                   norm.{weight,bias} [d],
 *                   projector.linear1.weight [projector_dim, d*downsample],
 *                   projector.linear2.weight [projector_dim, projector_dim]
 *   token_embedding: embedding [vocab_size, hidden]
 *   text_decoder:   layers.L.attn_norm.weight [hidden],
 *                   layers.L.attn.qkv.weight [(heads + 2*kv_heads)*head_dim, hidden]: the rows of
 *                       q, then k, then v (one GEMM for the three projections),
 *                   layers.L.attn.o.weight [hidden, heads*head_dim], layers.L.ffn_norm.weight [hidden],
 *                   layers.L.mlp.gate_up.weight [2*ffn, hidden]: the rows of gate, then up,
 *                   layers.L.mlp.down.weight [hidden, ffn], norm.weight [hidden],
 *                   lm_head.weight [vocab_size, hidden]
 * q/k rows use the rotate-half RoPE pairing (dim i with i + head_dim/2), as transformers does.
 *
 * text_decoder.quantization, written by voxtral_export --dtype fp8 (every field required, with
 * exactly these values: a reader that does not know a scheme refuses the model):
 *   {"scheme": "fp8_dynamic", "layers": "attn.qkv attn.o mlp.gate_up mlp.down",
 *    "weights": "F8_E4M3, NAME_scale F32 [rows]: s = max|w_row| / 448, q = rne(clamp(w / s))",
 *    "activations": "each input row: s = max|x_row| / 448, q = rne(clamp(x / s)), E4M3",
 *    "products": "float32 sum of q_x * q_w, times s_x * s_w"}
 * The four weights are then layers.L.attn.qkv.weight F8_E4M3 [rows, cols] with
 * layers.L.attn.qkv.weight_scale F32 [rows], and so on.
 */
#ifndef VOX_FORMAT_MANIFEST_H
#define VOX_FORMAT_MANIFEST_H

#include "common/dtype.h"
#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VOX_MANIFEST_FILE "voxtral.json"
#define VOX_FORMAT_VERSION 1
#define VOX_PATH_MAX 4096

typedef struct {
    char file[256];
    vox_dtype dtype;
    int num_mel_bins, d_model, layers, heads, head_dim, ffn_dim, max_source_positions;
    double layer_norm_eps;
    int downsample_factor, projector_dim;
} vox_encoder_config;

/* Quantization of the text decoder's linear layers (attn.qkv, attn.o, mlp.gate_up, mlp.down). */
typedef enum {
    VOX_QUANT_NONE, /* every tensor in the blob's dtype */
    /* "fp8_dynamic" (common/fp8.h): those four weights F8_E4M3 with per-row F32 scales in
     * NAME_scale [rows] beside each NAME, their input rows quantized the same way at run time;
     * every other tensor in the blob's dtype */
    VOX_QUANT_FP8_DYNAMIC
} vox_quantization;

typedef struct {
    char file[256];
    vox_dtype dtype;
    vox_quantization quant;
    int vocab_size, hidden, layers, heads, kv_heads, head_dim, ffn_dim, max_position_embeddings;
    double rope_theta, rms_norm_eps;
} vox_decoder_config;

typedef struct {
    int format_version;
    char source_layout[32];
    char source_path[VOX_PATH_MAX];
    vox_dtype source_dtype;
    vox_encoder_config encoder;
    struct {
        char file[256];
        vox_dtype dtype;
    } embedding;
    vox_decoder_config decoder;
    struct {
        char file[256];
        int bos, eos, inst, inst_end, audio, begin_audio, transcribe;
    } tokenizer;
    int sample_rate;
    double chunk_seconds, frame_rate;
} vox_manifest;

/* The special tokens voxtral.json records: the field of its tokenizer section, the token's name
 * in tekken.json (where voxtral_export finds its id), and where the id sits in a vox_manifest. */
typedef struct {
    const char *field, *token;
    size_t offset; /* of the int in vox_manifest */
} vox_special_token;
#define VOX_SPECIAL_TOKEN_COUNT 7
extern const vox_special_token vox_special_tokens[VOX_SPECIAL_TOKEN_COUNT];
/* Special token i's id in m (to read, and to set). */
static inline int vox_manifest_special(const vox_manifest *m, int i) {
    return *(const int *)((const char *)m + vox_special_tokens[i].offset);
}
static inline int *vox_manifest_special_ref(vox_manifest *m, int i) {
    return (int *)((char *)m + vox_special_tokens[i].offset);
}

/* The transcription prompt's tokens besides the audio and the language hint (voxtral-spec.md
 * section 5): bos, inst, begin_audio before the audio; inst_end, transcribe after it. */
#define VOX_PROMPT_FIXED_TOKENS 5

/* Reads DIR/voxtral.json; validates types, ranges (all sizes positive, heads * head_dim
 * consistent, kv_heads divides heads, ...) and the format version (a mismatch says to re-export).
 * Every failure is a VOX_ERR_FORMAT (VOX_ERR_IO when the file cannot be read) whose message names
 * the file and the field. */
vox_status vox_manifest_read(const char *dir, vox_manifest *m, vox_error *err);
/* Writes DIR/voxtral.json (through a temporary file and a rename), after vox_manifest_validate. */
vox_status vox_manifest_write(const char *dir, const vox_manifest *m, vox_error *err);
/* The checks of vox_manifest_read on the values alone (sizes positive, d_model == heads *
 * head_dim, kv_heads divides heads, head_dim even, projector_dim == decoder hidden, token ids
 * inside the vocabulary, ...). The blob file names and dtypes are checked only when
 * check_files is set: the exporter validates the hyper-parameters before it knows them.
 * VOX_ERR_FORMAT with a message naming the field ("text_decoder.kv_heads ..."). */
vox_status vox_manifest_validate(const vox_manifest *m, int check_files, vox_error *err);

#ifdef __cplusplus
}
#endif
#endif
