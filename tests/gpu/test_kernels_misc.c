/* im2col (kernels/conv.cu), RoPE (rope.cu), embedding gather (embed.cu) and logits statistics
 * (logits.cu) against the CPU backend and src/backend/logits.c; the per-row forms for continuous
 * batching (vox_k_qkv_rope_cache_rows, vox_k_logits_stats_rows) against the single-row kernels.
 *
 * - im2col: bit-exact against a host gather (it only moves bf16 words), and, through a host
 *   GEMM over the columns it produced, against the CPU backend's conv1d_k3: this pins the column
 *   layout (ci*3 + k, the weight's [C_out, C_in, 3] order) to the reference's convolution.
 * - RoPE: per-element bound derived below, plus a bit-for-bit comparison with a host emulation
 *   of transformers' rounding sequence.
 * - embed: bit-exact.
 * - logits: ids exact (argmax, top-k; ties, which the kernel breaks by the lowest id like the
 *   reference, are exercised too), logits exact (they are bf16 values copied), logsumexp and
 *   log-probabilities within 1e-4 relative (the kernel sums exp in fp32 per block, the reference
 *   in double: 131072 terms lose well under 1e-5).
 * - qkv_rope_cache_rows and logits_stats_rows: bit for bit against the legacy kernels applied to
 *   each row alone (the same arithmetic; only where a row's inputs come from and its outputs go
 *   differ).
 * Sizes are awkward on purpose; see each test's cases in main(). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kernels.h"

#define U_BF16 (1.0 / 256.0)

/* src/backend/logits.c (shared by the backends, no header of its own) */
void vox_logits_stats_host(const float *logits, int64_t V, int32_t chosen, int k,
                           vox_logits_stats *out);

/* RoPE in place through the fused kernel: q only (no kv heads), qkv and q_out the same rows. */
static void rope_in_place(uint16_t *x, int64_t t, int heads, int dim, const int64_t *pos, double theta) {
    vox_k_qkv_rope_cache(x, NULL, NULL, x, t, heads, 0, dim, pos, theta, 0);
}

static vox_backend *cpu;
static gtu_rng rng;

/* ---- im2col ---------------------------------------------------------------------------------- */

/* x at a 1-element offset when offset (misaligned: the time-major scalar path). */
static void test_im2col(int cf, int batch, int c_in, int t_in, int stride, int offset) {
    char what[128];
    snprintf(what, sizeof what, "im2col %s b=%d c_in=%d t_in=%d s=%d%s",
             cf ? "channels-first" : "time-major", batch, c_in, t_in, stride,
             offset ? " off=1" : "");
    const int t_out = (t_in - 1) / stride + 1, width = 3 * c_in;
    const size_t nx = (size_t)batch * c_in * t_in, ncols = (size_t)batch * t_out * width;
    float *fx;
    uint16_t *hx = gtu_randn_bf16(&rng, nx + offset, 1.0f, 0.0f, &fx);
    const float *x = fx + offset;

    float *want = (float *)gtu_malloc(ncols * sizeof(float));
    for (int b = 0; b < batch; b++)
        for (int t = 0; t < t_out; t++)
            for (int ci = 0; ci < c_in; ci++)
                for (int k = 0; k < 3; k++) {
                    int ti = t * stride + k - 1;
                    float v = 0;
                    if (ti >= 0 && ti < t_in)
                        v = cf ? x[((size_t)b * c_in + ci) * t_in + ti]
                               : x[((size_t)b * t_in + ti) * c_in + ci];
                    want[((size_t)b * t_out + t) * width + ci * 3 + k] = v;
                }

    uint16_t *d_x = (uint16_t *)gtu_dev_upload(hx, (nx + offset) * 2);
    uint16_t *d_cols = (uint16_t *)gtu_dev_alloc(ncols * 2);
    GTU_CUDA(cudaMemset(d_cols, 0xff, ncols * 2)); /* NaN pattern: unwritten elements show */
    vox_k_im2col_k3(d_cols, d_x + offset, cf, batch, c_in, t_in, stride, 0);
    float *cols = gtu_download_bf16_as_f32(d_cols, ncols);
    gtu_compare(what, cols, want, ncols, 0, 0); /* a gather: exact */
    gtu_check_nonzero(what, cols, ncols);

    /* conv through the columns vs the CPU backend's conv1d_k3, C_out = 3 (the layout is what is
     * under test, not the GEMM). Both sum K = 3*C_in products in fp32 or better: the difference
     * is within the worst-case summation bound K * 2^-24 * sum|terms| (rtol 0). */
    const int c_out = 3;
    float *fw, *fbias;
    uint16_t *hw = gtu_randn_bf16(&rng, (size_t)c_out * width, 0.05f, 0.0f, &fw);
    uint16_t *hbias = gtu_randn_bf16(&rng, c_out, 0.1f, 0.0f, &fbias);
    float *ref = (float *)gtu_malloc((size_t)batch * t_out * c_out * sizeof(float));
    float *mine = (float *)gtu_malloc((size_t)batch * t_out * c_out * sizeof(float));
    vox_tensor ty = gtu_cpu_tensor(ref, VOX_DTYPE_F32, (int64_t)batch * t_out, c_out);
    vox_tensor tx = gtu_cpu_tensor((void *)x, VOX_DTYPE_F32, cf ? (int64_t)batch * c_in : (int64_t)batch * t_in,
                                   cf ? t_in : c_in);
    vox_tensor tw = gtu_cpu_tensor(fw, VOX_DTYPE_F32, c_out, c_in);
    tw.ndim = 3;
    tw.shape[2] = 3;
    vox_tensor tb = gtu_cpu_tensor(fbias, VOX_DTYPE_F32, 1, c_out);
    cpu->conv1d_k3(cpu, &ty, &tx, cf != 0, batch, t_in, &tw, &tb, stride);
    double s_max = 0;
    for (size_t r = 0; r < (size_t)batch * t_out; r++)
        for (int co = 0; co < c_out; co++) {
            double acc = fbias[co], s = fabs(fbias[co]);
            for (int j = 0; j < width; j++) {
                acc += (double)cols[r * width + j] * fw[(size_t)co * width + j];
                s += fabs((double)cols[r * width + j] * fw[(size_t)co * width + j]);
            }
            mine[r * c_out + co] = (float)acc;
            if (s > s_max) s_max = s;
        }
    char what2[160];
    snprintf(what2, sizeof what2, "%s: conv", what);
    gtu_compare(what2, mine, ref, (size_t)batch * t_out * c_out, width * s_max / 16777216.0, 0);

    free(hx), free(fx), free(want), free(cols), free(hw), free(fw), free(hbias), free(fbias);
    free(ref), free(mine);
    gtu_dev_free(d_x), gtu_dev_free(d_cols);
}

