/* The CPU backend: portable C, float32 activations, simple loops (OpenMP over rows).
 *
 * It is the readable reference the CUDA backend is tested against, and the path CI runs; speed
 * is not its goal. Weights stay where the loader mapped them (F32, BF16, F16, or F8_E4M3 with
 * row scales) and are converted to float32 a row at a time as they are used. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "common/fp8.h"
#include "mel/mel.h"

#define CPU_MAX_MARKS 4096

typedef struct {
    size_t live, peak;
    double marks[CPU_MAX_MARKS];
    int n_marks;
    /* the current batch (batch_set copies it here; arrays sized by batch_reserve) */
    vox_batch batch;
    int32_t *ids, *row_pos, *row_slot, *seq_row0, *seq_len, *tables, *logit_rows;
    int max_rows, max_seqs, max_table;
} cpu_state;

static double wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int64_t rows_of(const vox_tensor *t) { return t->shape[0]; }
static int64_t cols_of(const vox_tensor *t) {
    return (int64_t)(vox_tensor_numel(t) / (t->shape[0] ? (size_t)t->shape[0] : 1));
}

/* Row i of a 2-D view of t as float32: a pointer into t when it is F32, else converted into buf. */
static const float *row_f32(const vox_tensor *t, int64_t i, int64_t cols, float *buf) {
    size_t off = (size_t)i * (size_t)cols;
    if (t->dtype == VOX_DTYPE_F32) return (const float *)t->data + off;
    const char *base = (const char *)t->data + off * vox_dtype_size(t->dtype);
    int ok = vox_to_f32(buf, base, t->dtype, (size_t)cols);
    VOX_ASSERT(ok);
    return buf;
}

/* Whether a loop of about `ops` multiply-adds (or elementwise operations) is worth OpenMP's
 * threads. Every parallel region ends with its threads waiting for the slowest, and on a busy
 * machine (other processes, `ctest -j`, this process's own reader threads) a thread that has lost
 * its core holds the others for a scheduler time slice, milliseconds: the tiny model's decode
 * step, ~40 regions of microseconds, took 1 to 136 ms a token with two threads beside two busy
 * loops against 0.3-0.6 on one thread. Below ~1 M operations (~0.1-0.3 ms on one core) a region
 * runs on the calling thread alone. Every element is computed the same way either way. */
static int worth_threads(double ops) { return ops >= (double)(1 << 20); }

static float *act(const vox_tensor *t) {
    VOX_ASSERT(t->dtype == VOX_DTYPE_F32);
    return (float *)t->data;
}

/* ---- memory ---------------------------------------------------------------------------------- */

static vox_status cpu_alloc(vox_backend *be, vox_tensor *t, vox_error *err) {
    cpu_state *s = be->impl;
    size_t bytes = vox_tensor_nbytes(t);
    t->data = calloc(1, bytes ? bytes : 1);
    if (!t->data)
        return vox_fail(err, VOX_ERR_NOMEM, "cpu: cannot allocate %zu bytes", bytes);
    s->live += bytes;
    if (s->live > s->peak) s->peak = s->live;
    return VOX_OK;
}

static void cpu_free(vox_backend *be, vox_tensor *t) {
    cpu_state *s = be->impl;
    s->live -= vox_tensor_nbytes(t);
    free(t->data);
    t->data = NULL;
}

static vox_status cpu_weight(vox_backend *be, vox_tensor *dst, const void *src, vox_dtype type,
                             int ndim, const int64_t *shape, bool keep_f32, const float *scale,
                             vox_error *err) {
    (void)be, (void)keep_f32; /* every type is read as float32 here */
    bool fp8 = type == VOX_DTYPE_F8_E4M3;
    if (type != VOX_DTYPE_F32 && type != VOX_DTYPE_BF16 && type != VOX_DTYPE_F16 && !fp8)
        return vox_fail(err, VOX_ERR_UNSUPPORTED, "cpu: weights of type %s are not supported",
                        vox_dtype_name(type));
    VOX_ASSERT(fp8 == (scale != NULL) && (!fp8 || ndim == 2));
    if ((uintptr_t)src % vox_dtype_size(type) != 0 || (uintptr_t)scale % sizeof(float) != 0)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "data is not aligned to its %zu-byte elements (written by another tool? "
                        "re-export the model with voxtral_export)", vox_dtype_size(type));
    memset(dst, 0, sizeof *dst);
    dst->scale = (float *)scale; /* a view too */
    dst->data = (void *)src; /* a view of the mapped file: read-only by contract */
    dst->dtype = type;
    dst->ndim = ndim;
    for (int i = 0; i < ndim; i++) dst->shape[i] = shape[i];
    return VOX_OK;
}

