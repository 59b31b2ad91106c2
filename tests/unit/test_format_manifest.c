/* voxtral.json: a write/read round trip of every field, and malformed manifests that must be
 * refused with VOX_ERR_FORMAT and a message naming the file and the field. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/manifest.h"
#include "harness.h"

/* The released model's numbers, with distinct token ids so that a swap would show. */
static vox_manifest sample_manifest(void) {
    vox_manifest m;
    memset(&m, 0, sizeof m);
    m.format_version = VOX_FORMAT_VERSION;
    strcpy(m.source_layout, "mistral");
    strcpy(m.source_path, "/models/Voxtral-Mini-3B-2507");
    m.source_dtype = VOX_DTYPE_BF16;
    vox_encoder_config *e = &m.encoder;
    strcpy(e->file, "audio_encoder.safetensors");
    e->dtype = VOX_DTYPE_BF16;
    e->num_mel_bins = 128;
    e->d_model = 1280;
    e->layers = 32;
    e->heads = 20;
    e->head_dim = 64;
    e->ffn_dim = 5120;
    e->max_source_positions = 1500;
    e->layer_norm_eps = 1e-5;
    e->downsample_factor = 4;
    e->projector_dim = 3072;
    strcpy(m.embedding.file, "token_embedding.safetensors");
    m.embedding.dtype = VOX_DTYPE_F32;
    vox_decoder_config *d = &m.decoder;
    strcpy(d->file, "text_decoder.safetensors");
    d->dtype = VOX_DTYPE_BF16;
    d->vocab_size = 131072;
    d->hidden = 3072;
    d->layers = 30;
    d->heads = 32;
    d->kv_heads = 8;
    d->head_dim = 128;
    d->ffn_dim = 8192;
    d->max_position_embeddings = 131072;
    d->rope_theta = 1e8;
    d->rms_norm_eps = 1e-5;
    strcpy(m.tokenizer.file, "tekken.json");
    m.tokenizer.bos = 1;
    m.tokenizer.eos = 2;
    m.tokenizer.inst = 3;
    m.tokenizer.inst_end = 4;
    m.tokenizer.audio = 24;
    m.tokenizer.begin_audio = 25;
    m.tokenizer.transcribe = 34;
    m.sample_rate = 16000;
    m.chunk_seconds = 30;
    m.frame_rate = 12.5;
    return m;
}

static char dir[64];

static char *manifest_file(void) {
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, VOX_MANIFEST_FILE);
    return path;
}

