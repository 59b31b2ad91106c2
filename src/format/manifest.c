/* voxtral.json: reading, validating and writing the manifest of an exported model directory.
 *
 * The JSON layout and the meaning of every field are documented in manifest.h. Reading is strict:
 * every field is required, with its JSON type; integers must be integral and fit an int. The
 * checks of the values themselves live in vox_manifest_validate, shared by the reader, the writer
 * and the exporter (which validates a checkpoint's hyper-parameters before it writes anything). */
#include "format/manifest.h"
#include "audio/audio.h"
#include "common/file_out.h"
#include "format/json.h"
#include "mel/mel.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MANIFEST_FORMAT "voxtral_runner"
#define MANIFEST_MAX_BYTES (1 << 20) /* a manifest is a few hundred bytes */

/* ---- the quantization record ------------------------------------------------------------------ */

/* text_decoder.quantization of the fp8_dynamic scheme: the fields and their only values. */
static const struct {
    const char *key, *value;
} fp8_record[] = {
    {"scheme", "fp8_dynamic"},
    {"layers", "attn.qkv attn.o mlp.gate_up mlp.down"},
    {"weights", "F8_E4M3, NAME_scale F32 [rows]: s = max|w_row| / 448, q = rne(clamp(w / s))"},
    {"activations", "each input row: s = max|x_row| / 448, q = rne(clamp(x / s)), E4M3"},
    {"products", "float32 sum of q_x * q_w, times s_x * s_w"},
};

/* ---- validation ------------------------------------------------------------------------------ */