static void cpu_free_weight(vox_backend *be, vox_tensor *t) {
    (void)be;
    t->data = NULL; /* a view of the mapping, which the model closes */
}

static void cpu_upload_f32(vox_backend *be, vox_tensor *t, const float *src, size_t n) {
    (void)be;
    VOX_ASSERT(n <= vox_tensor_numel(t));
    memcpy(act(t), src, n * sizeof(float));
}

static vox_status cpu_download_f32(vox_backend *be, float *dst, const vox_tensor *t, size_t n,
                                   vox_error *err) {
    (void)be, (void)err;
    VOX_ASSERT(n <= vox_tensor_numel(t));
    vox_to_f32(dst, t->data, t->dtype, n);
    return VOX_OK;
}

static vox_status cpu_sync(vox_backend *be, vox_error *err) {
    (void)be, (void)err;
    return VOX_OK;
}

/* ---- compute --------------------------------------------------------------------------------- */

/* Dot product with eight partial sums: vectorises without -ffast-math. */
static float dot_f32(const float *a, const float *b, int64_t n) {
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* The rows of x quantized by the FP8 scheme: xq [M, K] the codes' values (exact in float32),
 * sx [M] the rows' scales. Each row alone, so batching cannot change a row's result. */
static void quantize_rows(const float *x, int64_t M, int64_t K, float *xq, float *sx) {
#pragma omp parallel if (worth_threads((double)M * K))
    {
        uint8_t *codes = malloc((size_t)K);
        VOX_ASSERT(codes);
#pragma omp for
        for (int64_t m = 0; m < M; m++) {
            sx[m] = vox_fp8_quantize_row(x + m * K, (size_t)K, codes);
            vox_to_f32(xq + m * K, codes, VOX_DTYPE_F8_E4M3, (size_t)K);
        }
        free(codes);
    }
}

static void cpu_matmul(vox_backend *be, vox_tensor *y, const vox_tensor *x, const vox_tensor *w,
                       const vox_tensor *bias) {
    (void)be;
    int64_t M = rows_of(x), K = cols_of(x), N = rows_of(w);
    VOX_ASSERT(cols_of(w) == K && rows_of(y) == M && cols_of(y) == N);
    const float *X = act(x);
    float *Y = act(y);
    /* FP8 weights: products of the E4M3 values of x's and w's rows, then s_x * s_w */
    const float *sw = w->dtype == VOX_DTYPE_F8_E4M3 ? w->scale : NULL;
    float *xq = NULL, *sx = NULL;
    if (sw) {
        xq = malloc((size_t)(M * K) * sizeof(float));
        sx = malloc((size_t)M * sizeof(float));
        VOX_ASSERT(xq && sx);
        quantize_rows(X, M, K, xq, sx);
        X = xq;
    }
    float *bias_f = NULL;
    if (bias) {
        VOX_ASSERT((int64_t)vox_tensor_numel(bias) == N);
        bias_f = malloc((size_t)N * sizeof(float));
        VOX_ASSERT(bias_f);
        vox_to_f32(bias_f, bias->data, bias->dtype, (size_t)N);
    }
    /* Weight rows in blocks, so that a converted block is reused by every row of x. */
    const int64_t NB = 64;
#pragma omp parallel if (worth_threads((double)M * N * K))
    {
        float *wbuf = malloc((size_t)(NB * K) * sizeof(float));
        VOX_ASSERT(wbuf);
#pragma omp for schedule(dynamic)
        for (int64_t n0 = 0; n0 < N; n0 += NB) {
            int64_t nb = N - n0 < NB ? N - n0 : NB;
            const float *wrows[64];
            for (int64_t j = 0; j < nb; j++) wrows[j] = row_f32(w, n0 + j, K, wbuf + j * K);
            for (int64_t m = 0; m < M; m++) {
                const float *xm = X + m * K;
                float *ym = Y + m * N + n0;
                for (int64_t j = 0; j < nb; j++) {
                    float v = dot_f32(xm, wrows[j], K);
                    if (sw) v *= sx[m] * sw[n0 + j];
                    ym[j] = v + (bias_f ? bias_f[n0 + j] : 0.0f);
                }
            }
        }
        free(wbuf);
    }
    free(bias_f);
    free(xq);
    free(sx);
}

static void cpu_layer_norm(vox_backend *be, vox_tensor *y, const vox_tensor *x,
                           const vox_tensor *w, const vox_tensor *b, float eps) {
    (void)be;
    int64_t M = rows_of(x), C = cols_of(x);
    float *wf = malloc((size_t)C * sizeof(float)), *bf = malloc((size_t)C * sizeof(float));
    VOX_ASSERT(wf && bf);
    vox_to_f32(wf, w->data, w->dtype, (size_t)C);
    vox_to_f32(bf, b->data, b->dtype, (size_t)C);
#pragma omp parallel for if (worth_threads((double)M * C))
    for (int64_t m = 0; m < M; m++) {
        const float *xm = act(x) + m * C;
        float *ym = act(y) + m * C;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < C; c++) mean += xm[c];
        mean /= (double)C;
        for (int64_t c = 0; c < C; c++) var += (xm[c] - mean) * (xm[c] - mean);
        var /= (double)C;
        float inv = (float)(1.0 / sqrt(var + eps));
        for (int64_t c = 0; c < C; c++) ym[c] = ((float)(xm[c] - mean) * inv) * wf[c] + bf[c];
    }
    free(wf);
    free(bf);
}

