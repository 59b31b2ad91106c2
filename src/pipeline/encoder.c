/* Audio encoder (Whisper large-v3 encoder) and projector, voxtral-spec.md sections 2 and 3.
 *
 * Per 30 s chunk: conv1 (k3, s1) + GELU, conv2 (k3, s2) + GELU -> [1500, d], + positions (fp32),
 * 32 pre-LayerNorm layers with bidirectional attention, final LayerNorm; then the projector sees
 * each 4 consecutive frames as one row [375, 4d] -> linear1 -> GELU -> linear2. */
#include <math.h>

#include "common/env.h"

#include "pipeline/pipeline.h"

int vox_encoder_group_chunks(const vox_backend *be) {
    int own = be->encoder_group >= 1 && be->encoder_group <= VOX_ENCODER_GROUP_MAX ? be->encoder_group : 1;
    return (int)vox_env_size("VOX_ENCODER_GROUP", (size_t)own, 1, VOX_ENCODER_GROUP_MAX);
}

int vox_encoder_tokens_per_chunk(const vox_model *m) {
    return m->cfg.encoder.max_source_positions / m->cfg.encoder.downsample_factor;
}

/* The encoder's workspace for a group of chunks. */
typedef struct {
    vox_tensor conv1, x, h, q, k, v, attn, ffn;
} encoder_work;

static void work_free(vox_backend *be, encoder_work *w) {
    vox_tensors_free(be, (vox_tensor *)w, sizeof *w / sizeof(vox_tensor));
}

static vox_status work_alloc(vox_model *m, encoder_work *w, int64_t B, vox_error *err) {
    vox_backend *be = m->be;
    const vox_encoder_config *e = &m->cfg.encoder;
    vox_dtype a = be->act_type;
    int64_t t_in = 2 * (int64_t)e->max_source_positions, T = B * e->max_source_positions;
    /* the ffn buffer [T, ffn] also holds the projector's linear1 output [T / downsample, proj]:
     * rows enough for the larger of the two */
    int64_t proj_rows = (T / e->downsample_factor * e->projector_dim + e->ffn_dim - 1) / e->ffn_dim;
    int64_t ffn_rows = proj_rows > T ? proj_rows : T;
    vox_status st;
    if ((st = vox_tensor_new2(be, &w->conv1, a, B * t_in, e->d_model, err)) ||
        (st = vox_tensor_new2(be, &w->x, a, T, e->d_model, err)) ||
        (st = vox_tensor_new2(be, &w->h, a, T, e->d_model, err)) ||
        (st = vox_tensor_new2(be, &w->q, a, T, e->d_model, err)) ||
        (st = vox_tensor_new2(be, &w->k, a, T, e->d_model, err)) ||
        (st = vox_tensor_new2(be, &w->v, a, T, e->d_model, err)) ||
        (st = vox_tensor_new2(be, &w->attn, a, T, e->d_model, err)) ||
        (st = vox_tensor_new2(be, &w->ffn, a, ffn_rows, e->ffn_dim, err))) {
        work_free(be, w);
        vox_error_prefix(err, "audio_encoder workspace for %lld chunks", (long long)B);
    }
    return st;
}

static void encoder_layer(vox_model *m, const vox_encoder_layer *L, encoder_work *w, int B) {
    vox_backend *be = m->be;
    const vox_encoder_config *e = &m->cfg.encoder;
    float eps = (float)e->layer_norm_eps;
    int T = e->max_source_positions;
    /* x += o(attention(LN1(x))); the residual adds go into the GEMM where the backend fuses them */
    be->layer_norm(be, &w->h, &w->x, &L->attn_norm_w, &L->attn_norm_b, eps);
    be->matmul(be, &w->q, &w->h, &L->q_w, &L->q_b);
    be->matmul(be, &w->k, &w->h, &L->k_w, NULL);
    be->matmul(be, &w->v, &w->h, &L->v_w, &L->v_b);
    be->attention(be, &w->attn, &w->q, &w->k, &w->v, B, T, T, e->heads, e->heads, e->head_dim,
                  1.0f / sqrtf((float)e->head_dim), false, 0);
    vox_project(be, &(vox_projection){.y = &w->x, .x = &w->attn, .w = &L->o_w, .bias = &L->o_b,
                                      .out = VOX_PROJ_ADD},
                NULL, &w->h);
    /* x += fc2(GELU(fc1(LN2(x)))) */
    be->layer_norm(be, &w->h, &w->x, &L->ffn_norm_w, &L->ffn_norm_b, eps);
    be->matmul(be, &w->ffn, &w->h, &L->fc1_w, &L->fc1_b);
    be->gelu(be, &w->ffn);
    vox_project(be, &(vox_projection){.y = &w->x, .x = &w->ffn, .w = &L->fc2_w, .bias = &L->fc2_b,
                                      .out = VOX_PROJ_ADD},
                NULL, &w->h);
}

