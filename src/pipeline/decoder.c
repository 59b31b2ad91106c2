/* Text decoder (Llama architecture), voxtral-spec.md section 4: RMSNorm, grouped-query causal
 * attention with rotate-half RoPE over a KV cache, SwiGLU MLP, final norm, untied lm_head. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"

static void work_free(vox_backend *be, vox_decoder_work *w) {
    vox_tensors_free(be, (vox_tensor *)w, sizeof *w / sizeof(vox_tensor));
}

static vox_status work_alloc(vox_model *m, vox_decoder_work *w, int64_t T, vox_error *err) {
    vox_backend *be = m->be;
    const vox_decoder_config *d = &m->cfg.decoder;
    int64_t QD = (int64_t)d->heads * d->head_dim, KD = (int64_t)d->kv_heads * d->head_dim;
    vox_dtype a = be->act_type;
    vox_status st;
    memset(w, 0, sizeof *w);
    if ((st = vox_tensor_new2(be, &w->h, a, T, d->hidden, err)) ||
        (st = vox_tensor_new2(be, &w->qkv, a, T, QD + 2 * KD, err)) ||
        (st = vox_tensor_new2(be, &w->q, a, T, QD, err)) ||
        (st = vox_tensor_new2(be, &w->attn, a, T, QD, err)) ||
        (st = vox_tensor_new2(be, &w->gate_up, a, T, 2 * (int64_t)d->ffn_dim, err)) ||
        (st = vox_tensor_new2(be, &w->act, a, T, d->ffn_dim, err))) {
        work_free(be, w);
        vox_error_prefix(err, "text_decoder workspace for %lld positions", (long long)T);
    }
    return st;
}

vox_status vox_kv_cache_init(vox_model *m, vox_kv_cache *c, int64_t capacity, vox_error *err) {
    const vox_decoder_config *d = &m->cfg.decoder;
    memset(c, 0, sizeof *c);
    c->n_layers = d->layers;
    c->capacity = capacity;
    c->k = calloc((size_t)d->layers, sizeof *c->k);
    c->v = calloc((size_t)d->layers, sizeof *c->v);
    if (!c->k || !c->v) {
        vox_kv_cache_free(m, c);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    int64_t width = (int64_t)d->kv_heads * d->head_dim;
    for (int l = 0; l < d->layers; l++) {
        vox_status st;
        if ((st = vox_tensor_new2(m->be, &c->k[l], m->be->act_type, capacity, width, err)) ||
            (st = vox_tensor_new2(m->be, &c->v[l], m->be->act_type, capacity, width, err))) {
            vox_error_prefix(err, "KV cache for %lld positions", (long long)capacity);
            vox_kv_cache_free(m, c);
            return st;
        }
    }
    return VOX_OK;
}

void vox_kv_cache_free(vox_model *m, vox_kv_cache *c) {
    if (c->graph) m->be->graph_free(m->be, c->graph);
    c->graph = NULL;
    work_free(m->be, &c->step);
    for (int l = 0; l < c->n_layers; l++) {
        if (c->k) vox_tensor_free(m->be, &c->k[l]);
        if (c->v) vox_tensor_free(m->be, &c->v[l]);
    }
    free(c->k);
    free(c->v);
    c->k = c->v = NULL;
    c->n_layers = 0;
}

/* One projection of the decoder, fused with what surrounds it where the backend takes it (a
 * decode step on cuda); otherwise the same operations one by one on the workspace: `h` holds
 * the normalised input and `out` the product before its epilogue. */
static void project(vox_backend *be, const vox_projection *p, vox_tensor *h, vox_tensor *out) {
    if (be->projection && be->projection(be, p)) return;
    const vox_tensor *in = p->x;
    if (p->norm_w) {
        be->rms_norm(be, h, p->x, p->norm_w, p->eps);
        in = h;
    }
    switch (p->out) {
    case VOX_PROJ_STORE: be->matmul(be, p->y, in, p->w, NULL); break;
    case VOX_PROJ_ADD:
        be->matmul(be, out, in, p->w, NULL);
        be->add(be, p->y, p->y, out);
        break;
    case VOX_PROJ_SWIGLU:
        be->matmul(be, out, in, p->w, NULL);
        be->swiglu(be, p->y, out);
        break;
    case VOX_PROJ_QKV_ROPE_CACHE:
        be->matmul(be, out, in, p->w, NULL);
        be->qkv_rope_cache(be, p->y, p->k_cache, p->v_cache, out, p->n_heads, p->n_kv_heads,
                           p->head_dim, p->pos0, p->theta);
        break;
    }
}

/* Enqueues the decoder over x [T, hidden] at positions pos0.. with workspace w. One row (decode)
 * attends to the whole cache view, whose length the backend reads where it runs; prefill attends
 * to the rows filled so far. */