static void cpu_rms_norm(vox_backend *be, vox_tensor *y, const vox_tensor *x, const vox_tensor *w,
                         float eps) {
    (void)be;
    int64_t M = rows_of(x), C = cols_of(x);
    float *wf = malloc((size_t)C * sizeof(float));
    VOX_ASSERT(wf);
    vox_to_f32(wf, w->data, w->dtype, (size_t)C);
#pragma omp parallel for if (worth_threads((double)M * C))
    for (int64_t m = 0; m < M; m++) {
        const float *xm = act(x) + m * C;
        float *ym = act(y) + m * C;
        double ss = 0;
        for (int64_t c = 0; c < C; c++) ss += (double)xm[c] * xm[c];
        float inv = (float)(1.0 / sqrt(ss / (double)C + eps));
        for (int64_t c = 0; c < C; c++) ym[c] = wf[c] * (xm[c] * inv);
    }
    free(wf);
}

static void cpu_gelu(vox_backend *be, vox_tensor *x) {
    (void)be;
    float *p = act(x);
    size_t n = vox_tensor_numel(x);
#pragma omp parallel for if (worth_threads((double)n))
    for (size_t i = 0; i < n; i++) p[i] = 0.5f * p[i] * (1.0f + erff(p[i] * 0.70710678118654752f));
}

static void cpu_swiglu(vox_backend *be, vox_tensor *y, const vox_tensor *gate_up) {
    (void)be;
    int64_t M = rows_of(gate_up), F = cols_of(gate_up) / 2;
    VOX_ASSERT(cols_of(gate_up) == 2 * F && rows_of(y) == M && cols_of(y) == F);
    const float *gu = act(gate_up);
    float *o = act(y);
#pragma omp parallel for if (worth_threads((double)M * F))
    for (int64_t r = 0; r < M; r++)
        for (int64_t i = 0; i < F; i++) {
            float g = gu[r * 2 * F + i], u = gu[r * 2 * F + F + i];
            o[r * F + i] = (g / (1.0f + expf(-g))) * u;
        }
}

static void cpu_add(vox_backend *be, vox_tensor *y, const vox_tensor *a, const vox_tensor *b) {
    (void)be;
    size_t n = vox_tensor_numel(a);
    VOX_ASSERT(vox_tensor_numel(b) == n && vox_tensor_numel(y) == n);
    const float *pa = act(a), *pb = act(b);
    float *py = act(y);
    for (size_t i = 0; i < n; i++) py[i] = pa[i] + pb[i];
}

