/* The conversion: from an opened checkpoint (checkpoint.h) to the exported model directory.
 *
 * 1. plan: one entry per output tensor (our name, its source tensor, the shape the manifest's
 *    numbers imply, the output dtype, whether q/k rows are permuted), every source checked for
 *    presence, dtype and shape before anything is written;
 * 2. write: each blob through vox_st_writer, tensors taken straight from the source mapping
 *    unless they change; then tekken.json, then voxtral.json. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "export/export.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_out.h"
#include "common/fp8.h"
#include "export/checkpoint.h"
#include "format/safetensors.h"

/* ---- our tensors ----------------------------------------------------------------------------- */

static const struct {
    vox_blob blob;
    int per_layer;
    const char *name; /* %d: the layer */
} ours[VOX_T_COUNT] = {
    [VOX_T_CONV1_W] = {VOX_BLOB_ENCODER, 0, "conv1.weight"},
    [VOX_T_CONV1_B] = {VOX_BLOB_ENCODER, 0, "conv1.bias"},
    [VOX_T_CONV2_W] = {VOX_BLOB_ENCODER, 0, "conv2.weight"},
    [VOX_T_CONV2_B] = {VOX_BLOB_ENCODER, 0, "conv2.bias"},
    [VOX_T_POSITIONS] = {VOX_BLOB_ENCODER, 0, "positions"},
    [VOX_T_ENC_ATTN_NORM_W] = {VOX_BLOB_ENCODER, 1, "layers.%d.attn_norm.weight"},
    [VOX_T_ENC_ATTN_NORM_B] = {VOX_BLOB_ENCODER, 1, "layers.%d.attn_norm.bias"},
    [VOX_T_ENC_Q_W] = {VOX_BLOB_ENCODER, 1, "layers.%d.attn.q.weight"},
    [VOX_T_ENC_Q_B] = {VOX_BLOB_ENCODER, 1, "layers.%d.attn.q.bias"},
    [VOX_T_ENC_K_W] = {VOX_BLOB_ENCODER, 1, "layers.%d.attn.k.weight"},
    [VOX_T_ENC_V_W] = {VOX_BLOB_ENCODER, 1, "layers.%d.attn.v.weight"},
    [VOX_T_ENC_V_B] = {VOX_BLOB_ENCODER, 1, "layers.%d.attn.v.bias"},
    [VOX_T_ENC_O_W] = {VOX_BLOB_ENCODER, 1, "layers.%d.attn.o.weight"},
    [VOX_T_ENC_O_B] = {VOX_BLOB_ENCODER, 1, "layers.%d.attn.o.bias"},
    [VOX_T_ENC_FFN_NORM_W] = {VOX_BLOB_ENCODER, 1, "layers.%d.ffn_norm.weight"},
    [VOX_T_ENC_FFN_NORM_B] = {VOX_BLOB_ENCODER, 1, "layers.%d.ffn_norm.bias"},
    [VOX_T_ENC_FC1_W] = {VOX_BLOB_ENCODER, 1, "layers.%d.fc1.weight"},
    [VOX_T_ENC_FC1_B] = {VOX_BLOB_ENCODER, 1, "layers.%d.fc1.bias"},
    [VOX_T_ENC_FC2_W] = {VOX_BLOB_ENCODER, 1, "layers.%d.fc2.weight"},
    [VOX_T_ENC_FC2_B] = {VOX_BLOB_ENCODER, 1, "layers.%d.fc2.bias"},
    [VOX_T_ENC_NORM_W] = {VOX_BLOB_ENCODER, 0, "norm.weight"},
    [VOX_T_ENC_NORM_B] = {VOX_BLOB_ENCODER, 0, "norm.bias"},
    [VOX_T_PROJ1_W] = {VOX_BLOB_ENCODER, 0, "projector.linear1.weight"},
    [VOX_T_PROJ2_W] = {VOX_BLOB_ENCODER, 0, "projector.linear2.weight"},
    [VOX_T_EMBEDDING] = {VOX_BLOB_EMBEDDING, 0, "embedding"},
    [VOX_T_DEC_ATTN_NORM_W] = {VOX_BLOB_DECODER, 1, "layers.%d.attn_norm.weight"},
    [VOX_T_DEC_Q_W] = {VOX_BLOB_DECODER, 1, "layers.%d.attn.q.weight"},
    [VOX_T_DEC_K_W] = {VOX_BLOB_DECODER, 1, "layers.%d.attn.k.weight"},
    [VOX_T_DEC_V_W] = {VOX_BLOB_DECODER, 1, "layers.%d.attn.v.weight"},
    [VOX_T_DEC_O_W] = {VOX_BLOB_DECODER, 1, "layers.%d.attn.o.weight"},
    [VOX_T_DEC_FFN_NORM_W] = {VOX_BLOB_DECODER, 1, "layers.%d.ffn_norm.weight"},
    [VOX_T_DEC_GATE_W] = {VOX_BLOB_DECODER, 1, "layers.%d.mlp.gate.weight"},
    [VOX_T_DEC_UP_W] = {VOX_BLOB_DECODER, 1, "layers.%d.mlp.up.weight"},
    [VOX_T_DEC_DOWN_W] = {VOX_BLOB_DECODER, 1, "layers.%d.mlp.down.weight"},
    [VOX_T_DEC_NORM_W] = {VOX_BLOB_DECODER, 0, "norm.weight"},
    [VOX_T_LM_HEAD] = {VOX_BLOB_DECODER, 0, "lm_head.weight"},
};