/* One group of B chunks: features [B, mel, 3000] -> embeds rows [B * 375, hidden]. Returns
 * false, with the group unfinished, once stop(stop_arg) says so (asked between layers). */
static bool encode_group(vox_model *m, const encoder_work *w, const vox_tensor *feats, int B,
                         vox_tensor *out, bool (*stop)(void *), void *stop_arg) {
    vox_backend *be = m->be;
    const vox_encoder_config *e = &m->cfg.encoder;
    int T = e->max_source_positions, t_in = 2 * T;
    /* Views sized for this group (the workspace may be larger). */
    encoder_work g = *w;
    g.conv1 = vox_tensor_rows(&w->conv1, 0, (int64_t)B * t_in);
    vox_tensor *full[] = {&g.x, &g.h, &g.q, &g.k, &g.v, &g.attn, &g.ffn};
    for (size_t i = 0; i < sizeof full / sizeof *full; i++)
        *full[i] = vox_tensor_rows(full[i], 0, (int64_t)B * T);

    be->conv1d_k3(be, &g.conv1, feats, true, B, t_in, &m->conv1_w, &m->conv1_b, 1);
    be->gelu(be, &g.conv1);
    be->conv1d_k3(be, &g.x, &g.conv1, false, B, t_in, &m->conv2_w, &m->conv2_b, 2);
    be->gelu(be, &g.x);
    be->add_rows_f32(be, &g.x, &m->positions);
    for (int l = 0; l < e->layers; l++) {
        if (stop && stop(stop_arg)) return false;
        encoder_layer(m, &m->enc_layers[l], &g, B);
    }
    be->layer_norm(be, &g.x, &g.x, &m->enc_norm_w, &m->enc_norm_b, (float)e->layer_norm_eps);

    /* Projector: [B*T, d] seen as [B*T/4, 4d] (4 consecutive frames a row; never crossing a
     * chunk since T is a multiple of 4). The ffn buffer holds linear1's output. */
    int64_t rows = (int64_t)B * T / e->downsample_factor;
    vox_tensor grouped = vox_tensor_reshape2(&g.x, rows, (int64_t)e->d_model * e->downsample_factor);
    vox_tensor hidden = vox_tensor_reshape2(&w->ffn, (int64_t)vox_tensor_numel(&w->ffn) / e->projector_dim,
                                            e->projector_dim);
    hidden = vox_tensor_rows(&hidden, 0, rows);
    be->matmul(be, &hidden, &grouped, &m->proj1, NULL);
    be->gelu(be, &hidden);
    be->matmul(be, out, &hidden, &m->proj2, NULL);
    return true;
}

vox_status vox_encoder_forward(vox_model *m, const vox_tensor *features, size_t n_chunks,
                               int max_group, bool (*stop)(void *), void *stop_arg,
                               vox_tensor *embeds, vox_error *err) {
    const vox_encoder_config *e = &m->cfg.encoder;
    VOX_ASSERT(e->max_source_positions % e->downsample_factor == 0);
    int per_chunk = vox_encoder_tokens_per_chunk(m);
    int most = vox_encoder_group_chunks(m->be);
    if (max_group >= 1 && max_group < most) most = max_group;
    int group = n_chunks < (size_t)most ? (int)n_chunks : most;
    encoder_work w = {0};
    vox_status st = work_alloc(m, &w, group, err);
    if (st) return st;
    VOX_ASSERT(features->shape[0] == (int64_t)n_chunks);
    for (size_t c = 0; c < n_chunks; c += (size_t)group) {
        int B = n_chunks - c < (size_t)group ? (int)(n_chunks - c) : group;
        vox_tensor out = vox_tensor_rows(embeds, (int64_t)c * per_chunk, (int64_t)B * per_chunk);
        vox_tensor feats = vox_tensor_rows(features, (int64_t)c, B);
        if (!encode_group(m, &w, &feats, B, &out, stop, stop_arg)) {
            st = vox_fail(err, VOX_ERR_INTERRUPTED, "interrupted");
            break;
        }
    }
    work_free(m->be, &w);
    return st;
}