static void decoder_layers(vox_model *m, vox_kv_cache *c, vox_tensor *x, vox_tensor *logits,
                           vox_decoder_work *w, int64_t pos0) {
    vox_backend *be = m->be;
    const vox_decoder_config *d = &m->cfg.decoder;
    int64_t T = x->shape[0];
    float eps = (float)d->rms_norm_eps;
    for (int l = 0; l < d->layers; l++) {
        const vox_decoder_layer *L = &m->dec_layers[l];
        /* x += o(attention(rope(q), cache(rope(k)), cache(v))), q|k|v from RMSNorm(x) */
        project(be,
                &(vox_projection){.y = &w->q, .x = x, .w = &L->qkv, .norm_w = &L->attn_norm,
                                  .eps = eps, .out = VOX_PROJ_QKV_ROPE_CACHE, .k_cache = &c->k[l],
                                  .v_cache = &c->v[l], .n_heads = d->heads,
                                  .n_kv_heads = d->kv_heads, .head_dim = d->head_dim,
                                  .pos0 = pos0, .theta = d->rope_theta},
                &w->h, &w->qkv);
        vox_tensor k_all = c->k[l], v_all = c->v[l];
        if (T > 1) {
            k_all = vox_tensor_rows(&c->k[l], 0, pos0 + T);
            v_all = vox_tensor_rows(&c->v[l], 0, pos0 + T);
        }
        be->attention(be, &w->attn, &w->q, &k_all, &v_all, 1, (int)T, (int)(pos0 + T), d->heads,
                      d->kv_heads, d->head_dim, 1.0f / sqrtf((float)d->head_dim), true, pos0);
        project(be, &(vox_projection){.y = x, .x = &w->attn, .w = &L->o, .out = VOX_PROJ_ADD},
                &w->h, &w->h);
        /* x += down(silu(gate(h)) * up(h)), h = RMSNorm(x) */
        project(be,
                &(vox_projection){.y = &w->act, .x = x, .w = &L->gate_up, .norm_w = &L->ffn_norm,
                                  .eps = eps, .out = VOX_PROJ_SWIGLU},
                &w->h, &w->gate_up);
        project(be, &(vox_projection){.y = x, .x = &w->act, .w = &L->down, .out = VOX_PROJ_ADD},
                &w->h, &w->h);
    }
    /* Only the last position's logits are needed to choose the next token. */
    vox_tensor last = vox_tensor_rows(x, T - 1, 1), last_h = vox_tensor_rows(&w->h, 0, 1);
    project(be,
            &(vox_projection){.y = logits, .x = &last, .w = &m->lm_head, .norm_w = &m->dec_norm,
                              .eps = eps, .out = VOX_PROJ_STORE},
            &last_h, NULL);
}

static vox_status check_room(const vox_kv_cache *c, int64_t T, vox_error *err) {
    if (c->len + T > c->capacity)
        return vox_fail(err, VOX_ERR_TOO_LONG, "text_decoder: %lld positions exceed the cache of %lld",
                        (long long)(c->len + T), (long long)c->capacity);
    return VOX_OK;
}

vox_status vox_decoder_forward(vox_model *m, vox_kv_cache *c, vox_tensor *x, vox_tensor *logits,
                               vox_error *err) {
    int64_t T = x->shape[0];
    VOX_ASSERT(T >= 1);
    vox_status st = check_room(c, T, err);
    if (st) return st;
    vox_decoder_work w;
    if ((st = work_alloc(m, &w, T, err))) return st;
    decoder_layers(m, c, x, logits, &w, c->len);
    c->len += T;
    work_free(m->be, &w);
    return VOX_OK;
}

static bool graphs_enabled(const vox_backend *be) {
    const char *off = getenv("VOX_NO_GRAPHS");
    return be->graph_begin && !(off && *off && strcmp(off, "0") != 0);
}

vox_status vox_decoder_step(vox_model *m, vox_kv_cache *c, vox_tensor *x, vox_tensor *logits,
                            vox_error *err) {
    vox_backend *be = m->be;
    VOX_ASSERT(x->shape[0] == 1);
    vox_status st = check_room(c, 1, err);
    if (st) return st;
    if (!c->step.h.data && (st = work_alloc(m, &c->step, 1, err))) return st;
    /* The first step runs as it is (it also sizes every workspace the step needs); the second is
     * recorded, and every later one replays that recording with its own position. */
    if (graphs_enabled(be) && c->steps_run >= 1 &&
        (!c->graph || c->graph_x != x->data || c->graph_logits != logits->data)) {
        if (c->graph) be->graph_free(be, c->graph);
        c->graph = NULL;
        be->graph_begin(be);
        decoder_layers(m, c, x, logits, &c->step, c->len);
        if ((st = be->graph_end(be, &c->graph, err))) return st;
        c->graph_x = x->data;
        c->graph_logits = logits->data;
    }
    if (c->graph) {
        if ((st = be->graph_replay(be, c->graph, c->len, err))) return st;
    } else {
        decoder_layers(m, c, x, logits, &c->step, c->len);
    }
    c->len += 1;
    c->steps_run++;
    return VOX_OK;
}