static const char *const blob_files[VOX_BLOB_COUNT] = {
    "audio_encoder.safetensors", "token_embedding.safetensors", "text_decoder.safetensors"};

/* The shape of a kind under the manifest's numbers (manifest.h); returns ndim. */
static int expected_shape(vox_tensor_kind k, const vox_manifest *hp, int64_t *s) {
    const vox_encoder_config *e = &hp->encoder;
    const vox_decoder_config *d = &hp->decoder;
    const int64_t D = e->d_model, H = d->hidden, Q = (int64_t)d->heads * d->head_dim,
                  KV = (int64_t)d->kv_heads * d->head_dim;
#define SHAPE1(a) return (s[0] = (a), 1)
#define SHAPE2(a, b) return (s[0] = (a), s[1] = (b), 2)
#define SHAPE3(a, b, c) return (s[0] = (a), s[1] = (b), s[2] = (c), 3)
    switch (k) {
    case VOX_T_CONV1_W: SHAPE3(D, e->num_mel_bins, 3);
    case VOX_T_CONV2_W: SHAPE3(D, D, 3);
    case VOX_T_POSITIONS: SHAPE2(e->max_source_positions, D);
    case VOX_T_ENC_Q_W:
    case VOX_T_ENC_K_W:
    case VOX_T_ENC_V_W:
    case VOX_T_ENC_O_W: SHAPE2(D, D);
    case VOX_T_ENC_FC1_W: SHAPE2(e->ffn_dim, D);
    case VOX_T_ENC_FC1_B: SHAPE1(e->ffn_dim);
    case VOX_T_ENC_FC2_W: SHAPE2(D, e->ffn_dim);
    case VOX_T_CONV1_B:
    case VOX_T_CONV2_B:
    case VOX_T_ENC_ATTN_NORM_W:
    case VOX_T_ENC_ATTN_NORM_B:
    case VOX_T_ENC_Q_B:
    case VOX_T_ENC_V_B:
    case VOX_T_ENC_O_B:
    case VOX_T_ENC_FFN_NORM_W:
    case VOX_T_ENC_FFN_NORM_B:
    case VOX_T_ENC_FC2_B:
    case VOX_T_ENC_NORM_W:
    case VOX_T_ENC_NORM_B: SHAPE1(D);
    case VOX_T_PROJ1_W: SHAPE2(e->projector_dim, D * e->downsample_factor);
    case VOX_T_PROJ2_W: SHAPE2(e->projector_dim, e->projector_dim);
    case VOX_T_EMBEDDING: SHAPE2(d->vocab_size, H);
    case VOX_T_DEC_ATTN_NORM_W:
    case VOX_T_DEC_FFN_NORM_W:
    case VOX_T_DEC_NORM_W: SHAPE1(H);
    case VOX_T_DEC_Q_W: SHAPE2(Q, H);
    case VOX_T_DEC_K_W:
    case VOX_T_DEC_V_W: SHAPE2(KV, H);
    case VOX_T_DEC_O_W: SHAPE2(H, Q);
    case VOX_T_DEC_GATE_W:
    case VOX_T_DEC_UP_W: SHAPE2(d->ffn_dim, H);
    case VOX_T_DEC_DOWN_W: SHAPE2(H, d->ffn_dim);
    case VOX_T_LM_HEAD: SHAPE2(d->vocab_size, H);
    case VOX_T_COUNT: break;
    }
#undef SHAPE1
#undef SHAPE2
#undef SHAPE3
    VOX_ASSERT(!"unknown tensor kind");
    return 0;
}

/* ---- the positions table --------------------------------------------------------------------- */

/* Spec section 2: row t = [sin(t f_j)] ++ [cos(t f_j)], f_j = exp(-j ln(10000) / (C/2 - 1)),
 * evaluated in double and rounded once to float. */
static float *make_positions(int rows, int channels) {
    int half = channels / 2;
    float *tab = malloc((size_t)rows * channels * sizeof *tab);
    if (!tab) return NULL;
    double inc = log(10000.0) / (half - 1);
    for (int t = 0; t < rows; t++) {
        for (int j = 0; j < half; j++) {
            double arg = t * exp(-inc * j);
            tab[(size_t)t * channels + j] = (float)sin(arg);
            tab[(size_t)t * channels + half + j] = (float)cos(arg);
        }
    }
    return tab;
}