/* ---- RoPE ------------------------------------------------------------------------------------ */

/* x [t, heads*dim] = rope(x) at positions pos0.. by the CPU backend, whose RoPE is part of
 * rope_cache: x goes in as q, beside one zero k/v head written to a scratch pool, the rows one
 * sequence's batch at positions pos0 .. pos0 + t - 1 (pool rows 0 .. t - 1). */
static void cpu_rope(float *x, int64_t t, int heads, int dim, int64_t pos0, double theta) {
    const int64_t qd = (int64_t)heads * dim, w = qd + 2 * (int64_t)dim;
    float *qkv = (float *)calloc((size_t)(t * w), sizeof(float));
    float *kc = (float *)calloc((size_t)(t * dim), sizeof(float));
    float *vc = (float *)calloc((size_t)(t * dim), sizeof(float));
    int32_t *pos = (int32_t *)calloc((size_t)t, sizeof(int32_t));
    int32_t *slot = (int32_t *)calloc((size_t)t, sizeof(int32_t));
    if (!qkv || !kc || !vc || !pos || !slot) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    for (int64_t r = 0; r < t; r++) {
        memcpy(qkv + r * w, x + r * qd, (size_t)qd * sizeof(float));
        pos[r] = (int32_t)(pos0 + r);
        slot[r] = (int32_t)r;
    }
    const int32_t row0[2] = {0, (int32_t)t}, len = (int32_t)(pos0 + t);
    vox_batch b;
    memset(&b, 0, sizeof b);
    b.n_rows = (int)t, b.n_seqs = 1, b.n_decode = 0;
    b.row_pos = pos, b.row_slot = slot, b.seq_row0 = row0, b.seq_len = &len, b.block_size = 1;
    vox_error err;
    memset(&err, 0, sizeof err);
    if (cpu->batch_reserve(cpu, (int)t, 1, 0, 1, heads, dim, &err) != VOX_OK ||
        cpu->batch_set(cpu, &b, &err) != VOX_OK) {
        fprintf(stderr, "cpu_rope: the CPU backend refuses a batch of %lld rows\n", (long long)t);
        exit(1);
    }
    vox_tensor tq = gtu_cpu_tensor(x, VOX_DTYPE_F32, t, qd);
    vox_tensor tk = gtu_cpu_tensor(kc, VOX_DTYPE_F32, t, dim);
    vox_tensor tv = gtu_cpu_tensor(vc, VOX_DTYPE_F32, t, dim);
    vox_tensor tqkv = gtu_cpu_tensor(qkv, VOX_DTYPE_F32, t, w);
    cpu->rope_cache(cpu, &tq, &tk, &tv, &tqkv, heads, 1, dim, theta);
    free(qkv), free(kc), free(vc), free(pos), free(slot);
}

/* Bound per element, with a = x_i, b = x_{i+D/2}, c, s the cos and sin of the (identical fp32)
 * angle, U = 2^-8. The kernel rounds cos and sin (c' = c(1+e1)), each product (a c' (1+e2)) and
 * the difference: |out - (a c - b s)| <= (2U + U^2)(|a c| + |b s|)(1 + U) + U |ref|. Host and
 * device cosf/sinf of the same angle agree to ~2 fp32 ulps: + 1e-6 (|a| + |b|). */
static void test_rope(int64_t t, int heads, int dim, int64_t pos0, double theta, int offset) {
    char what[128];
    snprintf(what, sizeof what, "rope t=%lld h=%d d=%d pos0=%lld theta=%g%s", (long long)t, heads,
             dim, (long long)pos0, theta, offset ? " off=1" : "");
    const int64_t row = (int64_t)heads * dim;
    const size_t n = (size_t)(t * row);
    const int half = dim / 2;
    float *fx;
    uint16_t *hx = gtu_rand_bf16(&rng, n + offset, -1.0f, 1.0f, &fx);
    const float *x = fx + offset;
    uint16_t *d_x = (uint16_t *)gtu_dev_upload(hx, (n + offset) * 2);
    int64_t *d_pos = (int64_t *)gtu_dev_upload(&pos0, sizeof pos0);
    rope_in_place(d_x + offset, t, heads, dim, d_pos, theta);
    float *got = gtu_download_bf16_as_f32(d_x + offset, n);

    float *ref = (float *)gtu_malloc(n * sizeof(float));
    memcpy(ref, x, n * sizeof(float));
    cpu_rope(ref, t, heads, dim, pos0, theta);

    float *bound = (float *)gtu_malloc(n * sizeof(float));
    size_t mism = 0;
    const double u = U_BF16;
    for (int64_t r = 0; r < t; r++)
        for (int i = 0; i < half; i++) {
            float inv_freq = (float)(1.0 / pow(theta, (double)(2 * i) / dim));
            float angle = (float)(pos0 + r) * inv_freq;
            float c = cosf(angle), s = sinf(angle);
            float cb = vox_bf16_to_f32(vox_f32_to_bf16(c)), sb = vox_bf16_to_f32(vox_f32_to_bf16(s));
            for (int h = 0; h < heads; h++) {
                size_t i1 = (size_t)(r * row + (int64_t)h * dim + i), i2 = i1 + half;
                float a = x[i1], b = x[i2];
                double terms = fabs(a * c) + fabs(b * s), mag = fabs(a) + fabs(b);
                bound[i1] = (float)((2 * u + u * u) * (1 + u) * terms + u * fabs(ref[i1]) + 1e-6 * mag);
                terms = fabs(b * c) + fabs(a * s);
                bound[i2] = (float)((2 * u + u * u) * (1 + u) * terms + u * fabs(ref[i2]) + 1e-6 * mag);
                /* transformers: q * cos + rotate_half(q) * sin, each op a bf16 tensor */
                float p1 = vox_bf16_to_f32(vox_f32_to_bf16(a * cb));
                float q1 = vox_bf16_to_f32(vox_f32_to_bf16(-b * sb));
                float p2 = vox_bf16_to_f32(vox_f32_to_bf16(b * cb));
                float q2 = vox_bf16_to_f32(vox_f32_to_bf16(a * sb));
                mism += vox_f32_to_bf16(p1 + q1) != vox_f32_to_bf16(got[i1]);
                mism += vox_f32_to_bf16(p2 + q2) != vox_f32_to_bf16(got[i2]);
            }
        }
    gtu_compare_bound(what, got, ref, bound, n);
    gtu_check_nonzero(what, got, n);
    CHECK_MSG(mism <= 1 + n / 1000, "%s: %zu of %zu elements differ from transformers' rounding",
              what, mism, n);

    /* the position is read on the device: a new value there, same launch, new result */
    if (t == 1 && pos0 == 0) {
        int64_t pos1 = 12345;
        GTU_CUDA(cudaMemcpy(d_x + offset, hx + offset, n * 2, cudaMemcpyHostToDevice));
        GTU_CUDA(cudaMemcpy(d_pos, &pos1, sizeof pos1, cudaMemcpyHostToDevice));
        rope_in_place(d_x + offset, t, heads, dim, d_pos, theta);
        float *got1 = gtu_download_bf16_as_f32(d_x + offset, n);
        memcpy(ref, x, n * sizeof(float));
        cpu_rope(ref, t, heads, dim, pos1, theta);
        size_t far = 0;
        for (size_t i = 0; i < n; i++) far += fabs(got1[i] - ref[i]) > 4 * u * (fabs(ref[i]) + 1);
        CHECK_MSG(far == 0, "%s: with *pos0_dev = 12345, %zu elements off", what, far);
        free(got1);
    }

    free(hx), free(fx), free(got), free(ref), free(bound);
    gtu_dev_free(d_x), gtu_dev_free(d_pos);
}