static void cpu_add_rows_f32(vox_backend *be, vox_tensor *x, const vox_tensor *p) {
    (void)be;
    VOX_ASSERT(p->dtype == VOX_DTYPE_F32);
    int64_t T = rows_of(p), C = cols_of(p);
    VOX_ASSERT(cols_of(x) == C && rows_of(x) % T == 0);
    float *px = act(x);
    const float *pp = p->data;
    for (int64_t r = 0; r < rows_of(x); r++)
        for (int64_t c = 0; c < C; c++) px[r * C + c] += pp[(r % T) * C + c];
}

static void cpu_conv1d_k3(vox_backend *be, vox_tensor *y, const vox_tensor *x,
                          bool x_channels_first, int batch, int t_in, const vox_tensor *w,
                          const vox_tensor *bias, int stride) {
    (void)be;
    int64_t c_out = w->shape[0], c_in = w->shape[1];
    VOX_ASSERT(w->ndim == 3 && w->shape[2] == 3);
    int t_out = (t_in - 1) / stride + 1;
    VOX_ASSERT(rows_of(y) == (int64_t)batch * t_out && cols_of(y) == c_out);
    VOX_ASSERT(vox_tensor_numel(x) == (size_t)batch * (size_t)t_in * (size_t)c_in);
    float *bf = malloc((size_t)c_out * sizeof(float));
    VOX_ASSERT(bf);
    vox_to_f32(bf, bias->data, bias->dtype, (size_t)c_out);
    const float *X = act(x);
    float *Y = act(y);
    /* Gather each output step's input window as [c_in * 3] (matching w's layout), then dot. */
#pragma omp parallel if (worth_threads((double)batch * t_out * c_in * 3 * c_out))
    {
        float *win = malloc((size_t)(c_in * 3) * sizeof(float));
        float *wrow = malloc((size_t)(c_in * 3) * sizeof(float));
        VOX_ASSERT(win && wrow);
#pragma omp for
        for (int64_t bt = 0; bt < (int64_t)batch * t_out; bt++) {
            int64_t b = bt / t_out, t = bt % t_out;
            for (int64_t ci = 0; ci < c_in; ci++) {
                for (int k = 0; k < 3; k++) {
                    int64_t ti = t * stride + k - 1;
                    float v = 0.0f;
                    if (ti >= 0 && ti < t_in)
                        v = x_channels_first ? X[(b * c_in + ci) * t_in + ti]
                                             : X[(b * t_in + ti) * c_in + ci];
                    win[ci * 3 + k] = v;
                }
            }
            for (int64_t co = 0; co < c_out; co++) {
                const float *wr = row_f32(w, co, c_in * 3, wrow);
                Y[bt * c_out + co] = dot_f32(win, wr, c_in * 3) + bf[co];
            }
        }
        free(win);
        free(wrow);
    }
    free(bf);
}

/* Rotates each head of row t of x [T, n_heads * head_dim] by position pos[t]. */
static void rope_rows(float *x, int64_t T, int n_heads, int head_dim, const int32_t *pos,
                      double theta) {
    VOX_ASSERT(head_dim % 2 == 0);
    int half = head_dim / 2;
    for (int64_t t = 0; t < T; t++) {
        for (int i = 0; i < half; i++) {
            /* As transformers: inv_freq in fp32, angle = position * inv_freq in fp32, then
             * cos/sin of that fp32 angle. */
            float inv_freq = (float)(1.0 / pow(theta, (double)(2 * i) / head_dim));
            float angle = (float)pos[t] * inv_freq;
            float c = cosf(angle), s = sinf(angle);
            for (int h = 0; h < n_heads; h++) {
                float *v = x + t * n_heads * head_dim + h * head_dim;
                float a = v[i], b = v[i + half];
                v[i] = a * c - b * s;
                v[i + half] = b * c + a * s;
            }
        }
    }
}

/* ---- the decoder over a batch ---------------------------------------------------------------- */

