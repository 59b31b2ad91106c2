/* voxtral_export's library on the tiny fixtures (tests/fixtures/tiny/checkpoint_hf and
 * checkpoint_mistral: the same random weights in both layouts, made by
 * scripts/make_reference.py):
 *   - both layouts export to the same tensors and the same manifest (but the source fields);
 *   - every exported tensor equals its transformers source tensor (the name mapping is written
 *     out again here, independently of src/export);
 *   - --dtype bf16: every value is the round-to-nearest-even of the F32 source;
 *   - broken checkpoints (missing / misshapen / mistyped tensor, no tekken.json, bad config)
 *     fail with a message naming the file, and write nothing. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dtype.h"
#include "export/export.h"
#include "format/manifest.h"
#include "format/safetensors.h"
#include "harness.h"

static char hf_dir[512], mistral_dir[512], tmp_root[64];

/* ---- small file helpers ---------------------------------------------------------------------- */

static char *tmp_path(const char *name) {
    static char bufs[8][640];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", tmp_root, name);
    return b;
}

static int exists(const char *dir, const char *name) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void write_file(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

static void copy_into(const char *src_dir, const char *name, const char *dst_dir) {
    char s[700], d[700];
    size_t n;
    snprintf(s, sizeof s, "%s/%s", src_dir, name);
    snprintf(d, sizeof d, "%s/%s", dst_dir, name);
    char *b = test_read_file(s, &n);
    if (!b) {
        fprintf(stderr, "cannot read %s\n", s);
        exit(1);
    }
    write_file(d, b, n);
    free(b);
}

/* Replaces the first occurrence of `from` by `to` in DIR/NAME. */
static void edit_file(const char *dir, const char *name, const char *from, const char *to) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    size_t n;
    char *b = test_read_file(p, &n);
    char *at = b ? strstr(b, from) : NULL;
    if (!at) {
        fprintf(stderr, "%s: no \"%s\" to edit\n", p, from);
        exit(1);
    }
    size_t fl = strlen(from), tl = strlen(to);
    char *o = malloc(n - fl + tl + 1);
    memcpy(o, b, (size_t)(at - b));
    memcpy(o + (at - b), to, tl);
    memcpy(o + (at - b) + tl, at + fl, n - (size_t)(at - b) - fl);
    write_file(p, o, n - fl + tl);
    free(b);
    free(o);
}

/* ---- the name mapping, stated independently of src/export ----------------------------------- */

typedef struct {
    const char *ours, *hf; /* %d: the layer */
    int blob;              /* 0 audio_encoder, 1 token_embedding, 2 text_decoder */
    int per_layer;
} name_map;