/* transformers computes the table in float32 (torch's exp within an ulp or two, differently on
 * CPU and CUDA); an ulp of f_j becomes t ulps of the argument at row t, so two correct tables
 * differ by up to about rows * FLT_EPSILON (1.2e-4 measured at 1500 rows against torch's CPU
 * table). A checkpoint saved in bf16 or f16 (every tensor of a bf16 release) stores the table
 * rounded, half an ulp of values up to 1 further off (2^-9, 2^-12). A table outside this bound
 * was not made by the formula. */
static double positions_tolerance(int rows, vox_dtype stored) {
    double rounding = stored == VOX_DTYPE_BF16 ? 0x1p-9 : stored == VOX_DTYPE_F16 ? 0x1p-12 : 0;
    return 1e-5 + 4.0 * rows * FLT_EPSILON + rounding;
}

/* ---- the plan -------------------------------------------------------------------------------- */

typedef struct {
    vox_tensor_kind kind;
    char name[64];                 /* ours */
    char src_name[192];            /* the checkpoint's */
    const vox_st_tensor *src;      /* NULL: generated (the positions) */
    const char *src_file;          /* the file holding src */
    int ndim;
    int64_t shape[VOX_ST_MAX_DIMS];
    vox_dtype dtype;               /* as written */
    int permute_heads;             /* > 0: q/k rows interleaved -> rotate-half, this many heads */
    int layer;
} plan_entry;

typedef struct {
    plan_entry *e;
    size_t n, cap;
} plan;

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t at = 0;
    at += snprintf(buf + at, cap - at, "[");
    for (int i = 0; i < ndim && at < cap; i++)
        at += snprintf(buf + at, cap - at, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (at < cap) snprintf(buf + at, cap - at, "]");
}

static int is_float(vox_dtype t) {
    return t == VOX_DTYPE_F32 || t == VOX_DTYPE_BF16 || t == VOX_DTYPE_F16;
}

static vox_status plan_add(plan *p, const vox_checkpoint *ck, vox_tensor_kind k, int layer,
                           vox_error *err) {
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        plan_entry *e = realloc(p->e, cap * sizeof *e);
        if (!e) return vox_fail(err, VOX_ERR_NOMEM, "out of memory planning the export");
        p->e = e;
        p->cap = cap;
    }
    plan_entry *e = &p->e[p->n];
    memset(e, 0, sizeof *e);
    e->kind = k;
    e->layer = layer;
    snprintf(e->name, sizeof e->name, ours[k].name, layer);
    e->ndim = expected_shape(k, &ck->hp, e->shape);

    const char *fmt = ck->names[k];
    if (fmt) {
        snprintf(e->src_name, sizeof e->src_name, fmt, layer);
        const char *file = NULL, *found = NULL;
        e->src = vox_checkpoint_find(ck, e->src_name, &file, &found);
        e->src_file = file;
        if (e->src && found != e->src_name) /* found under its alias */
            snprintf(e->src_name, sizeof e->src_name, "%s", found);
        /* Only the positions may be absent: they are generated. */
        if (!e->src && k != VOX_T_POSITIONS)
            return vox_fail(err, VOX_ERR_FORMAT, "%s: missing tensor %s", file, e->src_name);
        if (e->src && !is_float(e->src->dtype))
            return vox_fail(err, VOX_ERR_FORMAT,
                            "%s: tensor %s has dtype %s; expected F32, BF16 or F16", file,
                            e->src_name, vox_dtype_name(e->src->dtype));
        int same = e->src && e->src->ndim == e->ndim;
        for (int i = 0; same && i < e->ndim; i++) same = e->src->shape[i] == e->shape[i];
        if (e->src && !same) {
            char got[96], want[96];
            shape_str(got, sizeof got, e->src->ndim, e->src->shape);
            shape_str(want, sizeof want, e->ndim, e->shape);
            return vox_fail(err, VOX_ERR_FORMAT,
                            "%s: tensor %s has shape %s; %s implies %s", file, e->src_name, got,
                            ck->config_path, want);
        }
    }
    if (ck->interleaved_rope && (k == VOX_T_DEC_Q_W || k == VOX_T_DEC_K_W))
        e->permute_heads = k == VOX_T_DEC_Q_W ? ck->hp.decoder.heads : ck->hp.decoder.kv_heads;
    p->n++;
    return VOX_OK;
}

/* Every output tensor in writing order: the kinds in enum order, each run of per-layer kinds
 * repeated layer by layer. */
static vox_status build_plan(const vox_checkpoint *ck, plan *p, vox_error *err) {
    vox_status st = VOX_OK;
    for (int k = 0; k < VOX_T_COUNT && st == VOX_OK;) {
        if (!ours[k].per_layer) {
            st = plan_add(p, ck, (vox_tensor_kind)k, 0, err);
            k++;
            continue;
        }
        int end = k;
        while (end < VOX_T_COUNT && ours[end].per_layer && ours[end].blob == ours[k].blob) end++;
        int layers = ours[k].blob == VOX_BLOB_ENCODER ? ck->hp.encoder.layers
                                                      : ck->hp.decoder.layers;
        for (int l = 0; l < layers && st == VOX_OK; l++)
            for (int j = k; j < end && st == VOX_OK; j++)
                st = plan_add(p, ck, (vox_tensor_kind)j, l, err);
        k = end;
    }
    return st;
}