/* ---- RoPE + cache write per row (continuous batching) ---------------------------------------- */

/* vox_k_qkv_rope_cache_rows on t rows at random positions (one repeated) writing random distinct
 * pool rows, against the legacy vox_k_qkv_rope_cache run on each row alone at *pos_dev =
 * row_pos[r] into a scratch cache, whose row row_pos[r] is then copied to the row's slot of the
 * expected pools: q_out and both pools must match bit for bit (the same arithmetic: only where
 * the position comes from and where the row goes differ), so every pool row no slot names must
 * also keep its initial contents. q_out starts as NaN with a guard behind it. offset 1 moves
 * every pointer off the 16-byte vectors (the scalar path); head_dim 6 takes it too. */
static void test_qkv_rope_rows(int64_t t, int heads, int kv_heads, int dim, int32_t max_pos,
                               int pool_rows, double theta, int offset) {
    char what[160];
    snprintf(what, sizeof what, "qkv_rope_cache_rows t=%lld h=%d/%d d=%d pool=%d theta=%g%s",
             (long long)t, heads, kv_heads, dim, pool_rows, theta, offset ? " off=1" : "");
    const int64_t qd = (int64_t)heads * dim, kd = (int64_t)kv_heads * dim, w = qd + 2 * kd;
    const size_t nqkv = (size_t)(t * w), nq = (size_t)(t * qd), npool = (size_t)pool_rows * kd;
    const size_t guard = 64;
    int32_t *pos = (int32_t *)gtu_malloc((size_t)t * sizeof *pos);
    int32_t *slot = (int32_t *)gtu_malloc((size_t)t * sizeof *slot);
    for (int64_t r = 0; r < t; r++) pos[r] = (int32_t)(gtu_next_u64(&rng) % (uint64_t)max_pos);
    pos[0] = max_pos - 1;
    if (t > 2) pos[2] = pos[1];
    if (t > 3) pos[3] = 0;
    if (kv_heads > 0) { /* distinct slots: the first t of a shuffled 0..pool_rows-1 */
        int32_t *perm = (int32_t *)gtu_malloc((size_t)pool_rows * sizeof *perm);
        for (int i = 0; i < pool_rows; i++) perm[i] = i;
        for (int i = pool_rows - 1; i > 0; i--) {
            int j = (int)(gtu_next_u64(&rng) % (uint64_t)(i + 1));
            int32_t tmp = perm[i];
            perm[i] = perm[j], perm[j] = tmp;
        }
        for (int64_t r = 0; r < t; r++) slot[r] = perm[r];
        free(perm);
    } else {
        for (int64_t r = 0; r < t; r++) slot[r] = 0;
    }
    uint16_t *hqkv = gtu_randn_bf16(&rng, nqkv + offset, 2.0f, 0.0f, NULL);
    uint16_t *kp0 = gtu_randn_bf16(&rng, npool + offset, 1.0f, 0.0f, NULL);
    uint16_t *vp0 = gtu_randn_bf16(&rng, npool + offset, 1.0f, 0.0f, NULL);
    uint16_t *kexp = (uint16_t *)gtu_malloc((npool + offset) * 2);
    uint16_t *vexp = (uint16_t *)gtu_malloc((npool + offset) * 2);
    memcpy(kexp, kp0, (npool + offset) * 2);
    memcpy(vexp, vp0, (npool + offset) * 2);

    uint16_t *d_qkv = (uint16_t *)gtu_dev_upload(hqkv, (nqkv + offset) * 2);
    uint16_t *d_kp = (uint16_t *)gtu_dev_upload(kp0, (npool + offset) * 2);
    uint16_t *d_vp = (uint16_t *)gtu_dev_upload(vp0, (npool + offset) * 2);
    uint16_t *d_q = (uint16_t *)gtu_dev_alloc((nq + offset + guard) * 2);
    uint16_t *d_ql = (uint16_t *)gtu_dev_alloc((nq + offset) * 2);
    int32_t *d_pos = (int32_t *)gtu_dev_upload(pos, (size_t)t * sizeof *pos);
    int32_t *d_slot = (int32_t *)gtu_dev_upload(slot, (size_t)t * sizeof *slot);
    GTU_CUDA(cudaMemset(d_q, 0xff, (nq + offset + guard) * 2));
    GTU_CUDA(cudaMemset(d_ql, 0xff, (nq + offset) * 2));
    vox_k_qkv_rope_cache_rows(d_q + offset, kv_heads ? d_kp + offset : NULL,
                              kv_heads ? d_vp + offset : NULL, d_qkv + offset, t, heads, kv_heads,
                              dim, d_pos, d_slot, theta, 0);
    GTU_SYNC_CHECK();

    /* the legacy kernel, a row at a time, into a scratch cache of max_pos rows */
    const size_t nscr = (size_t)max_pos * kd;
    uint16_t *d_ks = kv_heads ? (uint16_t *)gtu_dev_alloc(nscr * 2 + 16) : NULL;
    uint16_t *d_vs = kv_heads ? (uint16_t *)gtu_dev_alloc(nscr * 2 + 16) : NULL;
    int64_t *d_p64 = (int64_t *)gtu_dev_alloc(sizeof(int64_t));
    for (int64_t r = 0; r < t; r++) {
        const int64_t p = pos[r];
        GTU_CUDA(cudaMemcpy(d_p64, &p, sizeof p, cudaMemcpyHostToDevice));
        vox_k_qkv_rope_cache(d_ql + offset + r * qd, d_ks ? d_ks + offset : NULL,
                             d_vs ? d_vs + offset : NULL, d_qkv + offset + r * w, 1, heads,
                             kv_heads, dim, d_p64, theta, 0);
        if (kv_heads) {
            gtu_download(kexp + offset + (size_t)slot[r] * kd, d_ks + offset + (size_t)p * kd,
                         (size_t)kd * 2);
            gtu_download(vexp + offset + (size_t)slot[r] * kd, d_vs + offset + (size_t)p * kd,
                         (size_t)kd * 2);
        }
    }

    uint16_t *q = (uint16_t *)gtu_malloc((nq + guard) * 2), *ql = (uint16_t *)gtu_malloc(nq * 2);
    gtu_download(q, d_q + offset, (nq + guard) * 2);
    gtu_download(ql, d_ql + offset, nq * 2);
    size_t bad_q = 0, bad_guard = 0, bad_k = 0, bad_v = 0, written = 0;
    for (size_t i = 0; i < nq; i++) bad_q += q[i] != ql[i];
    for (size_t i = nq; i < nq + guard; i++) bad_guard += q[i] != 0xffffu;
    if (kv_heads) {
        uint16_t *kg = (uint16_t *)gtu_malloc(npool * 2), *vg = (uint16_t *)gtu_malloc(npool * 2);
        gtu_download(kg, d_kp + offset, npool * 2);
        gtu_download(vg, d_vp + offset, npool * 2);
        for (size_t i = 0; i < npool; i++) {
            bad_k += kg[i] != kexp[offset + i];
            bad_v += vg[i] != vexp[offset + i];
            written += kexp[offset + i] != kp0[offset + i];
        }
        free(kg), free(vg);
    }
    CHECK_MSG(bad_q == 0, "%s: %zu of %zu q_out elements differ from the legacy kernel", what,
              bad_q, nq);
    CHECK_MSG(bad_guard == 0, "%s: %zu guard words past q_out were written", what, bad_guard);
    CHECK_MSG(bad_k == 0 && bad_v == 0,
              "%s: %zu k and %zu v pool elements differ from the legacy rows at their slots (or "
              "rows no slot names were written)", what, bad_k, bad_v);
    /* the expected rows moved away from the random initial pool: the legacy kernel wrote them */
    CHECK_MSG(!kv_heads || written > 0, "%s: no pool element changed", what);
    float *qf = gtu_bf16_to_f32_host(q, nq);
    gtu_check_nonzero(what, qf, nq);
    if (!bad_q && !bad_guard && !bad_k && !bad_v)
        printf("  ok %-44s bit-identical to the legacy kernel row by row (%zu pool elements "
               "written, %zu kept)\n", what, written, npool - written);

    free(pos), free(slot), free(hqkv), free(kp0), free(vp0), free(kexp), free(vexp), free(q);
    free(ql), free(qf);
    gtu_dev_free(d_qkv), gtu_dev_free(d_kp), gtu_dev_free(d_vp), gtu_dev_free(d_q);
    gtu_dev_free(d_ql), gtu_dev_free(d_pos), gtu_dev_free(d_slot), gtu_dev_free(d_p64);
    if (d_ks) gtu_dev_free(d_ks), gtu_dev_free(d_vs);
}

