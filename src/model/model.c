/* Loading an exported model directory (see format/manifest.h for the names and shapes). */
#include "model/model.h"
#include "model/fit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    vox_weight_spec *items;
    size_t n, cap;
} weight_list;

static vox_status want(weight_list *l, vox_safetensors *blob, vox_tensor *dst, bool keep_f32,
                       int ndim, int64_t d0, int64_t d1, int64_t d2, vox_error *err,
                       const char *fmt, ...) __attribute__((format(printf, 10, 11)));

static vox_status want(weight_list *l, vox_safetensors *blob, vox_tensor *dst, bool keep_f32,
                       int ndim, int64_t d0, int64_t d1, int64_t d2, vox_error *err,
                       const char *fmt, ...) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        vox_weight_spec *p = realloc(l->items, cap * sizeof *p);
        if (!p) return vox_fail(err, VOX_ERR_NOMEM, "out of memory listing weights");
        l->items = p;
        l->cap = cap;
    }
    vox_weight_spec *w = &l->items[l->n++];
    memset(w, 0, sizeof *w);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->name, sizeof w->name, fmt, ap);
    va_end(ap);
    w->blob = blob;
    w->ndim = ndim;
    w->shape[0] = d0, w->shape[1] = d1, w->shape[2] = d2;
    w->keep_f32 = keep_f32;
    w->dst = dst;
    return VOX_OK;
}

#define WANT(blob, dst, ndim, d0, d1, d2, ...)                                                   \
    do {                                                                                        \
        vox_status st_ = want(&list, blob, dst, false, ndim, d0, d1, d2, err, __VA_ARGS__);     \
        if (st_) goto fail;                                                                     \
    } while (0)

/* A decoder linear layer: may be FP8 (checked against the manifest by check_weights). */
#define WANT_LINEAR(dst, d0, d1, ...)                                                            \
    do {                                                                                        \
        WANT(dec, dst, 2, d0, d1, 0, __VA_ARGS__);                                              \
        list.items[list.n - 1].fp8_ok = true;                                                   \
    } while (0)

static vox_status list_weights(vox_model *m, weight_list *l_out, vox_error *err) {
    weight_list list = {0};
    const vox_encoder_config *e = &m->cfg.encoder;
    const vox_decoder_config *d = &m->cfg.decoder;
    vox_safetensors *enc = m->blob_encoder, *emb = m->blob_embedding, *dec = m->blob_decoder;
    int64_t D = e->d_model, F = e->ffn_dim;

    WANT(enc, &m->conv1_w, 3, D, e->num_mel_bins, 3, "conv1.weight");
    WANT(enc, &m->conv1_b, 1, D, 0, 0, "conv1.bias");
    WANT(enc, &m->conv2_w, 3, D, D, 3, "conv2.weight");
    WANT(enc, &m->conv2_b, 1, D, 0, 0, "conv2.bias");
    if (want(&list, enc, &m->positions, true, 2, e->max_source_positions, D, 0, err, "positions"))
        goto fail;
    for (int i = 0; i < e->layers; i++) {
        vox_encoder_layer *L = &m->enc_layers[i];
        WANT(enc, &L->attn_norm_w, 1, D, 0, 0, "layers.%d.attn_norm.weight", i);
        WANT(enc, &L->attn_norm_b, 1, D, 0, 0, "layers.%d.attn_norm.bias", i);
        WANT(enc, &L->q_w, 2, D, D, 0, "layers.%d.attn.q.weight", i);
        WANT(enc, &L->q_b, 1, D, 0, 0, "layers.%d.attn.q.bias", i);
        WANT(enc, &L->k_w, 2, D, D, 0, "layers.%d.attn.k.weight", i);
        WANT(enc, &L->v_w, 2, D, D, 0, "layers.%d.attn.v.weight", i);
        WANT(enc, &L->v_b, 1, D, 0, 0, "layers.%d.attn.v.bias", i);
        WANT(enc, &L->o_w, 2, D, D, 0, "layers.%d.attn.o.weight", i);
        WANT(enc, &L->o_b, 1, D, 0, 0, "layers.%d.attn.o.bias", i);
        WANT(enc, &L->ffn_norm_w, 1, D, 0, 0, "layers.%d.ffn_norm.weight", i);
        WANT(enc, &L->ffn_norm_b, 1, D, 0, 0, "layers.%d.ffn_norm.bias", i);
        WANT(enc, &L->fc1_w, 2, F, D, 0, "layers.%d.fc1.weight", i);
        WANT(enc, &L->fc1_b, 1, F, 0, 0, "layers.%d.fc1.bias", i);
        WANT(enc, &L->fc2_w, 2, D, F, 0, "layers.%d.fc2.weight", i);
        WANT(enc, &L->fc2_b, 1, D, 0, 0, "layers.%d.fc2.bias", i);
    }
    WANT(enc, &m->enc_norm_w, 1, D, 0, 0, "norm.weight");
    WANT(enc, &m->enc_norm_b, 1, D, 0, 0, "norm.bias");
    WANT(enc, &m->proj1, 2, e->projector_dim, D * e->downsample_factor, 0, "projector.linear1.weight");
    WANT(enc, &m->proj2, 2, e->projector_dim, e->projector_dim, 0, "projector.linear2.weight");

    WANT(emb, &m->embedding, 2, d->vocab_size, d->hidden, 0, "embedding");

    int64_t H = d->hidden, QD = (int64_t)d->heads * d->head_dim, KD = (int64_t)d->kv_heads * d->head_dim;
    for (int i = 0; i < d->layers; i++) {
        vox_decoder_layer *L = &m->dec_layers[i];
        WANT(dec, &L->attn_norm, 1, H, 0, 0, "layers.%d.attn_norm.weight", i);
        WANT_LINEAR(&L->qkv, QD + 2 * KD, H, "layers.%d.attn.qkv.weight", i);
        WANT_LINEAR(&L->o, H, QD, "layers.%d.attn.o.weight", i);
        WANT(dec, &L->ffn_norm, 1, H, 0, 0, "layers.%d.ffn_norm.weight", i);
        WANT_LINEAR(&L->gate_up, 2 * (int64_t)d->ffn_dim, H, "layers.%d.mlp.gate_up.weight", i);
        WANT_LINEAR(&L->down, H, d->ffn_dim, "layers.%d.mlp.down.weight", i);
    }
    WANT(dec, &m->dec_norm, 1, H, 0, 0, "norm.weight");
    WANT(dec, &m->lm_head, 2, d->vocab_size, H, 0, "lm_head.weight");
    *l_out = list;
    return VOX_OK;
fail:
    free(list.items);
    return err->code;
}