static int valid_file_name(const char *s) {
    return s[0] != '\0' && strchr(s, '/') == NULL && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

const vox_special_token vox_special_tokens[VOX_SPECIAL_TOKEN_COUNT] = {
    {"bos", "<s>", offsetof(vox_manifest, tokenizer.bos)},
    {"eos", "</s>", offsetof(vox_manifest, tokenizer.eos)},
    {"inst", "[INST]", offsetof(vox_manifest, tokenizer.inst)},
    {"inst_end", "[/INST]", offsetof(vox_manifest, tokenizer.inst_end)},
    {"audio", "[AUDIO]", offsetof(vox_manifest, tokenizer.audio)},
    {"begin_audio", "[BEGIN_AUDIO]", offsetof(vox_manifest, tokenizer.begin_audio)},
    {"transcribe", "[TRANSCRIBE]", offsetof(vox_manifest, tokenizer.transcribe)},
};

static int blob_dtype_ok(vox_dtype t) { return t == VOX_DTYPE_F32 || t == VOX_DTYPE_BF16; }

/* Finite too: JSON numbers such as 1e999 read as infinity (and would be written back as null). */
#define REQUIRE_POSITIVE(section, s, field)                                                  \
    do {                                                                                     \
        if (!((s).field > 0) || !isfinite((double)(s).field))                                \
            return vox_fail(err, VOX_ERR_FORMAT, "%s.%s must be positive and finite, got %g", \
                            section, #field, (double)(s).field);                             \
    } while (0)

static vox_status validate_blob(const char *section, const char *file, vox_dtype dtype,
                                vox_error *err) {
    if (!valid_file_name(file))
        return vox_fail(err, VOX_ERR_FORMAT, "%s.file must be a plain file name, got \"%s\"",
                        section, file);
    if (!blob_dtype_ok(dtype))
        return vox_fail(err, VOX_ERR_FORMAT, "%s.dtype must be F32 or BF16, got %s", section,
                        vox_dtype_name(dtype));
    return VOX_OK;
}

vox_status vox_manifest_validate(const vox_manifest *m, int check_files, vox_error *err) {
    if (m->format_version != VOX_FORMAT_VERSION)
        return vox_fail(err, VOX_ERR_FORMAT, "format_version is %d, this build reads %d",
                        m->format_version, VOX_FORMAT_VERSION);

    const vox_encoder_config *e = &m->encoder;
    REQUIRE_POSITIVE("audio_encoder", *e, num_mel_bins);
    REQUIRE_POSITIVE("audio_encoder", *e, d_model);
    REQUIRE_POSITIVE("audio_encoder", *e, layers);
    REQUIRE_POSITIVE("audio_encoder", *e, heads);
    REQUIRE_POSITIVE("audio_encoder", *e, head_dim);
    REQUIRE_POSITIVE("audio_encoder", *e, ffn_dim);
    REQUIRE_POSITIVE("audio_encoder", *e, max_source_positions);
    REQUIRE_POSITIVE("audio_encoder", *e, layer_norm_eps);
    REQUIRE_POSITIVE("audio_encoder", *e, downsample_factor);
    REQUIRE_POSITIVE("audio_encoder", *e, projector_dim);
    if ((long long)e->heads * e->head_dim != e->d_model)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "audio_encoder: d_model (%d) must equal heads (%d) * head_dim (%d)",
                        e->d_model, e->heads, e->head_dim);
    if (e->d_model % 2 != 0)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "audio_encoder.d_model must be even (sin and cos halves of the positions), "
                        "got %d", e->d_model);
    if (e->max_source_positions % e->downsample_factor != 0)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "audio_encoder: max_source_positions (%d) must be a multiple of "
                        "downsample_factor (%d)", e->max_source_positions, e->downsample_factor);
    /* The front end is fixed (src/mel): 128 log-mel bins, 3000 frames a 30 s chunk, which the
     * stride-2 convolution halves into the encoder's positions. */
    if (e->num_mel_bins != VOX_MEL_BINS)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "audio_encoder.num_mel_bins is %d; this build computes %d-bin log-mel "
                        "features", e->num_mel_bins, VOX_MEL_BINS);
    if (2LL * e->max_source_positions != VOX_CHUNK_FRAMES)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "audio_encoder.max_source_positions is %d; this build's 30 s chunks give "
                        "%d mel frames, %d positions after the stride-2 convolution",
                        e->max_source_positions, VOX_CHUNK_FRAMES, VOX_CHUNK_FRAMES / 2);

    const vox_decoder_config *d = &m->decoder;
    REQUIRE_POSITIVE("text_decoder", *d, vocab_size);
    REQUIRE_POSITIVE("text_decoder", *d, hidden);
    REQUIRE_POSITIVE("text_decoder", *d, layers);
    REQUIRE_POSITIVE("text_decoder", *d, heads);
    REQUIRE_POSITIVE("text_decoder", *d, kv_heads);
    REQUIRE_POSITIVE("text_decoder", *d, head_dim);
    REQUIRE_POSITIVE("text_decoder", *d, ffn_dim);
    REQUIRE_POSITIVE("text_decoder", *d, max_position_embeddings);
    REQUIRE_POSITIVE("text_decoder", *d, rope_theta);
    REQUIRE_POSITIVE("text_decoder", *d, rms_norm_eps);
    if (d->heads % d->kv_heads != 0)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "text_decoder: kv_heads (%d) must divide heads (%d)", d->kv_heads,
                        d->heads);
    if (d->head_dim % 2 != 0)
        return vox_fail(err, VOX_ERR_FORMAT, "text_decoder.head_dim must be even (RoPE), got %d",
                        d->head_dim);
    if (e->projector_dim != d->hidden)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "audio_encoder.projector_dim (%d) must equal text_decoder.hidden (%d)",
                        e->projector_dim, d->hidden);
    /* the shortest prompt (one chunk's audio tokens and the fixed ones) and one token after it */
    const long long one_chunk =
        e->max_source_positions / e->downsample_factor + VOX_PROMPT_FIXED_TOKENS + 1;
    if (d->max_position_embeddings < one_chunk)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "text_decoder.max_position_embeddings is %d, but the prompt of one 30 s "
                        "chunk and one token need %lld positions", d->max_position_embeddings,
                        one_chunk);

    for (int i = 0; i < VOX_SPECIAL_TOKEN_COUNT; i++) {
        int id = vox_manifest_special(m, i);
        if (id < 0 || id >= d->vocab_size)
            return vox_fail(err, VOX_ERR_FORMAT,
                            "tokenizer.%s (%d) must be a token id in [0, vocab_size %d)",
                            vox_special_tokens[i].field, id, d->vocab_size);
    }

    REQUIRE_POSITIVE("audio", *m, sample_rate);
    REQUIRE_POSITIVE("audio", *m, chunk_seconds);
    REQUIRE_POSITIVE("audio", *m, frame_rate);
    /* what the front end runs at; the frame rate is the audio tokens' (12.5 a second) */
    const double chunk_s = (double)VOX_CHUNK_SAMPLES / VOX_SAMPLE_RATE;
    const double token_rate = VOX_CHUNK_FRAMES / 2.0 / e->downsample_factor / chunk_s;
    if (m->sample_rate != VOX_SAMPLE_RATE || m->chunk_seconds != chunk_s ||
        fabs(m->frame_rate - token_rate) > 1e-9 * token_rate)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "audio: sample_rate %g, chunk_seconds %g, frame_rate %g; this build runs "
                        "%d Hz audio in %g s chunks, %g audio tokens a second with this encoder",
                        (double)m->sample_rate, (double)m->chunk_seconds, (double)m->frame_rate,
                        VOX_SAMPLE_RATE, chunk_s, token_rate);

    if (m->source_layout[0] == '\0')
        return vox_fail(err, VOX_ERR_FORMAT, "source.layout must not be empty");

    if (check_files) {
        vox_status st;
        if ((st = validate_blob("audio_encoder", e->file, e->dtype, err)) != VOX_OK) return st;
        if ((st = validate_blob("token_embedding", m->embedding.file, m->embedding.dtype, err)))
            return st;
        if ((st = validate_blob("text_decoder", d->file, d->dtype, err)) != VOX_OK) return st;
        if (!valid_file_name(m->tokenizer.file))
            return vox_fail(err, VOX_ERR_FORMAT,
                            "tokenizer.file must be a plain file name, got \"%s\"",
                            m->tokenizer.file);
    }
    return VOX_OK;
}