/* ---- embedding ------------------------------------------------------------------------------- */

static void test_embed(int64_t vocab, int64_t n, int64_t c, int offset) {
    char what[128];
    snprintf(what, sizeof what, "embed vocab=%lld n=%lld c=%lld%s", (long long)vocab,
             (long long)n, (long long)c, offset ? " off=1" : "");
    const size_t nt = (size_t)(vocab * c), ny = (size_t)(n * c);
    uint16_t *ht = gtu_randn_bf16(&rng, nt + offset, 1.0f, 0.0f, NULL);
    int32_t *ids = (int32_t *)gtu_malloc((size_t)n * sizeof(int32_t));
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)(gtu_next_u64(&rng) % (uint64_t)vocab);
    ids[0] = (int32_t)(vocab - 1);
    if (n > 1) ids[n - 1] = 0;

    uint16_t *d_t = (uint16_t *)gtu_dev_upload(ht, (nt + offset) * 2);
    int32_t *d_ids = (int32_t *)gtu_dev_upload(ids, (size_t)n * sizeof(int32_t));
    uint16_t *d_y = (uint16_t *)gtu_dev_alloc(ny * 2 + 2);
    vox_k_embed(d_y + offset, d_t + offset, d_ids, n, c, 0);
    float *got = gtu_download_bf16_as_f32(d_y + offset, ny);

    float *ref = (float *)gtu_malloc(ny * sizeof(float));
    vox_tensor ty = gtu_cpu_tensor(ref, VOX_DTYPE_F32, n, c);
    vox_tensor tt = gtu_cpu_tensor(ht + offset, VOX_DTYPE_BF16, vocab, c);
    cpu->embed(cpu, &ty, &tt, ids, (size_t)n);
    gtu_compare(what, got, ref, ny, 0, 0); /* a copy: exact */
    gtu_check_nonzero(what, got, ny);

    free(ht), free(ids), free(got), free(ref);
    gtu_dev_free(d_t), gtu_dev_free(d_ids), gtu_dev_free(d_y);
}