/* ---- conversion ------------------------------------------------------------------------------ */

/* Copies a rows x cols matrix from src (sdt) to dst (ddt), converting through float32 when the
 * dtypes differ. With heads > 0, rows are RoPE q/k rows: within each head, new row
 * p * (head_dim/2) + i takes old row 2i + p. Source rows are copied to an aligned scratch row
 * first: the mapping gives no alignment guarantee. */
static vox_status convert_matrix(void *dst, vox_dtype ddt, const void *src, vox_dtype sdt,
                                 int64_t rows, int64_t cols, int heads, vox_error *err) {
    size_t dsz = vox_dtype_size(ddt), ssz = vox_dtype_size(sdt);
    float *row = NULL, *scratch = NULL;
    if (ddt != sdt) {
        row = malloc((size_t)cols * sizeof *row);
        scratch = malloc((size_t)cols * ssz);
        if (!row || !scratch) {
            free(row);
            free(scratch);
            return vox_fail(err, VOX_ERR_NOMEM, "out of memory converting a tensor");
        }
    }
    int64_t head_dim = heads > 0 ? rows / heads : 0, half = head_dim / 2;
    for (int64_t r = 0; r < rows; r++) {
        int64_t from = r;
        if (heads > 0) {
            int64_t h = r / head_dim, within = r % head_dim;
            from = h * head_dim + 2 * (within % half) + within / half;
        }
        const char *s = (const char *)src + (size_t)from * cols * ssz;
        char *d = (char *)dst + (size_t)r * cols * dsz;
        if (ddt == sdt) {
            memcpy(d, s, (size_t)cols * dsz);
            continue;
        }
        memcpy(scratch, s, (size_t)cols * ssz);
        vox_to_f32(row, scratch, sdt, (size_t)cols);
        if (ddt == VOX_DTYPE_F32) {
            memcpy(d, row, (size_t)cols * sizeof *row);
        } else {
            VOX_ASSERT(ddt == VOX_DTYPE_BF16);
            for (int64_t j = 0; j < cols; j++) {
                uint16_t b = vox_f32_to_bf16(row[j]);
                memcpy(d + j * 2, &b, 2);
            }
        }
    }
    free(row);
    free(scratch);
    return VOX_OK;
}

/* The largest |stored - generated| of a stored positions table, and where. */
static vox_status positions_diff(const vox_st_tensor *t, const float *gen, double *max_diff,
                                 size_t *at, vox_error *err) {
    *max_diff = 0;
    *at = 0;
    float *f = malloc(t->n_elements * sizeof *f);
    if (!f) return vox_fail(err, VOX_ERR_NOMEM, "out of memory checking the positions");
    vox_status st = convert_matrix(f, VOX_DTYPE_F32, t->data, t->dtype, 1,
                                   (int64_t)t->n_elements, 0, err);
    for (size_t i = 0; st == VOX_OK && i < t->n_elements; i++) {
        double d = fabs((double)f[i] - gen[i]);
        if (!(d <= *max_diff)) { /* NaN counts as the largest */
            *max_diff = isnan(d) ? INFINITY : d;
            *at = i;
        }
    }
    free(f);
    return st;
}

/* ---- files ----------------------------------------------------------------------------------- */

static vox_status make_dirs(const char *path, vox_error *err) {
    char buf[VOX_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "%s: path too long", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return vox_fail(err, VOX_ERR_IO, "%s: cannot create directory: %s", buf,
                            strerror(errno));
        *p = c;
        if (c == '\0') break;
    }
    struct stat s;
    if (stat(path, &s) != 0 || !S_ISDIR(s.st_mode))
        return vox_fail(err, VOX_ERR_IO, "%s: not a directory", path);
    return VOX_OK;
}

/* Copies src to dst, whole or not at all (common/file_out.h); *bytes is the size copied. */
static vox_status copy_file(const char *src, const char *dst, size_t *bytes, vox_error *err) {
    FILE *in = fopen(src, "rb");
    if (!in) return vox_fail(err, VOX_ERR_IO, "%s: cannot open: %s", src, strerror(errno));
    vox_file_out out;
    vox_status st = vox_file_out_open(&out, dst, err);
    char buf[1 << 16];
    size_t n, total = 0;
    while (!st && (n = fread(buf, 1, sizeof buf, in)) > 0) {
        st = vox_file_out_write(&out, buf, n, err);
        total += n;
    }
    if (!st && ferror(in)) {
        st = vox_fail(err, VOX_ERR_IO, "%s: cannot read: %s", src, strerror(errno));
        vox_file_out_abort(&out);
    }
    fclose(in);
    if (!st) st = vox_file_out_commit(&out, err);
    if (!st) *bytes = total;
    return st;
}