static void cpu_embed(vox_backend *be, vox_tensor *y, const vox_tensor *table, const int32_t *ids,
                      size_t n);

static int32_t *copy_i32(int32_t *dst, const int32_t *src, int n) {
    if (n > 0) memcpy(dst, src, (size_t)n * sizeof *src);
    return dst;
}

static vox_status cpu_batch_reserve(vox_backend *be, int max_rows, int max_seqs, int table_width,
                                    int block_size, int n_heads, int head_dim, vox_error *err) {
    (void)block_size, (void)n_heads, (void)head_dim;
    cpu_state *s = be->impl;
    if (max_rows <= s->max_rows && max_seqs <= s->max_seqs &&
        (int64_t)max_seqs * table_width <= s->max_table)
        return VOX_OK;
    int32_t **arrays[] = {&s->ids, &s->row_pos, &s->row_slot, &s->seq_row0, &s->seq_len,
                          &s->tables, &s->logit_rows};
    size_t counts[] = {(size_t)max_seqs, (size_t)max_rows, (size_t)max_rows, (size_t)max_seqs + 1,
                       (size_t)max_seqs, (size_t)max_seqs * (size_t)table_width, (size_t)max_rows};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        free(*arrays[i]);
        if (!(*arrays[i] = malloc((counts[i] ? counts[i] : 1) * sizeof(int32_t)))) {
            s->max_rows = s->max_seqs = s->max_table = 0;
            return vox_fail(err, VOX_ERR_NOMEM, "cpu: out of memory for a batch of %d rows", max_rows);
        }
    }
    s->max_rows = max_rows;
    s->max_seqs = max_seqs;
    s->max_table = max_seqs * table_width;
    return VOX_OK;
}

static vox_status cpu_batch_set(vox_backend *be, const vox_batch *b, vox_error *err) {
    (void)err;
    cpu_state *s = be->impl;
    VOX_ASSERT(b->n_rows <= s->max_rows && b->n_seqs <= s->max_seqs && b->n_logits <= s->max_rows &&
               (int64_t)b->n_seqs * b->table_width <= s->max_table);
    s->batch = *b;
    s->batch.ids = copy_i32(s->ids, b->ids, b->n_decode);
    s->batch.row_pos = copy_i32(s->row_pos, b->row_pos, b->n_rows);
    s->batch.row_slot = copy_i32(s->row_slot, b->row_slot, b->n_rows);
    s->batch.seq_row0 = copy_i32(s->seq_row0, b->seq_row0, b->n_seqs + 1);
    s->batch.seq_len = copy_i32(s->seq_len, b->seq_len, b->n_seqs);
    s->batch.tables = copy_i32(s->tables, b->tables, b->n_seqs * b->table_width);
    s->batch.logit_rows = copy_i32(s->logit_rows, b->logit_rows, b->n_logits);
    return VOX_OK;
}

static void cpu_embed_batch(vox_backend *be, vox_tensor *y, const vox_tensor *table) {
    cpu_state *s = be->impl;
    cpu_embed(be, y, table, s->batch.ids, (size_t)s->batch.n_decode);
}

static void cpu_rope_cache(vox_backend *be, vox_tensor *q_out, vox_tensor *k_pool,
                           vox_tensor *v_pool, const vox_tensor *qkv, int n_heads, int n_kv_heads,
                           int head_dim, double theta) {
    const vox_batch *b = &((cpu_state *)be->impl)->batch;
    int64_t T = rows_of(qkv), QD = (int64_t)n_heads * head_dim, KD = (int64_t)n_kv_heads * head_dim;
    VOX_ASSERT(T == b->n_rows && cols_of(qkv) == QD + 2 * KD && rows_of(q_out) == T &&
               cols_of(q_out) == QD && cols_of(k_pool) == KD && cols_of(v_pool) == KD);
    const float *src = act(qkv);
    float *q = act(q_out), *k = act(k_pool), *v = act(v_pool);
    for (int64_t t = 0; t < T; t++) {
        int64_t slot = b->row_slot[t];
        VOX_ASSERT(slot >= 0 && slot < rows_of(k_pool));
        memcpy(q + t * QD, src + t * (QD + 2 * KD), (size_t)QD * sizeof(float));
        memcpy(k + slot * KD, src + t * (QD + 2 * KD) + QD, (size_t)KD * sizeof(float));
        memcpy(v + slot * KD, src + t * (QD + 2 * KD) + QD + KD, (size_t)KD * sizeof(float));
        rope_rows(k + slot * KD, 1, n_kv_heads, head_dim, &b->row_pos[t], theta);
    }
    rope_rows(q, T, n_heads, head_dim, b->row_pos, theta);
}