/* ---- logits statistics ----------------------------------------------------------------------- */

typedef enum { FILL_DISTINCT, FILL_NORMAL, FILL_TIES, FILL_EQUAL, FILL_MASKED } fill_mode;
static const char *fill_name[] = {"distinct", "normal", "ties", "equal", "masked"};

/* bf16 logits: DISTINCT has no two equal values among the top 24 (all distinct when v <= 4096);
 * NORMAL is N(0, 4) (ties near the top happen, as in real bf16 logits); TIES draws from four
 * values; EQUAL is constant; MASKED is DISTINCT with about half the entries -inf. */
static uint16_t *make_logits(fill_mode mode, int64_t v, int offset) {
    uint16_t *h = (uint16_t *)gtu_malloc((size_t)(v + offset) * 2), *l = h + offset;
    if (offset) h[0] = vox_f32_to_bf16(100.0f); /* outside the row: must not be seen */
    const float ties[4] = {-1.0f, 0.0f, 0.5f, 1.0f};
    for (int64_t i = 0; i < v; i++) {
        switch (mode) {
        case FILL_NORMAL: l[i] = vox_f32_to_bf16(4.0f * gtu_normal(&rng)); break;
        case FILL_TIES: l[i] = vox_f32_to_bf16(ties[gtu_next_u64(&rng) % 4]); break;
        case FILL_EQUAL: l[i] = vox_f32_to_bf16(0.25f); break;
        default: l[i] = vox_f32_to_bf16(gtu_uniform(&rng, -10.0f, 10.0f)); break;
        }
    }
    if (mode == FILL_DISTINCT || mode == FILL_MASKED) {
        if (v <= 4096) { /* a shuffled run of consecutive bf16 patterns from 1.0 up */
            for (int64_t i = 0; i < v; i++) l[i] = (uint16_t)(0x3f80 + i);
            for (int64_t i = v - 1; i > 0; i--) {
                int64_t j = (int64_t)(gtu_next_u64(&rng) % (uint64_t)(i + 1));
                uint16_t tmp = l[i];
                l[i] = l[j], l[j] = tmp;
            }
        } else { /* 24 distinct values above the noise, at random positions */
            for (int j = 0; j < 24; j++) {
                int64_t p;
                do p = (int64_t)(gtu_next_u64(&rng) % (uint64_t)v);
                while (vox_bf16_to_f32(l[p]) >= 10.0f);
                l[p] = vox_f32_to_bf16(10.0f + 0.0625f * (float)((j * 7) % 24));
            }
        }
        if (mode == FILL_MASKED)
            for (int64_t i = 0; i < v; i++)
                if (gtu_next_u64(&rng) & 1) l[i] = 0xff80; /* -inf */
    }
    return h;
}

/* |a - b| <= tol, or both the same infinity */
static int close_or_same(double a, double b, double tol) { return a == b || fabs(a - b) <= tol; }

static void test_logits(fill_mode mode, int64_t v, int k, int32_t chosen, int offset) {
    char what[128];
    snprintf(what, sizeof what, "logits %s v=%lld k=%d chosen=%d%s", fill_name[mode],
             (long long)v, k, chosen, offset ? " off=1" : "");
    uint16_t *h = make_logits(mode, v, offset);
    float *f = gtu_bf16_to_f32_host(h + offset, (size_t)v);
    vox_logits_stats ref;
    vox_logits_stats_host(f, v, chosen, k, &ref);
    double m = -INFINITY, sum = 0;
    for (int64_t i = 0; i < v; i++) m = f[i] > m ? f[i] : m;
    for (int64_t i = 0; i < v; i++) sum += exp((double)f[i] - m);
    const double lse = m + log(sum), tol = 1e-4 * (fabs(lse) > 1 ? fabs(lse) : 1);

    uint16_t *d_l = (uint16_t *)gtu_dev_upload(h, (size_t)(v + offset) * 2);
    size_t ws = vox_k_logits_workspace(v);
    void *d_ws = gtu_dev_alloc(ws);
    GTU_CUDA(cudaMemset(d_ws, 0xff, ws));
    vox_k_logits_result *d_out = (vox_k_logits_result *)gtu_dev_alloc(sizeof(vox_k_logits_result));
    vox_k_logits_stats(d_out, d_l + offset, v, chosen, k, d_ws, 0);
    vox_k_logits_result got;
    gtu_download(&got, d_out, sizeof got);

    int before = vox_test_failures;
    CHECK_MSG(got.argmax == ref.argmax, "%s: argmax %d, ref %d", what, got.argmax, ref.argmax);
    CHECK_MSG(got.max_logit == f[ref.argmax], "%s: max_logit %g, ref %g", what, got.max_logit,
              f[ref.argmax]);
    CHECK_MSG(close_or_same(got.max_logit - got.second_logit, ref.argmax_margin, 0),
              "%s: margin %g, ref %g", what, got.max_logit - got.second_logit, ref.argmax_margin);
    CHECK_MSG(fabs(got.logsumexp - lse) <= tol, "%s: logsumexp %.9g, ref %.9g", what,
              got.logsumexp, lse);
    CHECK_MSG(got.chosen_logit == f[ref.chosen], "%s: chosen_logit %g, ref %g", what,
              got.chosen_logit, f[ref.chosen]);
    CHECK_MSG(close_or_same(got.chosen_logit - got.logsumexp, ref.chosen_logprob, tol),
              "%s: chosen logprob %g, ref %g", what, got.chosen_logit - got.logsumexp,
              ref.chosen_logprob);
    CHECK_MSG(got.k == ref.k, "%s: k %d, ref %d", what, got.k, ref.k);
    for (int r = 0; r < ref.k && r < got.k; r++) {
        CHECK_MSG(got.top_ids[r] == ref.top_ids[r], "%s: top_ids[%d] %d, ref %d", what, r,
                  got.top_ids[r], ref.top_ids[r]);
        CHECK_MSG(got.top_logits[r] == f[ref.top_ids[r]], "%s: top_logits[%d] %g, ref %g", what,
                  r, got.top_logits[r], f[ref.top_ids[r]]);
        CHECK_MSG(close_or_same(got.top_logits[r] - got.logsumexp, ref.top_logprobs[r], tol),
                  "%s: top logprob[%d] %g, ref %g", what, r, got.top_logits[r] - got.logsumexp,
                  ref.top_logprobs[r]);
    }
    if (vox_test_failures == before)
        printf("  ok %-44s argmax %d, lse %.6f (ref %.6f)\n", what, got.argmax, got.logsumexp, lse);

    free(h), free(f);
    gtu_dev_free(d_l), gtu_dev_free(d_ws), gtu_dev_free(d_out);
}