static void shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

/* The row scales of an FP8 weight: NAME_scale, F32 [rows], every value positive and finite.
 * Returns the tensor (NULL with err set when it is missing or malformed). */
static const vox_st_tensor *find_scale(const vox_weight_spec *w, const vox_st_tensor *t,
                                       vox_error *err) {
    char name[128];
    snprintf(name, sizeof name, "%s_scale", w->name);
    const vox_st_tensor *s = vox_st_find(w->blob, name);
    const char *path = vox_st_path(w->blob);
    if (!s) {
        vox_fail(err, VOX_ERR_FORMAT, "%s: FP8 tensor '%s' has no row scales '%s' (re-export the model)",
                 path, w->name, name);
        return NULL;
    }
    if (s->dtype != VOX_DTYPE_F32 || s->ndim != 1 || s->shape[0] != t->shape[0]) {
        char got[128];
        shape_str(got, sizeof got, s->ndim, s->shape);
        vox_fail(err, VOX_ERR_FORMAT,
                 "%s: tensor '%s' is %s %s; the row scales of '%s' must be F32 [%lld]", path, name,
                 vox_dtype_name(s->dtype), got, w->name, (long long)t->shape[0]);
        return NULL;
    }
    for (int64_t r = 0; r < s->shape[0]; r++) {
        float v;
        memcpy(&v, (const char *)s->data + r * 4, 4); /* the mapping gives no alignment */
        if (!(v > 0.0f && v <= 3.4e38f)) {
            vox_fail(err, VOX_ERR_FORMAT, "%s: tensor '%s': row %lld's scale is %g; scales must be "
                     "positive and finite", path, name, (long long)r, v);
            return NULL;
        }
    }
    return s;
}

/* Every tensor present, float, of the expected shape; the decoder's linear layers FP8 with
 * valid row scales exactly when the manifest records the fp8_dynamic scheme. Checked before
 * anything is allocated. */