/* Softmax(q k^T * scale) v for one query row and head against n_keys keys, keys and values found
 * through key_row(j); the same loops as cpu_attention so that both give the same numbers. */
static void attend_row(float *o, const float *qi, const float *K, const float *V, int64_t ks,
                       int64_t head_off, int head_dim, float scale, int64_t n_keys,
                       const int32_t *table, int block_size, float *scores) {
    /* key j is row table[j / block_size] * block_size + j % block_size, walked block by block
     * (no division a key: it cost as much as the key's dot product at the encoder's head_dim) */
    float mx = -FLT_MAX;
    for (int64_t j0 = 0, b = 0; j0 < n_keys; j0 += block_size, b++) {
        const int64_t n = n_keys - j0 < block_size ? n_keys - j0 : block_size;
        const float *k = K + (int64_t)table[b] * block_size * ks + head_off;
        for (int64_t i = 0; i < n; i++) {
            float sc = dot_f32(qi, k + i * ks, head_dim) * scale;
            scores[j0 + i] = sc;
            if (sc > mx) mx = sc;
        }
    }
    double sum = 0;
    for (int64_t j = 0; j < n_keys; j++) {
        scores[j] = expf(scores[j] - mx);
        sum += scores[j];
    }
    for (int d = 0; d < head_dim; d++) o[d] = 0.0f;
    for (int64_t j0 = 0, b = 0; j0 < n_keys; j0 += block_size, b++) {
        const int64_t n = n_keys - j0 < block_size ? n_keys - j0 : block_size;
        const float *v = V + (int64_t)table[b] * block_size * ks + head_off;
        for (int64_t i = 0; i < n; i++) {
            float p = (float)(scores[j0 + i] / sum);
            for (int d = 0; d < head_dim; d++) o[d] += p * v[i * ks + d];
        }
    }
}

static void cpu_paged_attention(vox_backend *be, vox_tensor *out, const vox_tensor *q,
                                const vox_tensor *k_pool, const vox_tensor *v_pool, int n_heads,
                                int n_kv_heads, int head_dim, float scale) {
    const vox_batch *b = &((cpu_state *)be->impl)->batch;
    VOX_ASSERT(n_heads % n_kv_heads == 0 && rows_of(q) == b->n_rows && rows_of(out) == b->n_rows);
    int group = n_heads / n_kv_heads;
    int64_t qs = (int64_t)n_heads * head_dim, ks = (int64_t)n_kv_heads * head_dim;
    int64_t max_keys = (int64_t)b->table_width * b->block_size;
    const float *Q = act(q), *K = act(k_pool), *V = act(v_pool);
    float *O = act(out);
    double keys = 0; /* keys read by all rows: the work is keys x heads x 2 head_dim */
    for (int64_t r = 0; r < b->n_rows; r++) keys += (double)b->row_pos[r] + 1;
#pragma omp parallel if (worth_threads(keys * n_heads * 2 * head_dim))
    {
        float *scores = malloc((size_t)(max_keys ? max_keys : 1) * sizeof(float));
        VOX_ASSERT(scores);
#pragma omp for collapse(2) schedule(dynamic)
        for (int64_t r = 0; r < b->n_rows; r++) {
            for (int h = 0; h < n_heads; h++) {
                int s = 0;
                while (b->seq_row0[s + 1] <= r) s++;
                int64_t n_keys = (int64_t)b->row_pos[r] + 1;
                VOX_ASSERT(n_keys <= b->seq_len[s] && n_keys <= max_keys);
                attend_row(O + r * qs + h * head_dim, Q + r * qs + h * head_dim, K, V, ks,
                           (int64_t)(h / group) * head_dim, head_dim, scale, n_keys,
                           b->tables + (int64_t)s * b->table_width, b->block_size, scores);
            }
        }
        free(scores);
    }
}