/* vox_k_logits_stats_rows on [rows, v] against vox_k_logits_stats on each row alone with the same
 * chosen id (which is itself held to the host reference above): every field bit for bit (the
 * result struct has no padding; both start as the same 0xff bytes). Chosen ids (with_chosen):
 * -1 for every third row, else a random id; without, chosen_dev is NULL (the argmax). An odd v
 * puts most rows off the 16-byte vectors. */
static void test_logits_rows(fill_mode mode, int rows, int64_t v, int k, int with_chosen) {
    char what[128];
    snprintf(what, sizeof what, "logits rows %s rows=%d v=%lld k=%d%s", fill_name[mode], rows,
             (long long)v, k, with_chosen ? " chosen" : "");
    const size_t n = (size_t)rows * (size_t)v;
    uint16_t *h = (uint16_t *)gtu_malloc(n * 2);
    for (int r = 0; r < rows; r++) {
        uint16_t *row = make_logits(mode, v, 0);
        memcpy(h + (size_t)r * v, row, (size_t)v * 2);
        free(row);
    }
    int32_t *chosen = (int32_t *)gtu_malloc((size_t)rows * sizeof *chosen);
    for (int r = 0; r < rows; r++)
        chosen[r] = !with_chosen || r % 3 == 0 ? -1 : (int32_t)(gtu_next_u64(&rng) % (uint64_t)v);

    uint16_t *d_l = (uint16_t *)gtu_dev_upload(h, n * 2);
    int32_t *d_chosen = (int32_t *)gtu_dev_upload(chosen, (size_t)rows * sizeof *chosen);
    const size_t ws = vox_k_logits_workspace_rows(rows, v), ws1 = vox_k_logits_workspace(v);
    CHECK_MSG(ws == (size_t)rows * ws1, "%s: workspace_rows %zu, rows * workspace %zu", what, ws,
              (size_t)rows * ws1);
    void *d_ws = gtu_dev_alloc(ws), *d_ws1 = gtu_dev_alloc(ws1);
    const size_t out_bytes = (size_t)rows * sizeof(vox_k_logits_result);
    vox_k_logits_result *d_out = (vox_k_logits_result *)gtu_dev_alloc(out_bytes);
    vox_k_logits_result *d_one = (vox_k_logits_result *)gtu_dev_alloc(sizeof *d_one);
    GTU_CUDA(cudaMemset(d_ws, 0xff, ws));
    GTU_CUDA(cudaMemset(d_out, 0xff, out_bytes));
    vox_k_logits_stats_rows(d_out, d_l, rows, v, with_chosen ? d_chosen : NULL, k, d_ws, 0);
    vox_k_logits_result *got = (vox_k_logits_result *)gtu_malloc(out_bytes);
    gtu_download(got, d_out, out_bytes);

    int bad = 0;
    for (int r = 0; r < rows; r++) {
        GTU_CUDA(cudaMemset(d_ws1, 0xff, ws1));
        GTU_CUDA(cudaMemset(d_one, 0xff, sizeof *d_one));
        vox_k_logits_stats(d_one, d_l + (size_t)r * v, v, chosen[r], k, d_ws1, 0);
        vox_k_logits_result one;
        gtu_download(&one, d_one, sizeof one);
        if (memcmp(&one, &got[r], sizeof one) == 0) continue;
        if (bad++ < 5) {
            const vox_k_logits_result *g = &got[r];
            fprintf(stderr,
                    "  %s row %d (chosen %d): rows/single argmax %d/%d max %a/%a second %a/%a "
                    "lse %a/%a chosen %a/%a k %d/%d\n",
                    what, r, chosen[r], g->argmax, one.argmax, g->max_logit, one.max_logit,
                    g->second_logit, one.second_logit, g->logsumexp, one.logsumexp,
                    g->chosen_logit, one.chosen_logit, g->k, one.k);
            for (int i = 0; i < 20; i++)
                if (g->top_ids[i] != one.top_ids[i] ||
                    memcmp(&g->top_logits[i], &one.top_logits[i], sizeof(float)) != 0)
                    fprintf(stderr, "    top[%d]: id %d/%d logit %a/%a\n", i, g->top_ids[i],
                            one.top_ids[i], g->top_logits[i], one.top_logits[i]);
        }
    }
    CHECK_MSG(bad == 0, "%s: %d of %d rows differ from the single-row kernel", what, bad, rows);
    if (!bad)
        printf("  ok %-44s every row bit-identical to the single-row kernel\n", what);

    free(h), free(chosen), free(got);
    gtu_dev_free(d_l), gtu_dev_free(d_chosen), gtu_dev_free(d_ws), gtu_dev_free(d_ws1);
    gtu_dev_free(d_out), gtu_dev_free(d_one);
}

/* ---- timing ---------------------------------------------------------------------------------- */

/* What time_launches enqueues: one call of a launcher on stream st. */
typedef struct {
    int what; /* 0: two dependent 1-element fills (the launch floor), 1: logits_stats */
    int32_t *d_i32;
    vox_k_logits_result *d_out;
    const uint16_t *d_l;
    void *d_ws;
    int64_t v;
    int k;
} launch_case;

static void enqueue_case(const launch_case *c, cudaStream_t st) {
    if (c->what == 0) {
        vox_k_fill_i32(c->d_i32, 1, 1, st);
        vox_k_fill_i32(c->d_i32, 2, 1, st);
    } else {
        vox_k_logits_stats(c->d_out, c->d_l, c->v, -1, c->k, c->d_ws, st);
    }
}

