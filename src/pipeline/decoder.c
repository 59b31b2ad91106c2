/* Text decoder (Llama architecture), voxtral-spec.md section 4: RMSNorm, grouped-query causal
 * attention with rotate-half RoPE over a paged KV cache, SwiGLU MLP, final norm, untied lm_head.
 *
 * One step runs the decoder over a batch (backend.h's vox_batch): one row for each sequence that
 * is decoding, plus chunks of the prompts of sequences being prefilled. Every operation is
 * row-wise but attention, which reads each sequence's own keys through its block table, so a
 * row's result does not depend on what it is batched with. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/env.h"
#include "pipeline/pipeline.h"

/* ---- the paged KV pool ----------------------------------------------------------------------- */

size_t vox_kv_bytes_per_position(const vox_model *m) {
    const vox_decoder_config *d = &m->cfg.decoder;
    return (size_t)2 * d->layers * d->kv_heads * d->head_dim * vox_dtype_size(m->be->act_type);
}

vox_status vox_kv_pool_init(vox_model *m, vox_kv_pool *p, int n_blocks, int block_size,
                            vox_error *err) {
    const vox_decoder_config *d = &m->cfg.decoder;
    memset(p, 0, sizeof *p);
    VOX_ASSERT(n_blocks >= 2 && block_size >= 1);
    int64_t rows = (int64_t)n_blocks * block_size, width = (int64_t)d->kv_heads * d->head_dim;
    p->k_layer = calloc((size_t)d->layers, sizeof *p->k_layer);
    p->v_layer = calloc((size_t)d->layers, sizeof *p->v_layer);
    p->free_blocks = malloc((size_t)n_blocks * sizeof *p->free_blocks);
    if (!p->k_layer || !p->v_layer || !p->free_blocks) {
        vox_kv_pool_free(m, p);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    vox_status st;
    if ((st = vox_tensor_new2(m->be, &p->k, m->be->act_type, d->layers * rows, width, err)) ||
        (st = vox_tensor_new2(m->be, &p->v, m->be->act_type, d->layers * rows, width, err))) {
        vox_error_prefix(err, "KV cache of %d blocks of %d positions", n_blocks, block_size);
        vox_kv_pool_free(m, p);
        return st;
    }
    p->n_layers = d->layers;
    p->n_blocks = n_blocks;
    p->block_size = block_size;
    for (int l = 0; l < d->layers; l++) {
        p->k_layer[l] = vox_tensor_rows(&p->k, l * rows, rows);
        p->v_layer[l] = vox_tensor_rows(&p->v, l * rows, rows);
    }
    /* block 0 is the padding rows' scratch; hand out low ids first */
    for (int b = n_blocks - 1; b >= 1; b--) p->free_blocks[p->n_free++] = b;
    return VOX_OK;
}

void vox_kv_pool_free(vox_model *m, vox_kv_pool *p) {
    vox_tensor_free(m->be, &p->k);
    vox_tensor_free(m->be, &p->v);
    free(p->k_layer);
    free(p->v_layer);
    free(p->free_blocks);
    memset(p, 0, sizeof *p);
}

int32_t vox_kv_pool_take(vox_kv_pool *p) { return p->n_free > 0 ? p->free_blocks[--p->n_free] : -1; }

void vox_kv_pool_give(vox_kv_pool *p, const int32_t *blocks, int n) {
    for (int i = 0; i < n; i++) {
        VOX_ASSERT(blocks[i] >= 1 && blocks[i] < p->n_blocks && p->n_free < p->n_blocks - 1);
        p->free_blocks[p->n_free++] = blocks[i];
    }
}

/* ---- step workspace -------------------------------------------------------------------------- */

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
        vox_error_prefix(err, "text_decoder workspace for %lld rows", (long long)T);
    }
    return st;
}

/* The padded copy of a decode-only batch needs, per row: id, pos, slot, row0, len, table row,
 * logit row. */
static size_t pad_ints(int rows, int table_width) {
    return (size_t)rows * (6 + (size_t)table_width) + 1;
}