/* ---- reading --------------------------------------------------------------------------------- */

/* Manifest fields are all required: thin wrappers over the shared sticky-error reader
 * (format/json.h) that store into the struct and bound the strings. */
typedef vox_json_reader reader;

static void rd_int(reader *r, const cJSON *obj, const char *sec, const char *key, int *out) {
    int v = vox_json_int(r, obj, sec, key, NULL, VOX_JSON_REQUIRED);
    if (r->st == VOX_OK) *out = v;
}

static void rd_double(reader *r, const cJSON *obj, const char *sec, const char *key,
                      double *out) {
    double v = vox_json_number(r, obj, sec, key, (double)VOX_JSON_REQUIRED);
    if (r->st == VOX_OK) *out = v;
}

static void rd_string(reader *r, const cJSON *obj, const char *sec, const char *key, char *out,
                      size_t cap) {
    const char *v = vox_json_string(r, obj, sec, key, NULL);
    if (r->st != VOX_OK) return;
    if (!v) {
        vox_json_fail(r, VOX_ERR_FORMAT, "%s%s%s: missing", sec, *sec ? "." : "", key);
    } else if (strlen(v) >= cap) {
        vox_json_fail(r, VOX_ERR_FORMAT, "%s.%s: longer than %zu bytes", sec, key, cap - 1);
    } else {
        memcpy(out, v, strlen(v) + 1);
    }
}

static void rd_dtype(reader *r, const cJSON *obj, const char *sec, const char *key,
                     vox_dtype *out) {
    char name[32] = "";
    rd_string(r, obj, sec, key, name, sizeof name);
    if (r->st != VOX_OK) return;
    if (!vox_dtype_from_name(name, out))
        vox_json_fail(r, VOX_ERR_FORMAT, "%s.%s: unknown dtype \"%s\"", sec, key, name);
}

/* text_decoder.quantization: absent means none; present, it must be a scheme this build runs,
 * recorded with exactly the fields and values it writes. */