static const name_map names[] = {
    {"conv1.weight", "audio_tower.conv1.weight", 0, 0},
    {"conv1.bias", "audio_tower.conv1.bias", 0, 0},
    {"conv2.weight", "audio_tower.conv2.weight", 0, 0},
    {"conv2.bias", "audio_tower.conv2.bias", 0, 0},
    {"positions", "audio_tower.embed_positions.weight", 0, 0},
    {"layers.%d.attn_norm.weight", "audio_tower.layers.%d.self_attn_layer_norm.weight", 0, 1},
    {"layers.%d.attn_norm.bias", "audio_tower.layers.%d.self_attn_layer_norm.bias", 0, 1},
    {"layers.%d.attn.q.weight", "audio_tower.layers.%d.self_attn.q_proj.weight", 0, 1},
    {"layers.%d.attn.q.bias", "audio_tower.layers.%d.self_attn.q_proj.bias", 0, 1},
    {"layers.%d.attn.k.weight", "audio_tower.layers.%d.self_attn.k_proj.weight", 0, 1},
    {"layers.%d.attn.v.weight", "audio_tower.layers.%d.self_attn.v_proj.weight", 0, 1},
    {"layers.%d.attn.v.bias", "audio_tower.layers.%d.self_attn.v_proj.bias", 0, 1},
    {"layers.%d.attn.o.weight", "audio_tower.layers.%d.self_attn.out_proj.weight", 0, 1},
    {"layers.%d.attn.o.bias", "audio_tower.layers.%d.self_attn.out_proj.bias", 0, 1},
    {"layers.%d.ffn_norm.weight", "audio_tower.layers.%d.final_layer_norm.weight", 0, 1},
    {"layers.%d.ffn_norm.bias", "audio_tower.layers.%d.final_layer_norm.bias", 0, 1},
    {"layers.%d.fc1.weight", "audio_tower.layers.%d.fc1.weight", 0, 1},
    {"layers.%d.fc1.bias", "audio_tower.layers.%d.fc1.bias", 0, 1},
    {"layers.%d.fc2.weight", "audio_tower.layers.%d.fc2.weight", 0, 1},
    {"layers.%d.fc2.bias", "audio_tower.layers.%d.fc2.bias", 0, 1},
    {"norm.weight", "audio_tower.layer_norm.weight", 0, 0},
    {"norm.bias", "audio_tower.layer_norm.bias", 0, 0},
    {"projector.linear1.weight", "multi_modal_projector.linear_1.weight", 0, 0},
    {"projector.linear2.weight", "multi_modal_projector.linear_2.weight", 0, 0},
    {"embedding", "language_model.model.embed_tokens.weight", 1, 0},
    {"layers.%d.attn_norm.weight", "language_model.model.layers.%d.input_layernorm.weight", 2, 1},
    /* q, k and v are exported as one matrix, rows concatenated; so are gate and up */
    {"layers.%d.attn.qkv.weight", "language_model.model.layers.%d.self_attn.q_proj.weight", 2, 1},
    {"layers.%d.attn.qkv.weight", "language_model.model.layers.%d.self_attn.k_proj.weight", 2, 1},
    {"layers.%d.attn.qkv.weight", "language_model.model.layers.%d.self_attn.v_proj.weight", 2, 1},
    {"layers.%d.attn.o.weight", "language_model.model.layers.%d.self_attn.o_proj.weight", 2, 1},
    {"layers.%d.ffn_norm.weight",
     "language_model.model.layers.%d.post_attention_layernorm.weight", 2, 1},
    {"layers.%d.mlp.gate_up.weight", "language_model.model.layers.%d.mlp.gate_proj.weight", 2, 1},
    {"layers.%d.mlp.gate_up.weight", "language_model.model.layers.%d.mlp.up_proj.weight", 2, 1},
    {"layers.%d.mlp.down.weight", "language_model.model.layers.%d.mlp.down_proj.weight", 2, 1},
    {"norm.weight", "language_model.model.norm.weight", 2, 0},
    {"lm_head.weight", "language_model.lm_head.weight", 2, 0},
};
#define N_NAMES (sizeof names / sizeof names[0])

static const char *const blob_files[3] = {"audio_encoder.safetensors",
                                          "token_embedding.safetensors",
                                          "text_decoder.safetensors"};

typedef struct {
    vox_manifest m;
    vox_safetensors *blob[3];
} exported;

static int open_export(const char *dir, exported *x) {
    vox_error err = {0};
    if (vox_manifest_read(dir, &x->m, &err) != VOX_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 0;
    }
    for (int b = 0; b < 3; b++) {
        char p[700];
        snprintf(p, sizeof p, "%s/%s", dir, blob_files[b]);
        if (vox_st_open(p, &x->blob[b], &err) != VOX_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 0;
        }
    }
    return 1;
}

static void close_export(exported *x) {
    for (int b = 0; b < 3; b++) vox_st_close(x->blob[b]);
}