static vox_status check_weights(const weight_list *l, vox_quantization quant, vox_error *err) {
    for (size_t i = 0; i < l->n; i++) {
        const vox_weight_spec *w = &l->items[i];
        const vox_st_tensor *t = vox_st_find(w->blob, w->name);
        const char *path = vox_st_path(w->blob);
        if (!t)
            return vox_fail(err, VOX_ERR_FORMAT, "%s: tensor '%s' is missing (re-export the model)",
                            path, w->name);
        bool fp8 = t->dtype == VOX_DTYPE_F8_E4M3, want_fp8 = w->fp8_ok && quant == VOX_QUANT_FP8_DYNAMIC;
        if (fp8 && !w->fp8_ok)
            return vox_fail(err, VOX_ERR_FORMAT,
                            "%s: tensor '%s' is F8_E4M3; only the text decoder's linear layers "
                            "(attn.qkv, attn.o, mlp.gate_up, mlp.down) may be FP8", path, w->name);
        if (fp8 != want_fp8)
            return vox_fail(err, VOX_ERR_FORMAT,
                            want_fp8 ? "%s: tensor '%s' is %s, but voxtral.json records the fp8_dynamic "
                                       "scheme for it (re-export the model)"
                                     : "%s: tensor '%s' is %s, but voxtral.json records no "
                                       "quantization (re-export the model)",
                            path, w->name, vox_dtype_name(t->dtype));
        if (fp8 && t->ndim == 2 && !find_scale(w, t, err)) return err->code;
        if (t->dtype != VOX_DTYPE_F32 && t->dtype != VOX_DTYPE_BF16 && t->dtype != VOX_DTYPE_F16 && !fp8)
            return vox_fail(err, VOX_ERR_FORMAT, "%s: tensor '%s' has dtype %s; expected F32, BF16 or F16",
                            path, w->name, vox_dtype_name(t->dtype));
        if (w->keep_f32 && t->dtype != VOX_DTYPE_F32)
            return vox_fail(err, VOX_ERR_FORMAT, "%s: tensor '%s' must be F32, not %s", path,
                            w->name, vox_dtype_name(t->dtype));
        bool same = t->ndim == w->ndim;
        for (int k = 0; same && k < w->ndim; k++) same = t->shape[k] == w->shape[k];
        if (!same) {
            char got[128], exp[128];
            shape_str(got, sizeof got, t->ndim, t->shape);
            shape_str(exp, sizeof exp, w->ndim, w->shape);
            return vox_fail(err, VOX_ERR_FORMAT,
                            "%s: tensor '%s' has shape %s but voxtral.json implies %s", path,
                            w->name, got, exp);
        }
    }
    return VOX_OK;
}

/* Device memory the weight takes once made (0: a view of the file). */
static size_t device_bytes(vox_backend *be, const vox_weight_spec *w) {
    const vox_st_tensor *t = vox_st_find(w->blob, w->name);
    return be->weight_bytes ? be->weight_bytes(be, t->dtype, t->ndim, t->shape, w->keep_f32) : 0;
}