static void read_quantization(reader *r, const cJSON *dec, vox_decoder_config *d) {
    d->quant = VOX_QUANT_NONE;
    const cJSON *q = vox_json_object(r, dec, "text_decoder", "quantization", 0);
    if (r->st != VOX_OK || !q) return;
    const char *qs = "text_decoder.quantization";
    for (size_t i = 0; i < sizeof fp8_record / sizeof *fp8_record && r->st == VOX_OK; i++) {
        const char *v = vox_json_string(r, q, qs, fp8_record[i].key, NULL);
        if (r->st != VOX_OK) return;
        if (!v)
            vox_json_fail(r, VOX_ERR_FORMAT, "%s.%s: missing", qs, fp8_record[i].key);
        else if (strcmp(v, fp8_record[i].value) != 0)
            vox_json_fail(r, VOX_ERR_FORMAT,
                          "%s.%s is \"%s\"; this build runs only the scheme \"%s\" with %s \"%s\"",
                          qs, fp8_record[i].key, v, fp8_record[0].value, fp8_record[i].key,
                          fp8_record[i].value);
    }
    if (r->st == VOX_OK) d->quant = VOX_QUANT_FP8_DYNAMIC;
}

static void parse_manifest(reader *r, const cJSON *root, vox_manifest *m) {
    if (!cJSON_IsObject(root)) {
        vox_json_fail(r, VOX_ERR_FORMAT, "not a JSON object");
        return;
    }
    char format[64] = "";
    rd_string(r, root, "", "format", format, sizeof format);
    if (r->st == VOX_OK && strcmp(format, MANIFEST_FORMAT) != 0)
        vox_json_fail(r, VOX_ERR_FORMAT, "format is \"%s\", not \"%s\"", format, MANIFEST_FORMAT);
    /* The version first: a manifest of another version may differ in any other field. */
    rd_int(r, root, "", "format_version", &m->format_version);
    if (r->st == VOX_OK && m->format_version != VOX_FORMAT_VERSION)
        vox_json_fail(r, VOX_ERR_FORMAT,
                      "format_version %d, this build reads version %d: re-export the model with "
                      "this version's voxtral_export", m->format_version, VOX_FORMAT_VERSION);

    const cJSON *src = vox_json_object(r, root, "", "source", 1);
    rd_string(r, src, "source", "layout", m->source_layout, sizeof m->source_layout);
    rd_string(r, src, "source", "path", m->source_path, sizeof m->source_path);
    rd_dtype(r, src, "source", "dtype", &m->source_dtype);

    vox_encoder_config *e = &m->encoder;
    const cJSON *enc = vox_json_object(r, root, "", "audio_encoder", 1);
    const char *es = "audio_encoder";
    rd_string(r, enc, es, "file", e->file, sizeof e->file);
    rd_dtype(r, enc, es, "dtype", &e->dtype);
    rd_int(r, enc, es, "num_mel_bins", &e->num_mel_bins);
    rd_int(r, enc, es, "d_model", &e->d_model);
    rd_int(r, enc, es, "layers", &e->layers);
    rd_int(r, enc, es, "heads", &e->heads);
    rd_int(r, enc, es, "head_dim", &e->head_dim);
    rd_int(r, enc, es, "ffn_dim", &e->ffn_dim);
    rd_int(r, enc, es, "max_source_positions", &e->max_source_positions);
    rd_double(r, enc, es, "layer_norm_eps", &e->layer_norm_eps);
    rd_int(r, enc, es, "downsample_factor", &e->downsample_factor);
    rd_int(r, enc, es, "projector_dim", &e->projector_dim);

    const cJSON *emb = vox_json_object(r, root, "", "token_embedding", 1);
    rd_string(r, emb, "token_embedding", "file", m->embedding.file, sizeof m->embedding.file);
    rd_dtype(r, emb, "token_embedding", "dtype", &m->embedding.dtype);

    vox_decoder_config *d = &m->decoder;
    const cJSON *dec = vox_json_object(r, root, "", "text_decoder", 1);
    const char *ds = "text_decoder";
    rd_string(r, dec, ds, "file", d->file, sizeof d->file);
    rd_dtype(r, dec, ds, "dtype", &d->dtype);
    rd_int(r, dec, ds, "vocab_size", &d->vocab_size);
    rd_int(r, dec, ds, "hidden", &d->hidden);
    rd_int(r, dec, ds, "layers", &d->layers);
    rd_int(r, dec, ds, "heads", &d->heads);
    rd_int(r, dec, ds, "kv_heads", &d->kv_heads);
    rd_int(r, dec, ds, "head_dim", &d->head_dim);
    rd_int(r, dec, ds, "ffn_dim", &d->ffn_dim);
    rd_double(r, dec, ds, "rope_theta", &d->rope_theta);
    rd_double(r, dec, ds, "rms_norm_eps", &d->rms_norm_eps);
    rd_int(r, dec, ds, "max_position_embeddings", &d->max_position_embeddings);
    read_quantization(r, dec, d);

    const cJSON *tok = vox_json_object(r, root, "", "tokenizer", 1);
    const char *ts = "tokenizer";
    rd_string(r, tok, ts, "file", m->tokenizer.file, sizeof m->tokenizer.file);
    rd_int(r, tok, ts, "bos", &m->tokenizer.bos);
    rd_int(r, tok, ts, "eos", &m->tokenizer.eos);
    rd_int(r, tok, ts, "inst", &m->tokenizer.inst);
    rd_int(r, tok, ts, "inst_end", &m->tokenizer.inst_end);
    rd_int(r, tok, ts, "audio", &m->tokenizer.audio);
    rd_int(r, tok, ts, "begin_audio", &m->tokenizer.begin_audio);
    rd_int(r, tok, ts, "transcribe", &m->tokenizer.transcribe);

    const cJSON *au = vox_json_object(r, root, "", "audio", 1);
    rd_int(r, au, "audio", "sample_rate", &m->sample_rate);
    rd_double(r, au, "audio", "chunk_seconds", &m->chunk_seconds);
    rd_double(r, au, "audio", "frame_rate", &m->frame_rate);
}