static int same_shape(const vox_st_tensor *a, const vox_st_tensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

static float f32_at(const vox_st_tensor *t, size_t i) {
    float f;
    memcpy(&f, (const char *)t->data + i * 4, 4);
    return f;
}

/* Two correct float32 evaluations of the sinusoidal table differ by about rows * FLT_EPSILON
 * (an ulp of exp(-inc j) becomes t ulps of the argument at row t): the Mistral export generates
 * the table, the transformers export copies torch's. */
static double positions_tolerance(int rows) { return 1e-5 + 4.0 * rows * FLT_EPSILON; }

static double max_abs_diff_f32(const vox_st_tensor *a, const vox_st_tensor *b) {
    double m = 0;
    for (size_t i = 0; i < a->n_elements; i++) {
        double d = fabs((double)f32_at(a, i) - f32_at(b, i));
        if (!(d <= m)) m = isnan(d) ? INFINITY : d;
    }
    return m;
}

/* Same manifest but the source fields; same tensors, bit for bit, but the positions. */
static void compare_exports(const char *dir_a, const char *dir_b, const char *what) {
    exported a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (!open_export(dir_a, &a) || !open_export(dir_b, &b)) {
        CHECK_MSG(0, "%s: cannot open the exports", what);
        return;
    }
    vox_manifest mb = b.m;
    memcpy(mb.source_layout, a.m.source_layout, sizeof mb.source_layout);
    memcpy(mb.source_path, a.m.source_path, sizeof mb.source_path);
    mb.source_dtype = a.m.source_dtype;
    CHECK_MSG(memcmp(&a.m, &mb, sizeof mb) == 0, "%s: manifests differ beyond source", what);

    for (int f = 0; f < 3; f++) {
        CHECK_MSG(vox_st_count(a.blob[f]) == vox_st_count(b.blob[f]), "%s: %s tensor counts",
                  what, blob_files[f]);
        for (size_t i = 0; i < vox_st_count(a.blob[f]); i++) {
            const vox_st_tensor *ta = vox_st_at(a.blob[f], i);
            const vox_st_tensor *tb = vox_st_find(b.blob[f], ta->name);
            if (!tb || tb->dtype != ta->dtype || !same_shape(ta, tb)) {
                CHECK_MSG(0, "%s: %s: %s missing or of another dtype/shape", what, blob_files[f],
                          ta->name);
                continue;
            }
            if (strcmp(ta->name, "positions") == 0) {
                double d = max_abs_diff_f32(ta, tb);
                CHECK_MSG(d <= positions_tolerance((int)ta->shape[0]),
                          "%s: positions differ by %g (is the transformers fixture's "
                          "embed_positions the sinusoidal table?)", what, d);
            } else {
                CHECK_MSG(memcmp(ta->data, tb->data, ta->nbytes) == 0, "%s: %s: %s differs",
                          what, blob_files[f], ta->name);
            }
        }
    }
    close_export(&a);
    close_export(&b);
}

/* Independent round-to-nearest-even to bf16: the two neighbours by truncation, the nearer,
 * ties to the even one. */
static uint16_t bf16_rne(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
    uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
    float flo, fhi;
    memcpy(&flo, &lo, 4);
    memcpy(&fhi, &hi, 4);
    double dlo = fabs((double)f - flo), dhi = fabs((double)fhi - f);
    if (isinf(fhi) && !isinf(f)) dhi = fabs((double)f - flo) + 1; /* overflow: only by rounding */
    if (dlo < dhi || (dlo == dhi && ((lo >> 16) & 1) == 0)) return (uint16_t)(lo >> 16);
    return (uint16_t)(hi >> 16);
}

/* Every exported tensor against its transformers source: bit-identical (F32 export), or each
 * value the RNE of the source (BF16 export; the positions stay F32 and identical). */
static void compare_with_source(const char *export_dir, int bf16) {
    exported x;
    memset(&x, 0, sizeof x);
    char p[700];
    snprintf(p, sizeof p, "%s/model.safetensors", hf_dir);
    vox_safetensors *src = NULL;
    vox_error err = {0};
    if (!open_export(export_dir, &x) || vox_st_open(p, &src, &err) != VOX_OK) {
        CHECK_MSG(0, "cannot open %s or %s: %s", export_dir, p, err.msg);
        return;
    }
    CHECK(x.m.source_dtype == VOX_DTYPE_F32);
    vox_dtype want = bf16 ? VOX_DTYPE_BF16 : VOX_DTYPE_F32;
    CHECK(x.m.encoder.dtype == want && x.m.embedding.dtype == want && x.m.decoder.dtype == want);

    size_t expected[3] = {0, 0, 0};
    for (size_t k = 0; k < N_NAMES; k++) {
        int layers = !names[k].per_layer ? 1
                     : names[k].blob == 0 ? x.m.encoder.layers
                                          : x.m.decoder.layers;
        /* A part of a fused matrix: the entries before it with the same name come first. */
        size_t first = k;
        while (first > 0 && strcmp(names[first - 1].ours, names[k].ours) == 0) first--;
        for (int l = 0; l < layers; l++) {
            char ours[128], theirs[160];
            snprintf(ours, sizeof ours, names[k].ours, l);
            snprintf(theirs, sizeof theirs, names[k].hf, l);
            if (first == k) expected[names[k].blob]++;
            const vox_st_tensor *t = vox_st_find(x.blob[names[k].blob], ours);
            const vox_st_tensor *s = vox_st_find(src, theirs);
            if (!t || !s) {
                CHECK_MSG(0, "%s: %s or source %s missing", export_dir, ours, theirs);
                continue;
            }
            /* the rows of this part inside the exported tensor */
            size_t row0 = 0;
            for (size_t j = first; j < k; j++) {
                char prev[160];
                snprintf(prev, sizeof prev, names[j].hf, l);
                const vox_st_tensor *p = vox_st_find(src, prev);
                row0 += p ? (size_t)p->shape[0] : 0;
            }
            size_t t_row_bytes = t->ndim > 1 ? t->nbytes / (size_t)t->shape[0] : t->nbytes;
            vox_st_tensor part = *t;
            if (first != k || strcmp(names[k + 1 < N_NAMES ? k + 1 : k].ours, names[k].ours) == 0) {
                part.shape[0] = s->shape[0];
                part.n_elements = s->n_elements;
                part.nbytes = (size_t)s->shape[0] * t_row_bytes;
                part.data = (const char *)t->data + row0 * t_row_bytes;
                CHECK_MSG(row0 + (size_t)s->shape[0] <= (size_t)t->shape[0],
                          "%s: %s too short for %s", export_dir, ours, theirs);
            }
            t = &part;
            CHECK_MSG(same_shape(t, s), "%s: %s has another shape than %s", export_dir, ours,
                      theirs);
            CHECK(s->dtype == VOX_DTYPE_F32);
            int is_pos = strcmp(ours, "positions") == 0;
            if (!bf16 || is_pos) {
                CHECK_MSG(t->dtype == VOX_DTYPE_F32, "%s: %s not F32", export_dir, ours);
                CHECK_MSG(t->nbytes == s->nbytes && memcmp(t->data, s->data, s->nbytes) == 0,
                          "%s: %s differs from the source %s", export_dir, ours, theirs);
                continue;
            }
            CHECK_MSG(t->dtype == VOX_DTYPE_BF16, "%s: %s not BF16", export_dir, ours);
            size_t bad = 0;
            for (size_t i = 0; i < s->n_elements && t->dtype == VOX_DTYPE_BF16; i++) {
                uint16_t got;
                memcpy(&got, (const char *)t->data + 2 * i, 2);
                bad += got != bf16_rne(f32_at(s, i));
            }
            CHECK_MSG(bad == 0, "%s: %s: %zu values are not the RNE of the source", export_dir,
                      ours, bad);
        }
    }
    for (int b = 0; b < 3; b++)
        CHECK_MSG(vox_st_count(x.blob[b]) == expected[b], "%s: %s has %zu tensors, want %zu",
                  export_dir, blob_files[b], vox_st_count(x.blob[b]), expected[b]);
    vox_st_close(src);
    close_export(&x);
}

/* ---- exports of the fixtures ----------------------------------------------------------------- */

static int export_ok(const char *from, const char *out, vox_export_dtype dtype,
                     vox_export_result *res) {
    vox_export_params p = vox_export_default_params();
    p.dtype = dtype;
    vox_error err = {0};
    vox_status st = vox_export(from, out, &p, res, &err);
    CHECK_MSG(st == VOX_OK, "export %s -> %s: %s", from, out, err.msg);
    return st == VOX_OK;
}

static void test_layouts_agree(void) {
    vox_export_result r;
    if (!export_ok(hf_dir, tmp_path("hf_f32"), VOX_EXPORT_KEEP, &r)) return;
    CHECK_MSG(r.n_warnings == 0, "warning: %s", r.warnings[0]);
    CHECK(strcmp(r.manifest.source_layout, "transformers") == 0);
    CHECK(exists(tmp_path("hf_f32"), "tekken.json") && exists(tmp_path("hf_f32"), "voxtral.json"));
    if (!export_ok(mistral_dir, tmp_path("mistral_f32"), VOX_EXPORT_KEEP, &r)) return;
    CHECK(strcmp(r.manifest.source_layout, "mistral") == 0);
    CHECK(r.n_warnings == 0);

    compare_exports(tmp_path("hf_f32"), tmp_path("mistral_f32"), "F32 exports of both layouts");
    compare_with_source(tmp_path("hf_f32"), 0);

    /* The copied tokenizer is byte for byte the checkpoint's. */
    char a[700];
    size_t na, nb;
    snprintf(a, sizeof a, "%s/tekken.json", hf_dir);
    char *ta = test_read_file(a, &na), *tb = test_read_file(tmp_path("hf_f32/tekken.json"), &nb);
    CHECK(ta && tb && na == nb && memcmp(ta, tb, na) == 0);
    free(ta);
    free(tb);
}

static void test_bf16(void) {
    if (!export_ok(hf_dir, tmp_path("hf_bf16"), VOX_EXPORT_BF16, NULL)) return;
    compare_with_source(tmp_path("hf_bf16"), 1);
    if (!export_ok(mistral_dir, tmp_path("mistral_bf16"), VOX_EXPORT_BF16, NULL)) return;
    compare_exports(tmp_path("hf_bf16"), tmp_path("mistral_bf16"), "BF16 exports of both layouts");

    /* An existing export is overwritten in place: bf16 over the f32 one, then back. */
    if (!export_ok(hf_dir, tmp_path("hf_f32"), VOX_EXPORT_BF16, NULL)) return;
    compare_exports(tmp_path("hf_bf16"), tmp_path("hf_f32"), "BF16 over an F32 export");
    export_ok(hf_dir, tmp_path("hf_f32"), VOX_EXPORT_F32, NULL);
    compare_with_source(tmp_path("hf_f32"), 0);
}

/* ---- broken checkpoints ---------------------------------------------------------------------- */

typedef struct {
    const char *drop;      /* tensor left out */
    const char *misshape;  /* tensor written with one row (element) fewer */
    const char *retype;    /* tensor written as I32 (same bytes) */
    int no_tekken;
    int v5_names; /* the text model under language_model.model.model., as transformers 5 saves */
    int sharded;  /* two shards and model.safetensors.index.json instead of model.safetensors */
    int bent_positions; /* embed_positions no longer the sinusoidal table */
    int bf16_positions; /* embed_positions stored in bf16 (rounded), as a bf16 release has it */
} variant;

static void save_or_die(vox_st_writer *w, const char *path) {
    vox_error err = {0};
    if (vox_st_writer_save(w, path, &err) != VOX_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    vox_st_writer_free(w);
}

/* A copy of the transformers fixture in DIR, with model.safetensors rewritten per v. */
static void make_variant(const char *dir, variant v) {
    mkdir(dir, 0777);
    copy_into(hf_dir, "config.json", dir);
    if (!v.no_tekken) copy_into(hf_dir, "tekken.json", dir);
    char p[700];
    snprintf(p, sizeof p, "%s/model.safetensors", hf_dir);
    vox_safetensors *src = NULL;
    vox_error err = {0};
    if (vox_st_open(p, &src, &err) != VOX_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    vox_st_writer *w[2] = {vox_st_writer_new(), vox_st_writer_new()};
    static const char *const shards[2] = {"model-00001-of-00002.safetensors",
                                          "model-00002-of-00002.safetensors"};
    static char names_buf[256][128];
    size_t index_len = 0;
    static char index[1 << 16];
    index_len += snprintf(index, sizeof index, "{\"metadata\": {}, \"weight_map\": {");
    for (size_t i = 0; i < vox_st_count(src); i++) {
        const vox_st_tensor *t = vox_st_at(src, i);
        if (v.drop && strcmp(t->name, v.drop) == 0) continue;
        int64_t shape[VOX_ST_MAX_DIMS];
        memcpy(shape, t->shape, sizeof shape);
        vox_dtype dtype = t->dtype;
        if (v.misshape && strcmp(t->name, v.misshape) == 0) shape[0]--;
        if (v.retype && strcmp(t->name, v.retype) == 0) dtype = VOX_DTYPE_I32;
        const char *name = t->name, *lm = "language_model.model.";
        if (v.v5_names && strncmp(name, lm, strlen(lm)) == 0) {
            snprintf(names_buf[i], sizeof names_buf[i], "language_model.model.model.%s",
                     name + strlen(lm));
            name = names_buf[i];
        }
        const void *data = t->data;
        static float *bent;
        if (v.bent_positions && strcmp(name, "audio_tower.embed_positions.weight") == 0) {
            free(bent);
            bent = malloc(t->nbytes);
            memcpy(bent, t->data, t->nbytes);
            bent[3 * t->shape[1] + 5] += 0.01f;
            data = bent;
        }
        static uint16_t *rounded;
        if (v.bf16_positions && strcmp(name, "audio_tower.embed_positions.weight") == 0) {
            free(rounded);
            rounded = malloc(t->n_elements * sizeof *rounded);
            for (size_t k = 0; k < t->n_elements; k++)
                rounded[k] = vox_f32_to_bf16(((const float *)data)[k]);
            data = rounded;
            dtype = VOX_DTYPE_BF16;
            shape[0] = t->shape[0]; /* the same table, two bytes an element */
        }
        int shard = v.sharded ? (int)(i % 2) : 0;
        vox_st_writer_add(w[shard], name, dtype, t->ndim, shape, data, &err);
        index_len += snprintf(index + index_len, sizeof index - index_len, "%s\"%s\": \"%s\"",
                              index_len > 40 ? ", " : "", name, shards[shard]);
    }
    if (v.sharded) {
        for (int k = 0; k < 2; k++) {
            snprintf(p, sizeof p, "%s/%s", dir, shards[k]);
            save_or_die(w[k], p);
        }
        index_len += snprintf(index + index_len, sizeof index - index_len, "}}");
        snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
        write_file(p, index, index_len);
    } else {
        snprintf(p, sizeof p, "%s/model.safetensors", dir);
        save_or_die(w[0], p);
        vox_st_writer_free(w[1]);
    }
    vox_st_close(src);
}

/* The other spellings of the transformers layout export the same model. */
static void test_hf_variants(void) {
    make_variant(tmp_path("v5_names"), (variant){.v5_names = 1});
    if (export_ok(tmp_path("v5_names"), tmp_path("v5_names.out"), VOX_EXPORT_KEEP, NULL))
        compare_exports(tmp_path("hf_f32"), tmp_path("v5_names.out"), "transformers 5 names");
    make_variant(tmp_path("sharded"), (variant){.sharded = 1, .v5_names = 1});
    if (export_ok(tmp_path("sharded"), tmp_path("sharded.out"), VOX_EXPORT_KEEP, NULL))
        compare_exports(tmp_path("hf_f32"), tmp_path("sharded.out"), "sharded checkpoint");

    /* Positions that are not the sinusoidal table: exported as stored, with a warning. */
    make_variant(tmp_path("bent"), (variant){.bent_positions = 1});
    vox_export_result r;
    if (export_ok(tmp_path("bent"), tmp_path("bent.out"), VOX_EXPORT_KEEP, &r)) {
        CHECK_MSG(r.n_warnings == 1 && strstr(r.warnings[0], "bent/model.safetensors: "
                                              "audio_tower.embed_positions.weight is not the "
                                              "sinusoidal table (differs by up to 0.01 at row 3, "
                                              "column 5)"),
                  "%d warnings: %s", r.n_warnings, r.n_warnings ? r.warnings[0] : "");
        exported x, y;
        memset(&x, 0, sizeof x);
        memset(&y, 0, sizeof y);
        if (open_export(tmp_path("bent.out"), &x) && open_export(tmp_path("hf_f32"), &y)) {
            const vox_st_tensor *t = vox_st_find(x.blob[0], "positions");
            const vox_st_tensor *u = vox_st_find(y.blob[0], "positions");
            size_t at = 3 * (size_t)u->shape[1] + 5;
            CHECK(t && f32_at(t, at) == f32_at(u, at) + 0.01f);
            close_export(&x);
            close_export(&y);
        }
    }

    /* The table stored in bf16 (every tensor of a bf16 release): no warning; bent as well: the
     * warning, as in f32 */
    make_variant(tmp_path("bf16_table"), (variant){.bf16_positions = 1});
    if (export_ok(tmp_path("bf16_table"), tmp_path("bf16_table.out"), VOX_EXPORT_KEEP, &r))
        CHECK_MSG(r.n_warnings == 0, "bf16 table: %d warnings: %s", r.n_warnings,
                  r.n_warnings ? r.warnings[0] : "");
    make_variant(tmp_path("bf16_bent"), (variant){.bf16_positions = 1, .bent_positions = 1});
    if (export_ok(tmp_path("bf16_bent"), tmp_path("bf16_bent.out"), VOX_EXPORT_KEEP, &r))
        CHECK_MSG(r.n_warnings == 1 && strstr(r.warnings[0], "is not the sinusoidal table"),
                  "bf16 bent table: %d warnings: %s", r.n_warnings, r.n_warnings ? r.warnings[0] : "");

    /* A tensor the index does not list: the index is named. */
    make_variant(tmp_path("sharded_missing"),
                 (variant){.sharded = 1, .drop = "audio_tower.conv2.bias"});
    vox_error err = {0};
    CHECK(vox_export(tmp_path("sharded_missing"), tmp_path("sharded_missing.out"), NULL, NULL,
                     &err) == VOX_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "model.safetensors.index.json: missing tensor audio_tower.conv2.bias"),
              "%s", err.msg);
}

/* Exports FROM into a fresh directory and checks it fails with `code`, a message containing
 * the fragments, and nothing written (the output directory not even created). */
static void expect_failure(const char *what, const char *from, vox_status code,
                           const char *frag1, const char *frag2) {
    char out[700];
    snprintf(out, sizeof out, "%s.out", from);
    vox_error err = {0};
    vox_status st = vox_export(from, out, NULL, NULL, &err);
    CHECK_MSG(st == code, "%s: status %d (%s), want %d", what, (int)st, err.msg, (int)code);
    CHECK_MSG(!frag1 || strstr(err.msg, frag1), "%s: message lacks \"%s\": %s", what, frag1,
              err.msg);
    CHECK_MSG(!frag2 || strstr(err.msg, frag2), "%s: message lacks \"%s\": %s", what, frag2,
              err.msg);
    CHECK_MSG(access(out, F_OK) != 0, "%s: %s was created", what, out);
}

static void test_broken(void) {
    const char *up = "language_model.model.layers.1.mlp.up_proj.weight";
    make_variant(tmp_path("missing_tensor"), (variant){.drop = up});
    expect_failure("missing tensor", tmp_path("missing_tensor"), VOX_ERR_FORMAT,
                   "missing_tensor/model.safetensors: missing tensor", up);

    const char *fc1 = "audio_tower.layers.0.fc1.weight";
    make_variant(tmp_path("wrong_shape"), (variant){.misshape = fc1});
    expect_failure("wrong shape", tmp_path("wrong_shape"), VOX_ERR_FORMAT,
                   "wrong_shape/model.safetensors: tensor audio_tower.layers.0.fc1.weight has "
                   "shape [255, 64]", "config.json implies [256, 64]");

    make_variant(tmp_path("wrong_dtype"), (variant){.retype = "language_model.lm_head.weight"});
    expect_failure("wrong dtype", tmp_path("wrong_dtype"), VOX_ERR_FORMAT,
                   "language_model.lm_head.weight has dtype I32", "F32, BF16 or F16");

    make_variant(tmp_path("no_tekken"), (variant){.no_tekken = 1});
    expect_failure("missing tekken.json", tmp_path("no_tekken"), VOX_ERR_IO,
                   "no_tekken/tekken.json", "cannot open");

    make_variant(tmp_path("bad_json"), (variant){0});
    write_file(tmp_path("bad_json/config.json"), "{\"model_type\": \"voxtral\",", 25);
    expect_failure("truncated config.json", tmp_path("bad_json"), VOX_ERR_FORMAT,
                   "bad_json/config.json", "invalid JSON");

    make_variant(tmp_path("bad_type"), (variant){0});
    edit_file(tmp_path("bad_type"), "config.json", "\"num_mel_bins\": 128", "\"num_mel_bins\": \"128\"");
    expect_failure("string for a size", tmp_path("bad_type"), VOX_ERR_FORMAT,
                   "bad_type/config.json", "audio_config.num_mel_bins: must be an integer");

    make_variant(tmp_path("bad_heads"), (variant){0});
    edit_file(tmp_path("bad_heads"), "config.json", "\"num_key_value_heads\": 2",
              "\"num_key_value_heads\": 3");
    expect_failure("kv heads not dividing heads", tmp_path("bad_heads"), VOX_ERR_FORMAT,
                   "bad_heads/config.json", "kv_heads (3) must divide heads (4)");

    make_variant(tmp_path("bad_tekken"), (variant){0});
    edit_file(tmp_path("bad_tekken"), "tekken.json", "\"[TRANSCRIBE]\"", "\"[TRANSCRIBED]\"");
    expect_failure("tekken.json without [TRANSCRIBE]", tmp_path("bad_tekken"), VOX_ERR_FORMAT,
                   "bad_tekken/tekken.json", "no [TRANSCRIBE] token");

    mkdir(tmp_path("empty"), 0777);
    expect_failure("neither layout", tmp_path("empty"), VOX_ERR_FORMAT, "empty",
                   "neither config.json");
    expect_failure("no directory", tmp_path("does_not_exist"), VOX_ERR_IO, "does_not_exist",
                   "cannot open checkpoint directory");

    /* Mistral layout: a params.json without the decoder width. */
    const char *mi = tmp_path("bad_params");
    mkdir(mi, 0777);
    copy_into(mistral_dir, "params.json", mi);
    copy_into(mistral_dir, "tekken.json", mi);
    copy_into(mistral_dir, "consolidated.safetensors", mi);
    edit_file(mi, "params.json", "\"dim\": 128", "\"dimension\": 128");
    expect_failure("params.json without dim", mi, VOX_ERR_FORMAT, "bad_params/params.json",
                   "dim: missing");

    /* A broken checkpoint exported over a complete model leaves that model as it was. */
    vox_error err = {0};
    CHECK(vox_export(tmp_path("missing_tensor"), tmp_path("hf_bf16"), NULL, NULL, &err) ==
          VOX_ERR_FORMAT);
    vox_manifest m;
    CHECK_MSG(vox_manifest_read(tmp_path("hf_bf16"), &m, &err) == VOX_OK, "%s", err.msg);
}

/* ---- an export that stops or fails part way leaves nothing of itself ------------------------- */

/* The entries of dir (hidden ones too), sorted into one string with their sizes: a directory's
 * state, to compare before and after. */
static void dir_state(const char *dir, char *out, size_t n) {
    out[0] = 0;
    struct dirent **list = NULL;
    int k = scandir(dir, &list, NULL, alphasort);
    for (int i = 0; i < k; i++) {
        char path[1200];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
        if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, "..") && stat(path, &sb) == 0) {
            size_t len = strlen(out);
            snprintf(out + len, n - len, "%s:%lld ", list[i]->d_name, (long long)sb.st_size);
        }
        free(list[i]);
    }
    free(list);
    if (k < 0) snprintf(out, n, "(none)");
}