static size_t file_size(const char *path) {
    struct stat s;
    return stat(path, &s) == 0 ? (size_t)s.st_size : 0;
}

/* The decoder's matrices that read the same input are written as one, rows concatenated, so
 * that a decode step makes one GEMV of them: q|k|v and gate|up. Returns how many consecutive
 * plan entries (starting at kind k) form one output, and its name. */
static int fused_parts(vox_tensor_kind k, const char **name_fmt) {
    if (k == VOX_T_DEC_Q_W) {
        *name_fmt = "layers.%d.attn.qkv.weight";
        return 3;
    }
    if (k == VOX_T_DEC_GATE_W) {
        *name_fmt = "layers.%d.mlp.gate_up.weight";
        return 2;
    }
    return 1;
}

/* Converts `parts` consecutive plan entries into one buffer of dtype dt, rows concatenated. */
static vox_status fuse_entries(const plan_entry *e, int parts, vox_dtype dt, void **buf,
                               int64_t shape[2], const char *path, vox_error *err) {
    int64_t rows = 0, cols = e[0].shape[1];
    for (int j = 0; j < parts; j++) {
        VOX_ASSERT(e[j].kind == e[0].kind + j && e[j].layer == e[0].layer && e[j].shape[1] == cols);
        rows += e[j].shape[0];
    }
    size_t esz = vox_dtype_size(dt);
    *buf = malloc((size_t)(rows * cols) * esz);
    if (!*buf) return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory fusing %s", path, e[0].name);
    int64_t at = 0;
    for (int j = 0; j < parts; j++) {
        vox_status st = convert_matrix((char *)*buf + (size_t)(at * cols) * esz, dt,
                                       e[j].src->data, e[j].src->dtype, e[j].shape[0], cols,
                                       e[j].permute_heads, err);
        if (st) return st;
        at += e[j].shape[0];
    }
    shape[0] = rows;
    shape[1] = cols;
    return VOX_OK;
}

/* The decoder's linear layers, which --dtype fp8 quantizes. */
static int fp8_kind(vox_tensor_kind k) {
    return k == VOX_T_DEC_Q_W || k == VOX_T_DEC_K_W || k == VOX_T_DEC_V_W || k == VOX_T_DEC_O_W ||
           k == VOX_T_DEC_GATE_W || k == VOX_T_DEC_UP_W || k == VOX_T_DEC_DOWN_W;
}

/* One FP8 output (common/fp8.h) of `parts` plan entries: their rows in float32 (fused as
 * fuse_entries does), quantized row by row into one buffer holding the scales [rows] (F32)
 * followed by the codes [rows, cols]. */
static vox_status quantize_entries(const plan_entry *e, int parts, void **buf, int64_t shape[2],
                                   const char *path, vox_error *err) {
    void *f = NULL;
    vox_status st = fuse_entries(e, parts, VOX_DTYPE_F32, &f, shape, path, err);
    if (st == VOX_OK && !(*buf = malloc((size_t)shape[0] * (4 + (size_t)shape[1]))))
        st = vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory quantizing %s", path, e[0].name);
    if (st == VOX_OK) {
        float *scale = *buf;
        uint8_t *codes = (uint8_t *)(scale + shape[0]);
        size_t cols = (size_t)shape[1];
        for (int64_t r = 0; r < shape[0]; r++)
            scale[r] = vox_fp8_quantize_row((const float *)f + (size_t)r * cols, cols,
                                            codes + (size_t)r * cols);
    }
    free(f);
    return st;
}

/* Writes one blob: tensors that keep their bytes are referenced in the source mapping, the
 * others converted into buffers freed once the blob is saved. */