static void write_text(const char *text) {
    FILE *f = fopen(manifest_file(), "wb");
    if (!f) {
        perror(manifest_file());
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* The JSON of a manifest, as vox_manifest_write produces it. */
static cJSON *manifest_json(const vox_manifest *m) {
    vox_error err = {0};
    if (vox_manifest_write(dir, m, &err) != VOX_OK) {
        fprintf(stderr, "write failed: %s\n", err.msg);
        exit(1);
    }
    FILE *f = fopen(manifest_file(), "rb");
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return cJSON_Parse(buf);
}

static cJSON *sample_json(void) {
    vox_manifest m = sample_manifest();
    return manifest_json(&m);
}

static void write_json(cJSON *root) {
    char *text = cJSON_Print(root);
    write_text(text);
    free(text);
    cJSON_Delete(root);
}

/* Reads the manifest on disk and checks it is refused with `code` and a message containing
 * the file's name and each of the given fragments. */
static void expect_error(vox_status code, const char *what, const char *frag1, const char *frag2) {
    vox_manifest m;
    vox_error err = {0};
    vox_status st = vox_manifest_read(dir, &m, &err);
    CHECK_MSG(st == code, "%s: got status %d (%s), want %d", what, (int)st, err.msg, (int)code);
    CHECK_MSG(strstr(err.msg, "voxtral.json") != NULL, "%s: message lacks the file: %s", what,
              err.msg);
    CHECK_MSG(!frag1 || strstr(err.msg, frag1), "%s: message lacks \"%s\": %s", what, frag1,
              err.msg);
    CHECK_MSG(!frag2 || strstr(err.msg, frag2), "%s: message lacks \"%s\": %s", what, frag2,
              err.msg);
}

static cJSON *section(cJSON *root, const char *name) {
    return cJSON_GetObjectItemCaseSensitive(root, name);
}

static void set_number(cJSON *root, const char *sec, const char *key, double v) {
    cJSON_ReplaceItemInObjectCaseSensitive(sec ? section(root, sec) : root, key,
                                           cJSON_CreateNumber(v));
}

/* The sample manifest with one number changed must be refused (VOX_ERR_FORMAT, expect_error's
 * checks). */
static void expect_number_error(const char *sec, const char *key, double v, const char *what,
                                const char *frag1, const char *frag2) {
    cJSON *j = sample_json();
    set_number(j, sec, key, v);
    write_json(j);
    expect_error(VOX_ERR_FORMAT, what, frag1, frag2);
}

static void set_string(cJSON *root, const char *sec, const char *key, const char *v) {
    cJSON_ReplaceItemInObjectCaseSensitive(sec ? section(root, sec) : root, key,
                                           cJSON_CreateString(v));
}

static void test_round_trip(void) {
    vox_manifest m = sample_manifest(), back;
    vox_error err = {0};
    CHECK(vox_manifest_write(dir, &m, &err) == VOX_OK);
    CHECK_MSG(vox_manifest_read(dir, &back, &err) == VOX_OK, "%s", err.msg);
    /* Field by field first, for a readable failure; then the whole struct (both are zeroed
     * before filling, and strings are copied with their terminator only). */
    CHECK(back.format_version == m.format_version);
    CHECK(strcmp(back.source_layout, m.source_layout) == 0);
    CHECK(strcmp(back.source_path, m.source_path) == 0);
    CHECK(back.source_dtype == m.source_dtype);
    CHECK(strcmp(back.encoder.file, m.encoder.file) == 0);
    CHECK(back.encoder.dtype == m.encoder.dtype);
    CHECK(back.encoder.num_mel_bins == 128 && back.encoder.d_model == 1280);
    CHECK(back.encoder.layers == 32 && back.encoder.heads == 20 && back.encoder.head_dim == 64);
    CHECK(back.encoder.ffn_dim == 5120 && back.encoder.max_source_positions == 1500);
    CHECK(back.encoder.layer_norm_eps == 1e-5);
    CHECK(back.encoder.downsample_factor == 4 && back.encoder.projector_dim == 3072);
    CHECK(strcmp(back.embedding.file, m.embedding.file) == 0);
    CHECK(back.embedding.dtype == VOX_DTYPE_F32);
    CHECK(strcmp(back.decoder.file, m.decoder.file) == 0);
    CHECK(back.decoder.dtype == VOX_DTYPE_BF16);
    CHECK(back.decoder.vocab_size == 131072 && back.decoder.hidden == 3072);
    CHECK(back.decoder.layers == 30 && back.decoder.heads == 32 && back.decoder.kv_heads == 8);
    CHECK(back.decoder.head_dim == 128 && back.decoder.ffn_dim == 8192);
    CHECK(back.decoder.max_position_embeddings == 131072);
    CHECK(back.decoder.rope_theta == 1e8 && back.decoder.rms_norm_eps == 1e-5);
    CHECK(strcmp(back.tokenizer.file, "tekken.json") == 0);
    CHECK(back.tokenizer.bos == 1 && back.tokenizer.eos == 2 && back.tokenizer.inst == 3);
    CHECK(back.tokenizer.inst_end == 4 && back.tokenizer.audio == 24);
    CHECK(back.tokenizer.begin_audio == 25 && back.tokenizer.transcribe == 34);
    CHECK(back.sample_rate == 16000 && back.chunk_seconds == 30 && back.frame_rate == 12.5);
    CHECK(memcmp(&back, &m, sizeof m) == 0);

    /* Awkward doubles survive the text form exactly. */
    m.decoder.rms_norm_eps = 1.0 / 3.0;
    m.encoder.layer_norm_eps = 0.1;
    CHECK(vox_manifest_write(dir, &m, &err) == VOX_OK);
    CHECK(vox_manifest_read(dir, &back, &err) == VOX_OK);
    CHECK(back.decoder.rms_norm_eps == 1.0 / 3.0 && back.encoder.layer_norm_eps == 0.1);

    /* The write went through a temporary file that does not remain: the directory holds the
     * manifest alone. */
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        entries += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d) closedir(d);
    CHECK_MSG(entries == 1, "%d entries in %s", entries, dir);
}

static void test_malformed(void) {
    cJSON *j;

    remove(manifest_file());
    expect_error(VOX_ERR_IO, "no file", "cannot open", NULL);

    write_text("{\"format\": \"voxtral_runner\", ");
    expect_error(VOX_ERR_FORMAT, "truncated JSON", "invalid JSON", NULL);

    write_text("[1, 2]");
    expect_error(VOX_ERR_FORMAT, "not an object", "not a JSON object", NULL);

    /* A valid manifest with something after it (appended to, two files concatenated) is
     * refused, not read as its first object; trailing whitespace is fine. */
    {
        j = sample_json();
        char *text = cJSON_Print(j);
        cJSON_Delete(j);
        size_t len = strlen(text);
        char *more = malloc(len + 16);
        memcpy(more, text, len);
        strcpy(more + len, "garbage");
        write_text(more);
        expect_error(VOX_ERR_FORMAT, "trailing garbage", "data after the JSON value", NULL);
        strcpy(more + len, "{}");
        write_text(more);
        expect_error(VOX_ERR_FORMAT, "a second object", "data after the JSON value", NULL);
        strcpy(more + len, " \n\t\r\n");
        write_text(more);
        vox_manifest m;
        vox_error err = {0};
        CHECK_MSG(vox_manifest_read(dir, &m, &err) == VOX_OK, "trailing whitespace: %s", err.msg);
        free(more);
        free(text);
    }

    j = sample_json();
    set_string(j, NULL, "format", "whisper.cpp");
    write_json(j);
    expect_error(VOX_ERR_FORMAT, "other format", "voxtral_runner", NULL);

    j = sample_json();
    set_number(j, NULL, "format_version", VOX_FORMAT_VERSION + 1);
    cJSON_DeleteItemFromObject(j, "audio"); /* a newer version may lack fields: version first */
    write_json(j);
    expect_error(VOX_ERR_FORMAT, "newer version", "format_version",
                 "re-export the model with this version's voxtral_export");

    j = sample_json();
    cJSON_DeleteItemFromObject(section(j, "text_decoder"), "kv_heads");
    write_json(j);
    expect_error(VOX_ERR_FORMAT, "missing field", "text_decoder.kv_heads", "missing");

    j = sample_json();
    cJSON_DeleteItemFromObject(j, "audio");
    write_json(j);
    expect_error(VOX_ERR_FORMAT, "missing section", "audio", "missing");

    j = sample_json();
    set_string(j, "audio_encoder", "d_model", "1280");
    write_json(j);
    expect_error(VOX_ERR_FORMAT, "string for an integer", "audio_encoder.d_model", "integer");

    expect_number_error("text_decoder", "layers", 30.5,
                        "fractional integer", "text_decoder.layers", "integer");

    expect_number_error("text_decoder", "layers", 1e12,
                        "integer out of range", "text_decoder.layers", "integer");

    j = sample_json();
    set_string(j, "text_decoder", "rope_theta", "1e8");
    write_json(j);
    expect_error(VOX_ERR_FORMAT, "string for a number", "text_decoder.rope_theta", "number");

    j = sample_json();
    cJSON_ReplaceItemInObjectCaseSensitive(j, "tokenizer", cJSON_CreateArray());
    write_json(j);
    expect_error(VOX_ERR_FORMAT, "array for an object", "tokenizer", "object");

    expect_number_error("text_decoder", "ffn_dim", 0,
                        "zero size", "text_decoder.ffn_dim", "positive");

    expect_number_error("audio_encoder", "layer_norm_eps", -1e-5,
                        "negative eps", "audio_encoder.layer_norm_eps", "positive");

    expect_number_error("audio_encoder", "heads", 16,
                        "encoder heads * head_dim != d_model", "audio_encoder",
                        "heads (16) * head_dim (64)");

    expect_number_error("text_decoder", "kv_heads", 7,
                        "kv_heads does not divide heads", "kv_heads (7)",
                        "divide heads (32)");

    expect_number_error("text_decoder", "head_dim", 127,
                        "odd head_dim", "text_decoder.head_dim", "even");

    expect_number_error("audio_encoder", "projector_dim", 4096,
                        "projector width", "projector_dim", "text_decoder.hidden");

    expect_number_error("audio_encoder", "max_source_positions", 1501,
                        "positions not groupable", "max_source_positions",
                        "downsample_factor");

    /* shapes the fixed front end (128 mel bins, 3000 frames a chunk) cannot feed, and a context
     * too short for any input: refused at load, not an abort or a failure of every file */
    expect_number_error("audio_encoder", "num_mel_bins", 80,
                        "mel bins", "num_mel_bins is 80", "128-bin");

    expect_number_error("audio_encoder", "max_source_positions", 3000,
                        "encoder positions", "max_source_positions is 3000", "1500 positions");

    expect_number_error("text_decoder", "max_position_embeddings", 380,
                        "context too short", "max_position_embeddings is 380",
                        "need 381 positions");

    expect_number_error("audio", "sample_rate", 8000, "audio rate", "sample_rate 8000", "16000 Hz");

    expect_number_error("audio", "frame_rate", 25,
                        "audio token rate", "frame_rate 25", "12.5 audio tokens a second");

    /* a key twice in one object: cJSON would read the first, Python's json the last */
    j = sample_json();
    cJSON_AddNumberToObject(cJSON_GetObjectItem(j, "text_decoder"), "layers", 1);
    write_json(j);
    expect_error(VOX_ERR_FORMAT, "duplicate key", "the key \"layers\" appears twice", "voxtral.json");

    expect_number_error("tokenizer", "eos", 131072,
                        "token id outside the vocabulary", "tokenizer.eos", "vocab_size");

    j = sample_json();
    set_string(j, "token_embedding", "dtype", "F64");
    write_json(j);
    expect_error(VOX_ERR_FORMAT, "blob dtype", "token_embedding.dtype", "F32 or BF16");

    j = sample_json();
    set_string(j, "source", "dtype", "float");
    write_json(j);
    expect_error(VOX_ERR_FORMAT, "unknown dtype", "source.dtype", "unknown dtype");

    j = sample_json();
    set_string(j, "text_decoder", "file", "../elsewhere.safetensors");
    write_json(j);
    expect_error(VOX_ERR_FORMAT, "path in a file name", "text_decoder.file", "plain file name");
}

static void test_write_refuses_invalid(void) {
    vox_manifest m = sample_manifest();
    m.decoder.kv_heads = 5;
    remove(manifest_file());
    vox_error err = {0};
    CHECK(vox_manifest_write(dir, &m, &err) == VOX_ERR_INVALID_ARG);
    CHECK_MSG(strstr(err.msg, "kv_heads") && strstr(err.msg, "voxtral.json"), "%s", err.msg);
    CHECK(access(manifest_file(), F_OK) != 0);

    /* Into a directory that does not exist: an I/O error naming the file. */
    m = sample_manifest();
    CHECK(vox_manifest_write("/nonexistent-dir-for-test", &m, &err) == VOX_ERR_IO);
    CHECK_MSG(strstr(err.msg, "/nonexistent-dir-for-test/voxtral.json"), "%s", err.msg);
}

/* text_decoder.quantization: written for fp8_dynamic and read back; absent means none; a scheme
 * or field value this build does not run is refused, naming the field. */
static void test_quantization(void) {
    vox_manifest m = sample_manifest(), back;
    vox_error err = {0};
    m.decoder.quant = VOX_QUANT_FP8_DYNAMIC;
    CHECK(vox_manifest_write(dir, &m, &err) == VOX_OK);
    CHECK_MSG(vox_manifest_read(dir, &back, &err) == VOX_OK, "%s", err.msg);
    CHECK(back.decoder.quant == VOX_QUANT_FP8_DYNAMIC && memcmp(&back, &m, sizeof m) == 0);
    cJSON *j = sample_json();
    CHECK(cJSON_GetObjectItem(section(j, "text_decoder"), "quantization") == NULL);
    cJSON_Delete(j);

    m.decoder.quant = VOX_QUANT_FP8_DYNAMIC;
    const char *fields[][2] = {{"scheme", "fp8_static"}, {"products", "bf16"}};
    for (int i = 0; i < 2; i++) {
        j = manifest_json(&m);
        cJSON *q = cJSON_GetObjectItem(section(j, "text_decoder"), "quantization");
        cJSON_ReplaceItemInObjectCaseSensitive(q, fields[i][0], cJSON_CreateString(fields[i][1]));
        write_json(j);
        expect_error(VOX_ERR_FORMAT, fields[i][0], "text_decoder.quantization", fields[i][0]);
    }
    j = manifest_json(&m);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(section(j, "text_decoder"), "quantization"), "layers");
    write_json(j);
    expect_error(VOX_ERR_FORMAT, "no layers", "text_decoder.quantization.layers", "missing");
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/vox_manifest_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip();
    test_malformed();
    test_write_refuses_invalid();
    test_quantization();
    remove(manifest_file());
    rmdir(dir);
    return test_finish("test_format_manifest");
}