static vox_status open_blob(const vox_model *m, const char *file, vox_safetensors **out,
                            vox_error *err) {
    char path[VOX_PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", m->dir, file);
    if (strchr(file, '/'))
        return vox_fail(err, VOX_ERR_FORMAT, "%s/%s: blob names must be plain file names", m->dir,
                        VOX_MANIFEST_FILE);
    return vox_st_open(path, out, err);
}

static vox_status check_layer_count(const vox_safetensors *blob, const char *section, int layers,
                                    vox_error *err) {
    char name[64];
    snprintf(name, sizeof name, "layers.%d.attn_norm.weight", layers - 1);
    /* each layer holds at least 6 tensors (the decoder's; the encoder's 15) */
    if (!((size_t)layers <= vox_st_count(blob) / 6 && vox_st_find(blob, name)))
        return vox_fail(err, VOX_ERR_FORMAT,
                        "%s: tensor '%s' is missing: %s.layers in %s is %d (re-export the model)",
                        vox_st_path(blob), name, section, VOX_MANIFEST_FILE, layers);
    /* and no layer past the count: a manifest that says fewer would run part of the network */
    snprintf(name, sizeof name, "layers.%d.attn_norm.weight", layers);
    if (vox_st_find(blob, name))
        return vox_fail(err, VOX_ERR_FORMAT,
                        "%s has tensors of layer %d ('%s'), but %s.layers in %s is %d "
                        "(re-export the model)", vox_st_path(blob), layers, name, section,
                        VOX_MANIFEST_FILE, layers);
    return VOX_OK;
}

vox_status vox_model_open(const char *dir, vox_model **out, vox_error *err) {
    *out = NULL;
    vox_model *m = calloc(1, sizeof *m);
    if (!m) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    snprintf(m->dir, sizeof m->dir, "%s", dir);
    weight_list list = {0};
    vox_status st = vox_manifest_read(dir, &m->cfg, err);
    if (st) goto fail;
    if ((st = open_blob(m, m->cfg.encoder.file, &m->blob_encoder, err))) goto fail;
    if ((st = open_blob(m, m->cfg.embedding.file, &m->blob_embedding, err))) goto fail;
    if ((st = open_blob(m, m->cfg.decoder.file, &m->blob_decoder, err))) goto fail;
    /* The layer counts size allocations below: before trusting them, the last layer of each
     * must be in its blob (a count such as 2^31 - 1 is then an error naming the tensor, not an
     * allocation of hundreds of GB). */
    if ((st = check_layer_count(m->blob_encoder, "audio_encoder", m->cfg.encoder.layers, err)) ||
        (st = check_layer_count(m->blob_decoder, "text_decoder", m->cfg.decoder.layers, err)))
        goto fail;
    m->enc_layers = calloc((size_t)m->cfg.encoder.layers, sizeof *m->enc_layers);
    m->dec_layers = calloc((size_t)m->cfg.decoder.layers, sizeof *m->dec_layers);
    if (!m->enc_layers || !m->dec_layers) {
        st = vox_fail(err, VOX_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = list_weights(m, &list, err))) goto fail;
    if ((st = check_weights(&list, m->cfg.decoder.quant, err))) goto fail;
    m->weights = list.items;
    m->n_weights = list.n;
    *out = m;
    return VOX_OK;
fail:
    free(list.items);
    vox_model_free(m);
    return st;
}

vox_status vox_model_upload(vox_model *m, vox_backend *be, vox_error *err) {
    VOX_ASSERT(!m->be && m->weights);
    m->be = be;
    vox_safetensors *blobs[] = {m->blob_encoder, m->blob_embedding, m->blob_decoder};
    vox_weight_file files[3];
    for (int i = 0; i < 3; i++)
        files[i] = (vox_weight_file){.path = vox_st_path(blobs[i]), .fd = vox_st_fd(blobs[i]),
                                     .map = vox_st_base(blobs[i]), .size = vox_st_size(blobs[i])};
    /* the device memory the weights take, checked against what is free before any upload */
    size_t need = 0, done = 0;
    for (size_t i = 0; i < m->n_weights; i++) need += device_bytes(be, &m->weights[i]);
    vox_status st = vox_model_check_fit(be, need, err);
    if (st) return st;
    if (be->weights_begin) be->weights_begin(be, files, 3);
    for (size_t i = 0; i < m->n_weights && !st; i++) {
        const vox_weight_spec *w = &m->weights[i];
        const vox_st_tensor *t = vox_st_find(w->blob, w->name);
        const float *scale = NULL;
        if (t->dtype == VOX_DTYPE_F8_E4M3) { /* its row scales (checked by open) */
            char name[128];
            snprintf(name, sizeof name, "%s_scale", w->name);
            scale = vox_st_find(w->blob, name)->data;
        }
        st = be->weight(be, w->dst, t->data, t->dtype, t->ndim, t->shape, w->keep_f32, scale, err);
        if (st) {
            vox_error_prefix(err, "%s: tensor '%s'", vox_st_path(w->blob), w->name);
            if (st == VOX_ERR_DEVICE) vox_model_explain_fit(be, need, done, err);
        } else {
            done += device_bytes(be, w);
        }
    }
    if (be->weights_end) {
        vox_status end = be->weights_end(be, st == VOX_OK, err);
        if (!st) st = end;
    }
    /* CPU weights are views of the mappings, so these stay open for the model's lifetime. */
    return st;
}

vox_status vox_model_load(const char *dir, vox_backend *be, vox_model **out, vox_error *err) {
    vox_model *m;
    vox_status st = vox_model_open(dir, &m, err);
    if (st) return st;
    if ((st = vox_model_upload(m, be, err))) {
        vox_model_free(m);
        return st;
    }
    *out = m;
    return VOX_OK;
}

void vox_model_free(vox_model *m) {
    if (!m) return;
    for (size_t i = 0; m->be && i < m->n_weights; i++) {
        vox_tensor *t = m->weights[i].dst;
        if (t->data) m->be->free_weight(m->be, t);
        t->data = NULL;
    }
    free(m->weights);
    free(m->enc_layers);
    free(m->dec_layers);
    vox_st_close(m->blob_encoder);
    vox_st_close(m->blob_embedding);
    vox_st_close(m->blob_decoder);
    free(m);
}