static vox_status write_blob(const plan *p, vox_blob blob, const float *positions,
                             const char *path, const vox_export_params *params, size_t *n_tensors,
                             vox_error *err) {
    vox_st_writer *w = vox_st_writer_new();
    void **bufs = calloc(p->n, sizeof *bufs);
    if (!w || !bufs) {
        vox_st_writer_free(w);
        free(bufs);
        return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
    }
    vox_status st = VOX_OK;
    size_t count = 0;
    for (size_t i = 0; i < p->n && st == VOX_OK; i++) {
        const plan_entry *e = &p->e[i];
        if (ours[e->kind].blob != blob) continue;
        if (params->stop && params->stop(params->user)) { /* converting takes seconds too */
            st = vox_fail(err, VOX_ERR_INTERRUPTED, "%s: interrupted", path);
            break;
        }
        const char *fused_fmt = ours[e->kind].name;
        int parts = fused_parts(e->kind, &fused_fmt);
        if (parts > 1 || e->dtype == VOX_DTYPE_F8_E4M3) {
            int64_t shape[2];
            char name[64];
            snprintf(name, sizeof name, fused_fmt, e->layer);
            if (e->dtype != VOX_DTYPE_F8_E4M3) {
                st = fuse_entries(e, parts, e->dtype, &bufs[i], shape, path, err);
                if (st == VOX_OK) st = vox_st_writer_add(w, name, e->dtype, 2, shape, bufs[i], err);
            } else {
                st = quantize_entries(e, parts, &bufs[i], shape, path, err);
                char scale_name[80];
                snprintf(scale_name, sizeof scale_name, "%s_scale", name);
                if (st == VOX_OK)
                    st = vox_st_writer_add(w, name, e->dtype, 2, shape,
                                           (float *)bufs[i] + shape[0], err);
                if (st == VOX_OK)
                    st = vox_st_writer_add(w, scale_name, VOX_DTYPE_F32, 1, shape, bufs[i], err);
                count++;
            }
            count++;
            i += (size_t)parts - 1;
            continue;
        }
        const void *data;
        if (!e->src) {
            data = positions;
        } else if (e->src->dtype == e->dtype && !e->permute_heads) {
            data = e->src->data;
        } else {
            bufs[i] = malloc(e->src->n_elements * vox_dtype_size(e->dtype));
            if (!bufs[i]) {
                st = vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory converting %s", path,
                              e->src_name);
                break;
            }
            int64_t cols = e->ndim > 1 ? (int64_t)e->src->n_elements / e->shape[0]
                                       : (int64_t)e->src->n_elements;
            int64_t rows = e->ndim > 1 ? e->shape[0] : 1;
            st = convert_matrix(bufs[i], e->dtype, e->src->data, e->src->dtype, rows, cols,
                                e->permute_heads, err);
            data = bufs[i];
        }
        if (st == VOX_OK)
            st = vox_st_writer_add(w, e->name, e->dtype, e->ndim, e->shape, data, err);
        count++;
    }
    if (st == VOX_OK) st = vox_st_writer_save_stoppable(w, path, params->stop, params->user, err);
    vox_st_writer_free(w);
    for (size_t i = 0; i < p->n; i++) free(bufs[i]);
    free(bufs);
    *n_tensors = count;
    return st;
}

/* ---- the export ------------------------------------------------------------------------------ */

vox_export_params vox_export_default_params(void) {
    vox_export_params p = {VOX_EXPORT_KEEP, VOX_LAYOUT_AUTO, NULL, NULL, NULL};
    return p;
}