static void cpu_gather_rows(vox_backend *be, vox_tensor *y, const vox_tensor *x) {
    const vox_batch *b = &((cpu_state *)be->impl)->batch;
    int64_t C = cols_of(x);
    VOX_ASSERT(rows_of(y) == b->n_logits && cols_of(y) == C);
    for (int i = 0; i < b->n_logits; i++) {
        VOX_ASSERT(b->logit_rows[i] >= 0 && b->logit_rows[i] < rows_of(x));
        memcpy(act(y) + i * C, act(x) + b->logit_rows[i] * C, (size_t)C * sizeof(float));
    }
}

static void cpu_attention(vox_backend *be, vox_tensor *out, const vox_tensor *q,
                          const vox_tensor *k, const vox_tensor *v, int batch, int t_q, int t_k,
                          int n_heads, int n_kv_heads, int head_dim, float scale, bool causal,
                          int64_t q_pos0) {
    (void)be;
    VOX_ASSERT(n_heads % n_kv_heads == 0);
    VOX_ASSERT(rows_of(q) == (int64_t)batch * t_q && rows_of(k) >= (int64_t)batch * t_k);
    VOX_ASSERT(rows_of(k) % batch == 0);
    int64_t seq_rows = rows_of(k) / batch; /* rows between sequences */
    int group = n_heads / n_kv_heads;
    int64_t qs = (int64_t)n_heads * head_dim, ks = (int64_t)n_kv_heads * head_dim;
    const float *Q = act(q), *K = act(k), *V = act(v);
    float *O = act(out);
#pragma omp parallel if (worth_threads((double)batch * n_heads * t_q * t_k * 2 * head_dim))
    {
        float *scores = malloc((size_t)(t_k ? t_k : 1) * sizeof(float));
        VOX_ASSERT(scores);
#pragma omp for collapse(2)
        for (int64_t bh = 0; bh < (int64_t)batch * n_heads; bh++) {
            for (int64_t i = 0; i < t_q; i++) {
                int64_t b = bh / n_heads, h = bh % n_heads;
                int64_t n_keys = causal ? q_pos0 + i + 1 : t_k;
                if (n_keys > t_k) n_keys = t_k;
                /* sequence b's rows as one block of seq_rows rows */
                int32_t block = (int32_t)b;
                attend_row(O + (b * t_q + i) * qs + h * head_dim, Q + (b * t_q + i) * qs + h * head_dim,
                           K, V, ks, (h / group) * head_dim, head_dim, scale, n_keys, &block,
                           (int)seq_rows, scores);
            }
        }
        free(scores);
    }
}

static void cpu_embed(vox_backend *be, vox_tensor *y, const vox_tensor *table, const int32_t *ids,
                      size_t n) {
    (void)be;
    int64_t C = cols_of(table);
    VOX_ASSERT(rows_of(y) == (int64_t)n && cols_of(y) == C);
    for (size_t i = 0; i < n; i++) {
        VOX_ASSERT(ids[i] >= 0 && ids[i] < rows_of(table));
        const char *src = (const char *)table->data + (size_t)ids[i] * C * vox_dtype_size(table->dtype);
        vox_to_f32(act(y) + i * C, src, table->dtype, (size_t)C);
    }
}

static void cpu_copy(vox_backend *be, vox_tensor *dst, const vox_tensor *src) {
    (void)be;
    VOX_ASSERT(dst->dtype == src->dtype && vox_tensor_nbytes(dst) == vox_tensor_nbytes(src));
    memmove(dst->data, src->data, vox_tensor_nbytes(src));
}

static vox_status cpu_log_mel(vox_backend *be, vox_tensor *features, const float *samples,
                              size_t n_samples, vox_error *err) {
    (void)be;
    float *f = NULL;
    size_t n_chunks = 0;
    vox_status st = vox_mel_compute(samples, n_samples, &f, &n_chunks, err);
    if (st) return st;
    VOX_ASSERT(vox_tensor_numel(features) == n_chunks * VOX_MEL_BINS * VOX_CHUNK_FRAMES);
    memcpy(act(features), f, vox_tensor_nbytes(features));
    free(f);
    return VOX_OK;
}