typedef struct {
    int calls, stop_after;
} stop_counter;

static bool stop_after_calls(void *user) {
    stop_counter *c = user;
    return ++c->calls > c->stop_after;
}

static void test_stopped_and_failed(void) {
    const char *existing = tmp_path("kept");
    CHECK(export_ok(hf_dir, existing, VOX_EXPORT_KEEP, NULL));
    char before[4096], after[4096];
    dir_state(existing, before, sizeof before);
    /* stopped at the first check, part way through a blob, and at the last one before moving the
     * files into place: a new directory is not created, an existing model is as it was */
    const int stops[] = {0, 1, 7, 40, 1000};
    int interrupted = 0;
    for (size_t i = 0; i < sizeof stops / sizeof *stops; i++) {
        const char *outs[2] = {tmp_path("stopped_new"), existing};
        for (int o = 0; o < 2; o++) {
            stop_counter c = {0, stops[i]};
            vox_export_params p = vox_export_default_params();
            p.stop = stop_after_calls;
            p.user = &c;
            vox_error err = {0};
            vox_status st = vox_export(hf_dir, outs[o], &p, NULL, &err);
            if (st == VOX_OK) { /* asked fewer times than stop_after: a complete export */
                CHECK_MSG(c.calls <= stops[i], "stop after %d: exported after %d calls", stops[i], c.calls);
                continue;
            }
            interrupted++;
            CHECK_MSG(st == VOX_ERR_INTERRUPTED, "stop after %d: status %d: %s", stops[i], (int)st, err.msg);
            if (o == 0)
                CHECK_MSG(access(outs[0], F_OK) != 0, "stop after %d: %s was created", stops[i], outs[0]);
            dir_state(existing, after, sizeof after);
            CHECK_MSG(strcmp(before, after) == 0, "stop after %d: %s went from '%s' to '%s'",
                      stops[i], existing, before, after);
        }
    }
    CHECK_MSG(interrupted >= 6, "only %d of the exports were stopped", interrupted);

    /* a write that fails part way (a full disk: RLIMIT_FSIZE makes write() fail with EFBIG past
     * 64 KiB, smaller than the text decoder's blob): the same */
    struct rlimit old_limit, limit;
    getrlimit(RLIMIT_FSIZE, &old_limit);
    limit = old_limit;
    limit.rlim_cur = 65536;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &limit) == 0) {
        vox_error err = {0};
        vox_status st_new = vox_export(hf_dir, tmp_path("full_new"), NULL, NULL, &err);
        vox_status st_old = vox_export(hf_dir, existing, NULL, NULL, &err);
        setrlimit(RLIMIT_FSIZE, &old_limit);
        CHECK_MSG(st_new == VOX_ERR_IO && st_old == VOX_ERR_IO && strstr(err.msg, "cannot write"),
                  "full disk: %d %d: %s", (int)st_new, (int)st_old, err.msg);
        CHECK(access(tmp_path("full_new"), F_OK) != 0);
        dir_state(existing, after, sizeof after);
        CHECK_MSG(strcmp(before, after) == 0, "full disk: %s went from '%s' to '%s'", existing,
                  before, after);
    }
    signal(SIGXFSZ, old_handler);
}

int main(void) {
    snprintf(hf_dir, sizeof hf_dir, "%s/tiny/checkpoint_hf", VOX_FIXTURES);
    snprintf(mistral_dir, sizeof mistral_dir, "%s/tiny/checkpoint_mistral", VOX_FIXTURES);
    if (access(hf_dir, F_OK) != 0 || access(mistral_dir, F_OK) != 0)
        TEST_SKIP("no tiny checkpoints in %s/tiny (scripts/make_reference.py makes "
                  "checkpoint_hf and checkpoint_mistral)", VOX_FIXTURES);

    snprintf(tmp_root, sizeof tmp_root, "/tmp/vox_export_XXXXXX");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_layouts_agree();
    test_bf16();
    test_broken();
    test_hf_variants();
    test_stopped_and_failed();
    int rc = test_finish("test_export");
    if (rc == 0) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_root);
    } else {
        fprintf(stderr, "outputs kept in %s\n", tmp_root);
    }
    return rc;
}