static int path_exists(const char *dir, const char *name) {
    char path[VOX_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static vox_status open_checkpoint(const char *from, vox_export_layout layout,
                                  vox_checkpoint *ck, vox_error *err) {
    struct stat s;
    if (stat(from, &s) != 0)
        return vox_fail(err, VOX_ERR_IO, "%s: cannot open checkpoint directory: %s", from,
                        strerror(errno));
    if (!S_ISDIR(s.st_mode))
        return vox_fail(err, VOX_ERR_IO, "%s: not a directory", from);
    if (strlen(from) >= VOX_PATH_MAX - 64)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "%s: path too long", from);

    if (layout == VOX_LAYOUT_AUTO) {
        /* The published repository carries both layouts; a download may hold either. */
        int hf = path_exists(from, "config.json"), mistral = path_exists(from, "params.json");
        int hf_weights = path_exists(from, "model.safetensors") ||
                         path_exists(from, "model.safetensors.index.json");
        int mistral_weights = path_exists(from, "consolidated.safetensors");
        if (hf && (hf_weights || !mistral || !mistral_weights))
            layout = VOX_LAYOUT_TRANSFORMERS;
        else if (mistral)
            layout = VOX_LAYOUT_MISTRAL;
        else
            return vox_fail(err, VOX_ERR_FORMAT,
                            "%s: not a Voxtral checkpoint: neither config.json (transformers "
                            "layout) nor params.json (Mistral layout)", from);
    }
    return layout == VOX_LAYOUT_TRANSFORMERS ? vox_checkpoint_open_hf(from, ck, err)
                                             : vox_checkpoint_open_mistral(from, ck, err);
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void add_warning(vox_export_result *res, const char *fmt, ...) {
    if (res->n_warnings >= VOX_EXPORT_MAX_WARNINGS) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->warnings[res->n_warnings++], VOX_EXPORT_WARNING_MAX, fmt, ap);
    va_end(ap);
}

/* The index of t's first NaN or infinity (all exponent bits set, in its dtype), or
 * t->n_elements when every element is finite (or the dtype is not a float type). */
static size_t first_non_finite(const vox_st_tensor *t) {
    size_t size;
    uint32_t exponent;
    switch (t->dtype) {
    case VOX_DTYPE_BF16: size = 2, exponent = 0x7F80u; break;
    case VOX_DTYPE_F16: size = 2, exponent = 0x7C00u; break;
    case VOX_DTYPE_F32: size = 4, exponent = 0x7F800000u; break;
    default: return t->n_elements;
    }
    const unsigned char *d = t->data;
    for (size_t i = 0; i < t->n_elements; i++) {
        uint32_t v = 0;
        memcpy(&v, d + size * i, size); /* little-endian, as safetensors stores it */
        if ((v & exponent) == exponent) return i;
    }
    return t->n_elements;
}

/* Resolves the output dtype (requested, or VOX_DTYPE_COUNT for "keep"), sets each entry's,
 * and compares a stored positions table with the generated one. */
static vox_status finish_plan(const vox_checkpoint *ck, plan *p, vox_dtype requested,
                              const float *generated, vox_manifest *m, vox_export_result *res,
                              vox_error *err) {
    int all_bf16 = 1;
    for (size_t i = 0; i < p->n; i++) {
        const plan_entry *e = &p->e[i];
        /* a NaN or infinity makes every transcript garbage (an FP8 export would even write
         * scales the runner refuses): a broken checkpoint, refused before anything is written */
        size_t bad = e->src ? first_non_finite(e->src) : 0;
        if (e->src && bad < e->src->n_elements)
            return vox_fail(err, VOX_ERR_FORMAT,
                            "%s: tensor '%s' has a NaN or infinity at element %zu: the checkpoint "
                            "is broken", e->src_file, e->src_name, bad);
        if (e->kind == VOX_T_EMBEDDING) m->source_dtype = e->src->dtype;
        if (e->kind != VOX_T_POSITIONS && e->src->dtype != VOX_DTYPE_BF16) all_bf16 = 0;
    }
    vox_dtype dtype = requested != VOX_DTYPE_COUNT ? requested
                      : all_bf16                   ? VOX_DTYPE_BF16
                                                   : VOX_DTYPE_F32;
    m->encoder.dtype = m->embedding.dtype = m->decoder.dtype = dtype;

    for (size_t i = 0; i < p->n; i++) {
        plan_entry *e = &p->e[i];
        e->dtype = e->kind == VOX_T_POSITIONS ? VOX_DTYPE_F32 : dtype;
        if (m->decoder.quant == VOX_QUANT_FP8_DYNAMIC && fp8_kind(e->kind))
            e->dtype = VOX_DTYPE_F8_E4M3;
        if (e->kind != VOX_T_POSITIONS || !e->src) continue;
        double diff;
        size_t at, cols = (size_t)ck->hp.encoder.d_model;
        vox_status st = positions_diff(e->src, generated, &diff, &at, err);
        if (st != VOX_OK) return st;
        if (diff > positions_tolerance(ck->hp.encoder.max_source_positions, e->src->dtype))
            add_warning(res,
                        "%s: %s is not the sinusoidal table (differs by up to %.3g at row %zu, "
                        "column %zu); exported as stored, since transformers uses it as stored",
                        e->src_file, e->src_name, diff, at / cols, at % cols);
    }
    return VOX_OK;
}

/* Everything that does not write: open, plan, check; fills m and the plan. */
static vox_status prepare(const char *from, const vox_export_params *params, vox_checkpoint *ck,
                          plan *p, float **positions, vox_manifest *m, vox_export_result *res,
                          vox_error *err) {
    vox_status st = open_checkpoint(from, params->layout, ck, err);
    if (st != VOX_OK) return st;
    if ((st = build_plan(ck, p, err)) != VOX_OK) return st;

    *positions = make_positions(ck->hp.encoder.max_source_positions, ck->hp.encoder.d_model);
    if (!*positions) return vox_fail(err, VOX_ERR_NOMEM, "out of memory for the positions");

    *m = ck->hp;
    snprintf(m->encoder.file, sizeof m->encoder.file, "%s", blob_files[VOX_BLOB_ENCODER]);
    snprintf(m->embedding.file, sizeof m->embedding.file, "%s", blob_files[VOX_BLOB_EMBEDDING]);
    snprintf(m->decoder.file, sizeof m->decoder.file, "%s", blob_files[VOX_BLOB_DECODER]);
    char abs_from[PATH_MAX];
    snprintf(m->source_path, sizeof m->source_path, "%s",
             realpath(from, abs_from) ? abs_from : from);

    vox_dtype requested = params->dtype == VOX_EXPORT_F32    ? VOX_DTYPE_F32
                          : params->dtype == VOX_EXPORT_BF16 ? VOX_DTYPE_BF16
                                                             : VOX_DTYPE_COUNT;
    m->decoder.quant = params->dtype == VOX_EXPORT_FP8 ? VOX_QUANT_FP8_DYNAMIC : VOX_QUANT_NONE;
    if ((st = finish_plan(ck, p, requested, *positions, m, res, err)) != VOX_OK) return st;

    st = vox_manifest_validate(m, 1, err);
    if (st != VOX_OK) {
        vox_error_prefix(err, "internal error: the manifest to write is invalid");
        return err ? (err->code = VOX_ERR_INTERNAL) : VOX_ERR_INTERNAL;
    }
    return VOX_OK;
}

/* The files an export writes into its staging directory, in the order they are moved into place
 * (the manifest last: a directory is a model once it is there). */
static void staged_names(const vox_manifest *m, const char *names[VOX_BLOB_COUNT + 2]) {
    for (int b = 0; b < VOX_BLOB_COUNT; b++) names[b] = blob_files[b];
    names[VOX_BLOB_COUNT] = m->tokenizer.file;
    names[VOX_BLOB_COUNT + 1] = VOX_MANIFEST_FILE;
}

/* Removes the staging directory and what is in it (the export's own files only). */
static void remove_staging(const char *staging, const vox_manifest *m) {
    const char *names[VOX_BLOB_COUNT + 2];
    staged_names(m, names);
    char path[VOX_PATH_MAX + 512];
    for (int i = 0; i < VOX_BLOB_COUNT + 2; i++) {
        snprintf(path, sizeof path, "%s/%s", staging, names[i]);
        unlink(path);
    }
    rmdir(staging);
}

/* Writes the model into a hidden staging directory inside `out`, then moves its files into `out`
 * (the old manifest removed first, the new one moved last). A failure or a stop while writing
 * (disk full, SIGINT) removes the staging directory, and `out` itself when this export made it:
 * `out` is then as it was, an earlier model in it intact. */
static vox_status write_model(const char *out, const vox_checkpoint *ck, const plan *p,
                              const float *positions, const vox_manifest *m,
                              const vox_export_params *params, vox_error *err) {
    struct stat sb;
    const bool made_out = stat(out, &sb) != 0;
    vox_status st = make_dirs(out, err);
    if (st != VOX_OK) return st;
    char staging[VOX_PATH_MAX + 64], path[VOX_PATH_MAX + 512], dst[VOX_PATH_MAX + 512];
    snprintf(staging, sizeof staging, "%s/.voxtral_export.%ld", out, (long)getpid());
    remove_staging(staging, m); /* a crashed export of an earlier process with our PID */
    if (mkdir(staging, 0777) != 0) {
        st = vox_fail(err, VOX_ERR_IO, "%s: cannot create directory: %s", staging, strerror(errno));
        if (made_out) rmdir(out);
        return st;
    }
    size_t n_tensors[VOX_BLOB_COUNT] = {0}, tekken_bytes = 0;
    for (int b = 0; b < VOX_BLOB_COUNT && !st; b++) {
        snprintf(path, sizeof path, "%s/%s", staging, blob_files[b]);
        st = write_blob(p, (vox_blob)b, positions, path, params, &n_tensors[b], err);
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/%s", staging, m->tokenizer.file);
        st = copy_file(ck->tekken_path, path, &tekken_bytes, err);
    }
    if (!st) st = vox_manifest_write(staging, m, err);
    if (!st && params->stop && params->stop(params->user))
        st = vox_fail(err, VOX_ERR_INTERRUPTED, "%s: interrupted", out);
    if (st) {
        remove_staging(staging, m);
        if (made_out) rmdir(out);
        return st;
    }

    /* into place: renames within one directory tree, the manifest last */
    snprintf(dst, sizeof dst, "%s/%s", out, VOX_MANIFEST_FILE);
    if (remove(dst) != 0 && errno != ENOENT) {
        st = vox_fail(err, VOX_ERR_IO, "%s: cannot remove the old manifest: %s", dst, strerror(errno));
        remove_staging(staging, m);
        return st;
    }
    const char *names[VOX_BLOB_COUNT + 2];
    staged_names(m, names);
    for (int i = 0; i < VOX_BLOB_COUNT + 2 && !st; i++) {
        snprintf(path, sizeof path, "%s/%s", staging, names[i]);
        snprintf(dst, sizeof dst, "%s/%s", out, names[i]);
        if (rename(path, dst) != 0)
            st = vox_fail(err, VOX_ERR_IO, "%s: cannot move into place: %s", dst, strerror(errno));
        else if (params->on_file)
            params->on_file(dst, i < VOX_BLOB_COUNT ? n_tensors[i] : 0,
                            i == VOX_BLOB_COUNT ? tekken_bytes : file_size(dst), params->user);
    }
    remove_staging(staging, m);
    return st;
}

vox_status vox_export(const char *from, const char *out, const vox_export_params *params,
                      vox_export_result *res, vox_error *err) {
    vox_export_params defaults = vox_export_default_params();
    vox_export_result scratch;
    if (!params) params = &defaults;
    if (!res) res = &scratch;
    memset(res, 0, sizeof *res);
    if (!from || !out || !*from || !*out)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "vox_export: %s directory is empty",
                        !from || !*from ? "the checkpoint" : "the output");
    if (strlen(out) >= VOX_PATH_MAX - 64)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "%s: path too long", out);

    vox_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    plan p = {0};
    float *positions = NULL;
    vox_manifest m;
    vox_status st = prepare(from, params, &ck, &p, &positions, &m, res, err);
    if (st == VOX_OK) st = write_model(out, &ck, &p, positions, &m, params, err);
    if (st == VOX_OK) {
        res->manifest = m;
        res->n_tensors = p.n;
    }
    free(positions);
    free(p.e);
    vox_checkpoint_close(&ck);
    return st;
}