/* Mean microseconds of one call, back to back on a stream and as a replayed graph of one call. */
static void time_launches(const char *label, const launch_case *c) {
    double us;
    GTU_TIME_US(us, 200, enqueue_case(c, 0));
    printf("  time %-40s %6.2f us a call (stream)", label, us);
    cudaStream_t st;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    GTU_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    GTU_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    enqueue_case(c, st);
    GTU_CUDA(cudaStreamEndCapture(st, &g));
    GTU_CUDA(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t a, b;
    GTU_CUDA(cudaEventCreate(&a));
    GTU_CUDA(cudaEventCreate(&b));
    GTU_CUDA(cudaGraphLaunch(ge, st));
    GTU_CUDA(cudaEventRecord(a, st));
    for (int it = 0; it < 200; it++) GTU_CUDA(cudaGraphLaunch(ge, st));
    GTU_CUDA(cudaEventRecord(b, st));
    GTU_CUDA(cudaStreamSynchronize(st));
    float ms;
    GTU_CUDA(cudaEventElapsedTime(&ms, a, b));
    printf(", %6.2f us (graph replay)\n", ms * 1000.0 / 200);
    GTU_CUDA(cudaEventDestroy(a));
    GTU_CUDA(cudaEventDestroy(b));
    GTU_CUDA(cudaGraphExecDestroy(ge));
    GTU_CUDA(cudaGraphDestroy(g));
    GTU_CUDA(cudaStreamDestroy(st));
}

static void time_misc(void) {
    double us;
    /* logits: once per decoded token, k = 0 unless logprobs are asked for. The floor is two
     * dependent launches that do nothing: what any two-launch design costs here. v = 2048 is one
     * pass-1 block: the fixed cost of the chain, without the row's data. */
    const int64_t v = 131072;
    uint16_t *h = make_logits(FILL_NORMAL, v, 0);
    launch_case c = {0};
    c.d_i32 = (int32_t *)gtu_dev_alloc(sizeof(int32_t));
    c.d_l = (const uint16_t *)gtu_dev_upload(h, (size_t)v * 2);
    c.d_ws = gtu_dev_alloc(vox_k_logits_workspace(v));
    c.d_out = (vox_k_logits_result *)gtu_dev_alloc(sizeof *c.d_out);
    time_launches("floor: two dependent 1-thread launches", &c);
    c.what = 1;
    const int ks[] = {0, 1, 5, 20};
    char label[64];
    for (int i = 0; i < 4; i++) {
        c.v = v, c.k = ks[i];
        snprintf(label, sizeof label, "logits_stats v=131072 k=%d", ks[i]);
        time_launches(label, &c);
    }
    c.v = 2048, c.k = 0;
    time_launches("logits_stats v=2048 k=0", &c);
    free(h);
    {
        /* a batched decode step's rows in two launches */
        const int rows = 64;
        uint16_t *d_l = (uint16_t *)gtu_dev_alloc((size_t)rows * v * 2);
        GTU_CUDA(cudaMemset(d_l, 0, (size_t)rows * v * 2));
        void *d_ws = gtu_dev_alloc(vox_k_logits_workspace_rows(rows, v));
        vox_k_logits_result *d_out = (vox_k_logits_result *)gtu_dev_alloc(rows * sizeof *d_out);
        GTU_TIME_US(us, 100, vox_k_logits_stats_rows(d_out, d_l, rows, v, NULL, 0, d_ws, 0));
        printf("  time logits_stats_rows 64 x 131072 k=0: %6.2f us\n", us);
        gtu_dev_free(d_l), gtu_dev_free(d_ws), gtu_dev_free(d_out);
    }
    gtu_dev_free(c.d_i32), gtu_dev_free((void *)c.d_l), gtu_dev_free(c.d_ws), gtu_dev_free(c.d_out);

    /* rope: decode q (1 x 32 x 128), prefill q (4096 rows) */
    int64_t pos = 1000;
    int64_t *d_pos = (int64_t *)gtu_dev_upload(&pos, sizeof pos);
    uint16_t *d_x = (uint16_t *)gtu_dev_alloc((size_t)4096 * 4096 * 2);
    GTU_CUDA(cudaMemset(d_x, 0, (size_t)4096 * 4096 * 2));
    GTU_TIME_US(us, 200, rope_in_place(d_x, 1, 32, 128, d_pos, 1e8));
    printf("  time rope 1 x 32 x 128: %6.2f us\n", us);
    GTU_TIME_US(us, 20, rope_in_place(d_x, 4096, 32, 128, d_pos, 1e8));
    printf("  time rope 4096 x 32 x 128: %6.2f us, %6.0f GB/s\n", us, 4.0 * 4096 * 4096 / us / 1e3);

    /* im2col: conv1 (mel, channels-first 128 x 3000) and conv2 (time-major 3000 x 1280, s 2) */
    uint16_t *d_cols = (uint16_t *)gtu_dev_alloc((size_t)1500 * 3840 * 2);
    GTU_TIME_US(us, 20, vox_k_im2col_k3(d_cols, d_x, 1, 1, 128, 3000, 1, 0));
    printf("  time im2col conv1 (128 x 3000, s=1): %6.2f us\n", us);
    GTU_TIME_US(us, 20, vox_k_im2col_k3(d_cols, d_x, 0, 1, 1280, 3000, 2, 0));
    printf("  time im2col conv2 (3000 x 1280, s=2): %6.2f us, %6.0f GB/s\n", us,
           (3000.0 * 1280 * 2 + 1500.0 * 3840 * 2) / us / 1e3);

    /* embed: a prompt of 400 ids, and one decode id, C = 3072 */
    int32_t ids[400];
    for (int i = 0; i < 400; i++) ids[i] = (i * 977) % 4096;
    int32_t *d_ids = (int32_t *)gtu_dev_upload(ids, sizeof ids);
    GTU_TIME_US(us, 200, vox_k_embed(d_cols, d_x, d_ids, 1, 3072, 0));
    printf("  time embed 1 x 3072: %6.2f us\n", us);
    GTU_TIME_US(us, 50, vox_k_embed(d_cols, d_x, d_ids, 400, 3072, 0));
    printf("  time embed 400 x 3072: %6.2f us\n", us);
    gtu_dev_free(d_pos), gtu_dev_free(d_x), gtu_dev_free(d_cols), gtu_dev_free(d_ids);
}

int main(void) {
    gtu_require_device();
    cpu = gtu_cpu_backend();
    rng = gtu_rng_seed(31337);

    /* im2col: the encoder's two convolutions, then odd shapes (t_in 1, 2, odd and even with
     * stride 2, c_in not a multiple of 8 nor of the 32-channel tile, batches) */
    test_im2col(1, 1, 128, 3000, 1, 0);
    test_im2col(1, 2, 128, 3000, 1, 1);
    test_im2col(1, 3, 7, 17, 2, 0);
    test_im2col(1, 2, 33, 1, 1, 0);
    test_im2col(1, 1, 128, 2, 2, 0);
    test_im2col(1, 1, 40, 65, 2, 0);
    test_im2col(0, 1, 1280, 3000, 2, 0);
    test_im2col(0, 2, 1280, 3000, 2, 0);
    test_im2col(0, 2, 64, 17, 1, 0);
    test_im2col(0, 3, 7, 5, 2, 0);
    test_im2col(0, 1, 1280, 1, 2, 0);
    test_im2col(0, 2, 1280, 4, 2, 0);
    test_im2col(0, 1, 64, 17, 2, 1);

    /* RoPE: the decoder's q and k (32 and 8 heads of 128) at decode and prefill, positions 0 to
     * the end of a 32k context, more rows than blocks (grid-stride), head_dim 64, and shapes that
     * take the scalar path (head_dim 2 and 6, misaligned x) */
    test_rope(1, 32, 128, 0, 1e8, 0);
    test_rope(1, 8, 128, 31997, 1e8, 0);
    test_rope(3, 8, 128, 31997, 1e8, 0);
    test_rope(17, 3, 64, 5, 1e4, 0);
    test_rope(1500, 32, 128, 0, 1e8, 0);
    test_rope(2000, 8, 128, 1000, 1e8, 0);
    test_rope(7, 1, 2, 100, 1e4, 0);
    test_rope(5, 5, 6, 3, 1e8, 0);
    test_rope(17, 8, 128, 77, 1e8, 1);

    /* RoPE + cache write per row: one row, a pool of exactly t rows, the decoder's heads at the
     * end of a 32k context, more rows than blocks (1300), head_dim 6 and misaligned pointers
     * (scalar path), and no kv heads (RoPE alone) */
    test_qkv_rope_rows(1, 32, 8, 128, 32000, 7, 1e8, 0);
    test_qkv_rope_rows(3, 32, 8, 128, 32000, 3, 1e8, 0);
    test_qkv_rope_rows(17, 8, 2, 64, 5000, 64, 1e4, 0);
    test_qkv_rope_rows(64, 32, 8, 128, 32000, 100, 1e8, 0);
    test_qkv_rope_rows(130, 4, 2, 128, 1000, 131, 1e8, 0);
    test_qkv_rope_rows(1300, 4, 1, 64, 3000, 1500, 1e6, 0);
    test_qkv_rope_rows(7, 5, 1, 6, 300, 9, 1e4, 0);
    test_qkv_rope_rows(17, 8, 2, 128, 500, 20, 1e8, 1);
    test_qkv_rope_rows(5, 4, 0, 64, 100, 1, 1e4, 0);

    /* embed: vocab 1000+37, every row width, up to a 1500-token prompt, misaligned table */
    const int64_t ns[] = {1, 3, 17, 1500}, cs[] = {1, 7, 64, 127, 3072};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++) test_embed(1037, ns[i], cs[j], 0);
    test_embed(1037, 17, 3072, 1);

    /* logits: the vocabulary, 1000+37, 1, 2, 7, a block's chunk and one past it, and a row long
     * enough (> 2M) that pass-1 blocks loop over several chunks */
    const int64_t vs[] = {131072, 1037, 1, 2, 7, 2048, 2049, 3145765};
    const int kk[] = {0, 1, 5, 20};
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) {
            test_logits(FILL_DISTINCT, vs[i], kk[j], -1, 0);
            if (kk[j] == 5) test_logits(FILL_DISTINCT, vs[i], kk[j], (int32_t)(vs[i] / 3), 0);
        }
    test_logits(FILL_DISTINCT, 131072, 20, 17, 1);
    test_logits(FILL_DISTINCT, 1037, 20, -1, 1);
    test_logits(FILL_NORMAL, 131072, 20, 99, 0);
    test_logits(FILL_NORMAL, 3145765, 20, -1, 0);
    test_logits(FILL_TIES, 131072, 20, -1, 0);
    test_logits(FILL_TIES, 1037, 20, 5, 1);
    test_logits(FILL_EQUAL, 131072, 5, -1, 0);
    test_logits(FILL_EQUAL, 7, 20, -1, 0);
    test_logits(FILL_MASKED, 131072, 20, -1, 0);
    test_logits(FILL_MASKED, 1037, 20, -1, 0);

    /* logits rows (one per sequence of a batched decode step): 1, 2, 5, 64, 130 rows, ties,
     * chosen ids (some -1) or none, odd v (rows off the vectors), v = 1, a row past 2M */
    test_logits_rows(FILL_NORMAL, 1, 131072, 20, 1);
    test_logits_rows(FILL_NORMAL, 2, 131072, 5, 1);
    test_logits_rows(FILL_TIES, 5, 131072, 20, 1);
    test_logits_rows(FILL_DISTINCT, 5, 7, 5, 1);
    test_logits_rows(FILL_NORMAL, 64, 131072, 0, 0);
    test_logits_rows(FILL_NORMAL, 64, 131072, 20, 1);
    test_logits_rows(FILL_TIES, 64, 2049, 20, 1);
    test_logits_rows(FILL_EQUAL, 5, 1037, 5, 1);
    test_logits_rows(FILL_MASKED, 64, 1037, 20, 1);
    test_logits_rows(FILL_DISTINCT, 130, 131072, 1, 1);
    test_logits_rows(FILL_TIES, 130, 1037, 20, 0);
    test_logits_rows(FILL_NORMAL, 2, 1, 20, 1);
    test_logits_rows(FILL_NORMAL, 2, 3145765, 20, 1);

    time_misc();

    vox_backend_destroy(cpu);
    return test_finish("test_kernels_misc");
}
