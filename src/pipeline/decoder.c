/* Text decoder (Llama architecture), voxtral-spec.md section 4: RMSNorm, grouped-query causal
 * attention with rotate-half RoPE over a KV cache, SwiGLU MLP, final norm, untied lm_head. */
#include <math.h>
#include <stdlib.h>

#include "pipeline/pipeline.h"

vox_status vox_kv_cache_init(vox_model *m, vox_kv_cache *c, int64_t capacity, vox_error *err) {
    const vox_decoder_config *d = &m->cfg.decoder;
    c->n_layers = d->layers;
    c->capacity = capacity;
    c->len = 0;
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
    for (int l = 0; l < c->n_layers; l++) {
        if (c->k) vox_tensor_free(m->be, &c->k[l]);
        if (c->v) vox_tensor_free(m->be, &c->v[l]);
    }
    free(c->k);
    free(c->v);
    c->k = c->v = NULL;
    c->n_layers = 0;
}

typedef struct {
    vox_tensor h, q, k, v, attn, gate, up;
} decoder_work;

vox_status vox_decoder_forward(vox_model *m, vox_kv_cache *c, vox_tensor *x, vox_tensor *logits,
                               vox_error *err) {
    vox_backend *be = m->be;
    const vox_decoder_config *d = &m->cfg.decoder;
    int64_t T = x->shape[0], pos0 = c->len;
    VOX_ASSERT(T >= 1);
    if (pos0 + T > c->capacity)
        return vox_fail(err, VOX_ERR_TOO_LONG, "text_decoder: %lld positions exceed the cache of %lld",
                        (long long)(pos0 + T), (long long)c->capacity);
    int64_t QD = (int64_t)d->heads * d->head_dim, KD = (int64_t)d->kv_heads * d->head_dim;
    vox_dtype a = be->act_type;
    float eps = (float)d->rms_norm_eps;
    decoder_work w = {0};
    vox_status st;
    if ((st = vox_tensor_new2(be, &w.h, a, T, d->hidden, err)) ||
        (st = vox_tensor_new2(be, &w.q, a, T, QD, err)) ||
        (st = vox_tensor_new2(be, &w.k, a, T, KD, err)) ||
        (st = vox_tensor_new2(be, &w.v, a, T, KD, err)) ||
        (st = vox_tensor_new2(be, &w.attn, a, T, QD, err)) ||
        (st = vox_tensor_new2(be, &w.gate, a, T, d->ffn_dim, err)) ||
        (st = vox_tensor_new2(be, &w.up, a, T, d->ffn_dim, err))) {
        vox_error_prefix(err, "text_decoder workspace for %lld positions", (long long)T);
        goto done;
    }
    for (int l = 0; l < d->layers; l++) {
        const vox_decoder_layer *L = &m->dec_layers[l];
        /* x += o(attention(rope(q), cache(rope(k)), cache(v))) of RMSNorm(x) */
        be->rms_norm(be, &w.h, x, &L->attn_norm, eps);
        be->matmul(be, &w.q, &w.h, &L->q, NULL);
        be->matmul(be, &w.k, &w.h, &L->k, NULL);
        be->matmul(be, &w.v, &w.h, &L->v, NULL);
        be->rope(be, &w.q, d->heads, d->head_dim, pos0, d->rope_theta);
        be->rope(be, &w.k, d->kv_heads, d->head_dim, pos0, d->rope_theta);
        vox_tensor k_dst = vox_tensor_rows(&c->k[l], pos0, T), v_dst = vox_tensor_rows(&c->v[l], pos0, T);
        be->copy(be, &k_dst, &w.k);
        be->copy(be, &v_dst, &w.v);
        vox_tensor k_all = vox_tensor_rows(&c->k[l], 0, pos0 + T), v_all = vox_tensor_rows(&c->v[l], 0, pos0 + T);
        be->attention(be, &w.attn, &w.q, &k_all, &v_all, 1, (int)T, (int)(pos0 + T), d->heads,
                      d->kv_heads, d->head_dim, 1.0f / sqrtf((float)d->head_dim), true, pos0);
        be->matmul(be, &w.h, &w.attn, &L->o, NULL);
        be->add(be, x, x, &w.h);
        /* x += down(silu(gate(h)) * up(h)), h = RMSNorm(x) */
        be->rms_norm(be, &w.h, x, &L->ffn_norm, eps);
        be->matmul(be, &w.gate, &w.h, &L->gate, NULL);
        be->matmul(be, &w.up, &w.h, &L->up, NULL);
        be->silu_mul(be, &w.gate, &w.gate, &w.up);
        be->matmul(be, &w.h, &w.gate, &L->down, NULL);
        be->add(be, x, x, &w.h);
    }
    c->len = pos0 + T;
    /* Only the last position's logits are needed to choose the next token. */
    vox_tensor last = vox_tensor_rows(x, T - 1, 1), last_h = vox_tensor_rows(&w.h, 0, 1);
    be->rms_norm(be, &last_h, &last, &m->dec_norm, eps);
    be->matmul(be, logits, &last_h, &m->lm_head, NULL);
done:
    vox_tensor_free(be, &w.h);
    vox_tensor_free(be, &w.q);
    vox_tensor_free(be, &w.k);
    vox_tensor_free(be, &w.v);
    vox_tensor_free(be, &w.attn);
    vox_tensor_free(be, &w.gate);
    vox_tensor_free(be, &w.up);
    return st;
}