vox_status vox_decoder_batch_init(vox_model *m, vox_decoder_batch *d, int max_rows, int max_seqs,
                                  int table_width, int block_size, vox_error *err) {
    const vox_decoder_config *c = &m->cfg.decoder;
    vox_backend *be = m->be;
    memset(d, 0, sizeof *d);
    VOX_ASSERT(max_rows >= max_seqs && max_seqs >= 1);
    d->max_rows = max_rows;
    d->max_seqs = max_seqs;
    d->max_logits = max_seqs;
    d->table_width = table_width;
    d->block_size = block_size;
    vox_status st;
    if ((st = vox_tensor_new2(be, &d->x, be->act_type, max_rows, c->hidden, err)) ||
        (st = work_alloc(m, &d->w, max_rows, err)) ||
        (st = vox_tensor_new2(be, &d->last, be->act_type, d->max_logits, c->hidden, err)) ||
        (st = vox_tensor_new2(be, &d->last_h, be->act_type, d->max_logits, c->hidden, err)) ||
        (st = vox_tensor_new2(be, &d->logits, be->act_type, d->max_logits, c->vocab_size, err)) ||
        (st = be->batch_reserve(be, max_rows, max_seqs, table_width, block_size, c->heads,
                                c->head_dim, err))) {
        vox_decoder_batch_free(m, d);
        return st;
    }
    if (!(d->pad = malloc(pad_ints(max_seqs, table_width) * sizeof *d->pad)) ||
        !(d->fused = calloc((size_t)c->layers, sizeof *d->fused))) {
        vox_decoder_batch_free(m, d);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    return VOX_OK;
}

void vox_decoder_batch_free(vox_model *m, vox_decoder_batch *d) {
    vox_backend *be = m->be;
    for (int i = 0; i < d->n_graphs; i++)
        if (d->graphs[i].graph) be->graph_free(be, d->graphs[i].graph);
    work_free(be, &d->w);
    vox_tensor_free(be, &d->x);
    vox_tensor_free(be, &d->last);
    vox_tensor_free(be, &d->last_h);
    vox_tensor_free(be, &d->logits);
    free(d->pad);
    free(d->fused);
    memset(d, 0, sizeof *d);
}

/* ---- the forward pass ------------------------------------------------------------------------ */

/* Enqueues the step over the current batch (n_rows rows, n_decode of them embedded here). */
static void decoder_layers(vox_model *m, vox_kv_pool *kv, vox_decoder_batch *d, int n_rows,
                           int n_decode, int n_logits) {
    vox_backend *be = m->be;
    const vox_decoder_config *c = &m->cfg.decoder;
    float eps = (float)c->rms_norm_eps;
    vox_tensor x = vox_tensor_rows(&d->x, 0, n_rows);
    vox_decoder_work w = d->w;
    vox_tensor *ws[] = {&w.h, &w.qkv, &w.q, &w.attn, &w.gate_up, &w.act};
    for (size_t i = 0; i < sizeof ws / sizeof *ws; i++) *ws[i] = vox_tensor_rows(ws[i], 0, n_rows);
    if (n_decode > 0) {
        vox_tensor xd = vox_tensor_rows(&d->x, 0, n_decode);
        be->embed_batch(be, &xd, &m->embedding);
    }
    /* sequences only decoding (a row each): the whole step as one operation where the backend
     * has it for this many rows */
    if (n_decode == n_rows && n_logits == n_rows && be->decode_fused) {
        for (int l = 0; l < c->layers; l++) {
            const vox_decoder_layer *L = &m->dec_layers[l];
            d->fused[l] = (vox_fused_layer){.attn_norm = &L->attn_norm, .qkv = &L->qkv, .o = &L->o,
                                            .ffn_norm = &L->ffn_norm, .gate_up = &L->gate_up,
                                            .down = &L->down, .k_pool = &kv->k_layer[l],
                                            .v_pool = &kv->v_layer[l]};
        }
        vox_tensor logits = vox_tensor_rows(&d->logits, 0, n_rows);
        if (be->decode_fused(be, &(vox_fused_decode){
                                     .layers = d->fused, .n_layers = c->layers, .heads = c->heads,
                                     .kv_heads = c->kv_heads, .head_dim = c->head_dim, .eps = eps,
                                     .attn_scale = 1.0f / sqrtf((float)c->head_dim),
                                     .theta = c->rope_theta, .x = &x, .final_norm = &m->dec_norm,
                                     .lm_head = &m->lm_head, .logits = &logits}))
            return;
    }
    for (int l = 0; l < c->layers; l++) {
        const vox_decoder_layer *L = &m->dec_layers[l];
        /* x += o(attention(rope(q), cache(rope(k)), cache(v))), q|k|v from RMSNorm(x) */
        vox_project(be,
                &(vox_projection){.y = &w.q, .x = &x, .w = &L->qkv, .norm_w = &L->attn_norm,
                                  .eps = eps, .out = VOX_PROJ_ROPE_CACHE, .k_pool = &kv->k_layer[l],
                                  .v_pool = &kv->v_layer[l], .n_heads = c->heads,
                                  .n_kv_heads = c->kv_heads, .head_dim = c->head_dim,
                                  .theta = c->rope_theta},
                &w.h, &w.qkv);
        be->paged_attention(be, &w.attn, &w.q, &kv->k_layer[l], &kv->v_layer[l], c->heads,
                            c->kv_heads, c->head_dim, 1.0f / sqrtf((float)c->head_dim));
        vox_project(be, &(vox_projection){.y = &x, .x = &w.attn, .w = &L->o, .out = VOX_PROJ_ADD},
                &w.h, &w.h);
        /* x += down(silu(gate(h)) * up(h)), h = RMSNorm(x) */
        vox_project(be,
                &(vox_projection){.y = &w.act, .x = &x, .w = &L->gate_up, .norm_w = &L->ffn_norm,
                                  .eps = eps, .out = VOX_PROJ_SWIGLU},
                &w.h, &w.gate_up);
        vox_project(be, &(vox_projection){.y = &x, .x = &w.act, .w = &L->down, .out = VOX_PROJ_ADD},
                &w.h, &w.h);
    }
    /* Logits only for the rows that choose a token: decode rows and the last row of a prompt. */
    if (n_logits == 0) return;
    vox_tensor last = vox_tensor_rows(&d->last, 0, n_logits);
    vox_tensor last_h = vox_tensor_rows(&d->last_h, 0, n_logits);
    vox_tensor logits = vox_tensor_rows(&d->logits, 0, n_logits);
    be->gather_rows(be, &last, &x);
    vox_project(be,
            &(vox_projection){.y = &logits, .x = &last, .w = &m->lm_head, .norm_w = &m->dec_norm,
                              .eps = eps, .out = VOX_PROJ_STORE},
            &last_h, NULL);
}

/* VOX_RECORD_AFTER (graphs.c), or VOX_GRAPH_RECORD_AFTER=N (0: every bucket recorded at once,
 * as before 2026-12-02; for A/B runs). */
static int record_after(void) {
    return (int)vox_env_size("VOX_GRAPH_RECORD_AFTER", VOX_RECORD_AFTER, 0, INT_MAX);
}

static bool graphs_enabled(const vox_backend *be) {
    return be->graph_begin && !vox_env_flag("VOX_NO_GRAPHS");
}

/* A decode-only batch of n sequences grown to `rows` with padding sequences: token 0 at position
 * 0, written to the reserved block 0, whose logits nobody reads. */
static vox_batch pad_batch(vox_decoder_batch *d, const vox_batch *b, int rows) {
    int n = b->n_rows, tw = b->table_width;
    int32_t *ids = d->pad, *pos = ids + rows, *slot = pos + rows, *row0 = slot + rows,
            *len = row0 + rows + 1, *lrows = len + rows, *tables = lrows + rows;
    memcpy(ids, b->ids, (size_t)n * sizeof *ids);
    memcpy(pos, b->row_pos, (size_t)n * sizeof *pos);
    memcpy(slot, b->row_slot, (size_t)n * sizeof *slot);
    memcpy(len, b->seq_len, (size_t)n * sizeof *len);
    memcpy(tables, b->tables, (size_t)n * tw * sizeof *tables);
    for (int i = n; i < rows; i++) {
        ids[i] = 0;
        pos[i] = 0;
        slot[i] = i % b->block_size; /* rows of block 0 */
        len[i] = 1;
        for (int j = 0; j < tw; j++) tables[(size_t)i * tw + j] = 0;
    }
    for (int i = 0; i <= rows; i++) row0[i] = i;
    for (int i = 0; i < rows; i++) lrows[i] = i;
    vox_batch p = *b;
    p.n_rows = p.n_seqs = p.n_decode = p.n_logits = rows;
    p.ids = ids, p.row_pos = pos, p.row_slot = slot, p.seq_row0 = row0, p.seq_len = len;
    p.tables = tables, p.logit_rows = lrows;
    return p;
}

vox_status vox_decoder_batch_step(vox_model *m, vox_kv_pool *kv, vox_decoder_batch *d,
                                  const vox_batch *b, vox_error *err) {
    vox_backend *be = m->be;
    VOX_ASSERT(b->n_rows >= 1 && b->n_rows <= d->max_rows && b->n_seqs <= d->max_seqs &&
               b->n_logits <= d->max_logits && b->table_width <= d->table_width &&
               b->block_size == kv->block_size);
    bool decode_only = b->n_decode == b->n_rows && b->n_seqs == b->n_rows && b->n_logits == b->n_rows;
    vox_graph_plan plan = {.g = NULL, .rows = b->n_rows};
    vox_batch padded;
    const vox_batch *run = b;
    if (decode_only && graphs_enabled(be)) {
        plan = vox_decoder_graph_plan(d, b->n_rows, record_after());
        if (plan.g && plan.rows != b->n_rows) {
            padded = pad_batch(d, b, plan.rows);
            run = &padded;
        }
    }
    vox_status st = be->batch_set(be, run, err);
    if (st) return st;
    vox_decoder_graph *g = plan.g;
    if (!g) {
        decoder_layers(m, kv, d, run->n_rows, run->n_decode, run->n_logits);
        return VOX_OK;
    }
    if (plan.record) {
        be->graph_begin(be);
        decoder_layers(m, kv, d, run->n_rows, run->n_decode, run->n_logits);
        if ((st = be->graph_end(be, &g->graph, err))) return st;
    }
    if (g->graph) return be->graph_replay(be, g->graph, err);
    decoder_layers(m, kv, d, run->n_rows, run->n_decode, run->n_logits);
    g->runs++;
    return VOX_OK;
}