/* Fills the statistics of one row of float32 logits (shared with the CUDA backend's host side). */
void vox_logits_stats_host(const float *logits, int64_t V, int32_t chosen, int k,
                           vox_logits_stats *out);

static vox_status cpu_logits_stats(vox_backend *be, const vox_tensor *logits,
                                   const int32_t *chosen, int k, vox_logits_stats *out,
                                   vox_error *err) {
    (void)be, (void)err;
    int64_t n = rows_of(logits), V = cols_of(logits);
    for (int64_t i = 0; i < n; i++)
        vox_logits_stats_host(act(logits) + i * V, V, chosen ? chosen[i] : -1, k, &out[i]);
    return VOX_OK;
}

/* Marks live in a ring: a mark is read before CPU_MAX_MARKS more are made. */
static int cpu_mark(vox_backend *be) {
    cpu_state *s = be->impl;
    int i = s->n_marks++ % CPU_MAX_MARKS;
    s->marks[i] = wall_ms();
    return i;
}

static double cpu_elapsed_ms(vox_backend *be, int a, int b) {
    cpu_state *s = be->impl;
    return s->marks[b] - s->marks[a];
}

static void cpu_mem_info(vox_backend *be, size_t *free_bytes, size_t *total_bytes) {
    (void)be;
    long page = sysconf(_SC_PAGESIZE), avail = sysconf(_SC_AVPHYS_PAGES), all = sysconf(_SC_PHYS_PAGES);
    *free_bytes = page > 0 && avail > 0 ? (size_t)page * (size_t)avail : 0;
    *total_bytes = page > 0 && all > 0 ? (size_t)page * (size_t)all : 0;
}

static void cpu_memory(vox_backend *be, size_t *live, size_t *peak) {
    cpu_state *s = be->impl;
    *live = s->live;
    *peak = s->peak;
}

static void cpu_destroy(vox_backend *be) {
    cpu_state *s = be->impl;
    free(s->ids);
    free(s->row_pos);
    free(s->row_slot);
    free(s->seq_row0);
    free(s->seq_len);
    free(s->tables);
    free(s->logit_rows);
    free(s);
    free(be);
}

vox_status vox_backend_cpu_create(vox_backend **out, vox_error *err) {
    vox_backend *be = calloc(1, sizeof *be);
    cpu_state *s = calloc(1, sizeof *s);
    if (!be || !s) {
        free(be);
        free(s);
        return vox_fail(err, VOX_ERR_NOMEM, "cpu backend: out of memory");
    }
    *be = (vox_backend){
        .name = "cpu",
        .act_type = VOX_DTYPE_F32,
        .encoder_group = 8, /* bounds the workspace in host memory (about 60 MB a chunk) */
        .impl = s,
        .destroy = cpu_destroy,
        .alloc = cpu_alloc,
        .free = cpu_free,
        .weight = cpu_weight,
        .free_weight = cpu_free_weight,
        .upload_f32 = cpu_upload_f32,
        .download_f32 = cpu_download_f32,
        .sync = cpu_sync,
        .matmul = cpu_matmul,
        .layer_norm = cpu_layer_norm,
        .rms_norm = cpu_rms_norm,
        .gelu = cpu_gelu,
        .swiglu = cpu_swiglu,
        .add = cpu_add,
        .add_rows_f32 = cpu_add_rows_f32,
        .conv1d_k3 = cpu_conv1d_k3,
        .batch_set = cpu_batch_set,
        .batch_reserve = cpu_batch_reserve,
        .embed_batch = cpu_embed_batch,
        .rope_cache = cpu_rope_cache,
        .paged_attention = cpu_paged_attention,
        .gather_rows = cpu_gather_rows,
        .attention = cpu_attention,
        .embed = cpu_embed,
        .copy = cpu_copy,
        .log_mel = cpu_log_mel,
        .logits_stats = cpu_logits_stats,
        .mark = cpu_mark,
        .elapsed_ms = cpu_elapsed_ms,
        .mem_info = cpu_mem_info,
        .memory = cpu_memory,
    };
    *out = be;
    return VOX_OK;
}