static void manifest_path(const char *dir, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", dir, VOX_MANIFEST_FILE);
}

vox_status vox_manifest_read(const char *dir, vox_manifest *m, vox_error *err) {
    char path[VOX_PATH_MAX + 32];
    manifest_path(dir, path, sizeof path);
    memset(m, 0, sizeof *m);

    cJSON *root = NULL;
    vox_status st = vox_json_load(path, MANIFEST_MAX_BYTES, &root, err);
    if (st != VOX_OK) return st;

    reader r = {path, err, VOX_OK};
    parse_manifest(&r, root, m);
    cJSON_Delete(root);
    if (r.st != VOX_OK) return r.st;

    st = vox_manifest_validate(m, 1, err);
    if (st != VOX_OK) vox_error_prefix(err, "%s", path);
    return st;
}

/* ---- writing --------------------------------------------------------------------------------- */

static cJSON *blob_object(cJSON *root, const char *key, const char *file, vox_dtype dtype) {
    cJSON *o = cJSON_AddObjectToObject(root, key);
    if (o) {
        cJSON_AddStringToObject(o, "file", file);
        cJSON_AddStringToObject(o, "dtype", vox_dtype_name(dtype));
    }
    return o;
}

/* Builds the JSON tree; NULL when an allocation failed (cJSON's adders tolerate NULL parents). */
static cJSON *manifest_to_json(const vox_manifest *m) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    int ok = cJSON_AddStringToObject(root, "format", MANIFEST_FORMAT) != NULL &&
             cJSON_AddNumberToObject(root, "format_version", m->format_version) != NULL;

    cJSON *src = cJSON_AddObjectToObject(root, "source");
    ok = ok && src && cJSON_AddStringToObject(src, "layout", m->source_layout) &&
         cJSON_AddStringToObject(src, "path", m->source_path) &&
         cJSON_AddStringToObject(src, "dtype", vox_dtype_name(m->source_dtype));

    const vox_encoder_config *e = &m->encoder;
    cJSON *enc = blob_object(root, "audio_encoder", e->file, e->dtype);
    ok = ok && enc && cJSON_AddNumberToObject(enc, "num_mel_bins", e->num_mel_bins) &&
         cJSON_AddNumberToObject(enc, "d_model", e->d_model) &&
         cJSON_AddNumberToObject(enc, "layers", e->layers) &&
         cJSON_AddNumberToObject(enc, "heads", e->heads) &&
         cJSON_AddNumberToObject(enc, "head_dim", e->head_dim) &&
         cJSON_AddNumberToObject(enc, "ffn_dim", e->ffn_dim) &&
         cJSON_AddNumberToObject(enc, "max_source_positions", e->max_source_positions) &&
         cJSON_AddNumberToObject(enc, "layer_norm_eps", e->layer_norm_eps) &&
         cJSON_AddNumberToObject(enc, "downsample_factor", e->downsample_factor) &&
         cJSON_AddNumberToObject(enc, "projector_dim", e->projector_dim);

    ok = ok && blob_object(root, "token_embedding", m->embedding.file, m->embedding.dtype);

    const vox_decoder_config *d = &m->decoder;
    cJSON *dec = blob_object(root, "text_decoder", d->file, d->dtype);
    ok = ok && dec && cJSON_AddNumberToObject(dec, "vocab_size", d->vocab_size) &&
         cJSON_AddNumberToObject(dec, "hidden", d->hidden) &&
         cJSON_AddNumberToObject(dec, "layers", d->layers) &&
         cJSON_AddNumberToObject(dec, "heads", d->heads) &&
         cJSON_AddNumberToObject(dec, "kv_heads", d->kv_heads) &&
         cJSON_AddNumberToObject(dec, "head_dim", d->head_dim) &&
         cJSON_AddNumberToObject(dec, "ffn_dim", d->ffn_dim) &&
         cJSON_AddNumberToObject(dec, "rope_theta", d->rope_theta) &&
         cJSON_AddNumberToObject(dec, "rms_norm_eps", d->rms_norm_eps) &&
         cJSON_AddNumberToObject(dec, "max_position_embeddings", d->max_position_embeddings);
    if (ok && d->quant == VOX_QUANT_FP8_DYNAMIC) {
        cJSON *q = cJSON_AddObjectToObject(dec, "quantization");
        ok = q != NULL;
        for (size_t i = 0; ok && i < sizeof fp8_record / sizeof *fp8_record; i++)
            ok = cJSON_AddStringToObject(q, fp8_record[i].key, fp8_record[i].value) != NULL;
    }

    cJSON *tok = cJSON_AddObjectToObject(root, "tokenizer");
    ok = ok && tok && cJSON_AddStringToObject(tok, "file", m->tokenizer.file) &&
         cJSON_AddNumberToObject(tok, "bos", m->tokenizer.bos) &&
         cJSON_AddNumberToObject(tok, "eos", m->tokenizer.eos) &&
         cJSON_AddNumberToObject(tok, "inst", m->tokenizer.inst) &&
         cJSON_AddNumberToObject(tok, "inst_end", m->tokenizer.inst_end) &&
         cJSON_AddNumberToObject(tok, "audio", m->tokenizer.audio) &&
         cJSON_AddNumberToObject(tok, "begin_audio", m->tokenizer.begin_audio) &&
         cJSON_AddNumberToObject(tok, "transcribe", m->tokenizer.transcribe);

    cJSON *au = cJSON_AddObjectToObject(root, "audio");
    ok = ok && au && cJSON_AddNumberToObject(au, "sample_rate", m->sample_rate) &&
         cJSON_AddNumberToObject(au, "chunk_seconds", m->chunk_seconds) &&
         cJSON_AddNumberToObject(au, "frame_rate", m->frame_rate);

    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

vox_status vox_manifest_write(const char *dir, const vox_manifest *m, vox_error *err) {
    char path[VOX_PATH_MAX + 32];
    manifest_path(dir, path, sizeof path);

    vox_status st = vox_manifest_validate(m, 1, err);
    if (st != VOX_OK) {
        vox_error_prefix(err, "%s: not written", path);
        if (err) err->code = VOX_ERR_INVALID_ARG;
        return VOX_ERR_INVALID_ARG;
    }

    cJSON *root = manifest_to_json(m);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);

    size_t len = strlen(text);
    text[len] = '\n'; /* cJSON_Print's NUL becomes the final newline */
    st = vox_file_write_whole(path, text, len + 1, err);
    free(text);
    return st;
}
