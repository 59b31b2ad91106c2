/* The CUDA backend against the CPU backend, operation by operation, through the operation table
 * the pipeline uses (so the wiring in src/backend/cuda.c is tested, not only the kernels), with
 * the call shapes of the model and awkward ones.
 *
 * Inputs are random values already representable in bf16, so both backends start from the same
 * numbers; the CPU computes in fp32. Tolerance: atol + rtol * |ref| per element with rtol = 2^-7
 * (two bf16 roundings: the output's, and one intermediate such as GELU's input to a GEMM) and an
 * atol scaled to the magnitude of the op's terms (fp32 accumulation order differs between cuBLAS
 * and the CPU loop by about K * 2^-24 * sum|terms|). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "gpu/gpu_test_util.h"
#include "harness.h"

static vox_backend *cpu, *gpu;
static gtu_rng rng;

/* A pair of tensors holding the same bf16-representable values: f32 on the CPU, bf16 on the GPU. */
typedef struct {
    vox_tensor c, g;
    float *host;
    size_t n;
} pair;

static pair pair_new(int64_t rows, int64_t cols, float scale) {
    pair p = {0};
    p.n = (size_t)(rows * cols);
    p.host = malloc(p.n * sizeof(float));
    for (size_t i = 0; i < p.n; i++) p.host[i] = gtu_normal(&rng) * scale;
    gtu_round_bf16_inplace(p.host, p.n);
    vox_error err;
    int st = vox_tensor_new2(cpu, &p.c, VOX_DTYPE_F32, rows, cols, &err) ||
             vox_tensor_new2(gpu, &p.g, gpu->act_type, rows, cols, &err);
    if (st) {
        fprintf(stderr, "allocation failed: %s\n", err.msg);
        exit(1);
    }
    cpu->upload_f32(cpu, &p.c, p.host, p.n);
    gpu->upload_f32(gpu, &p.g, p.host, p.n);
    return p;
}

/* A weight: the CPU keeps a view of host f32, the GPU uploads it (converted to bf16, exact). */
static pair weight_new(int ndim, const int64_t *shape, float scale) {
    pair p = {0};
    p.n = 1;
    for (int i = 0; i < ndim; i++) p.n *= (size_t)shape[i];
    p.host = malloc(p.n * sizeof(float));
    for (size_t i = 0; i < p.n; i++) p.host[i] = gtu_normal(&rng) * scale;
    gtu_round_bf16_inplace(p.host, p.n);
    vox_error err;
    if (cpu->weight(cpu, &p.c, p.host, VOX_DTYPE_F32, ndim, shape, false, &err) ||
        gpu->weight(gpu, &p.g, p.host, VOX_DTYPE_F32, ndim, shape, false, &err)) {
        fprintf(stderr, "weight failed: %s\n", err.msg);
        exit(1);
    }
    return p;
}

static void pair_free(pair *p, bool is_weight) {
    if (is_weight) {
        cpu->free_weight(cpu, &p->c);
        gpu->free_weight(gpu, &p->g);
    } else {
        vox_tensor_free(cpu, &p->c);
        vox_tensor_free(gpu, &p->g);
    }
    free(p->host);
}

/* Compares the GPU result with the CPU one, every element. */
static void compare(const char *what, pair *p, double atol, double rtol) {
    vox_error err;
    float *got = malloc(p->n * sizeof(float));
    float *ref = malloc(p->n * sizeof(float));
    CHECK_MSG(gpu->download_f32(gpu, got, &p->g, p->n, &err) == VOX_OK, "%s: %s", what, err.msg);
    cpu->download_f32(cpu, ref, &p->c, p->n, &err);
    gtu_compare(what, got, ref, p->n, atol, rtol);
    gtu_check_nonzero(what, got, p->n);
    free(got);
    free(ref);
}

static void test_matmul(int64_t M, int64_t N, int64_t K, bool bias) {
    char what[128];
    snprintf(what, sizeof what, "matmul M=%lld N=%lld K=%lld bias=%d", (long long)M, (long long)N,
             (long long)K, bias);
    pair x = pair_new(M, K, 1.0f), y = pair_new(M, N, 0.0f);
    int64_t ws[2] = {N, K}, bs[1] = {N};
    pair w = weight_new(2, ws, 1.0f / sqrtf((float)K)), b = weight_new(1, bs, 0.5f);
    cpu->matmul(cpu, &y.c, &x.c, &w.c, bias ? &b.c : NULL);
    gpu->matmul(gpu, &y.g, &x.g, &w.g, bias ? &b.g : NULL);
    compare(what, &y, 1e-5 * sqrt((double)K), 1.0 / 256);
    pair_free(&x, false), pair_free(&y, false), pair_free(&w, true), pair_free(&b, true);
}

static void test_norms(int64_t M, int64_t C) {
    char what[128];
    pair x = pair_new(M, C, 2.0f), y = pair_new(M, C, 0.0f);
    int64_t s[1] = {C};
    pair w = weight_new(1, s, 1.0f), b = weight_new(1, s, 0.2f);
    snprintf(what, sizeof what, "layer_norm M=%lld C=%lld", (long long)M, (long long)C);
    cpu->layer_norm(cpu, &y.c, &x.c, &w.c, &b.c, 1e-5f);
    gpu->layer_norm(gpu, &y.g, &x.g, &w.g, &b.g, 1e-5f);
    compare(what, &y, 1e-4, 1.0 / 128);
    snprintf(what, sizeof what, "rms_norm M=%lld C=%lld in place", (long long)M, (long long)C);
    cpu->rms_norm(cpu, &x.c, &x.c, &w.c, 1e-5f);
    gpu->rms_norm(gpu, &x.g, &x.g, &w.g, 1e-5f);
    compare(what, &x, 1e-4, 1.0 / 128);
    /* the residual add fused with the next norm: x += r; y = RMSNorm(x), from fresh inputs
     * that both backends hold exactly (x above was normalised in place, differently rounded) */
    pair xs = pair_new(M, C, 2.0f), r = pair_new(M, C, 2.0f), r2 = pair_new(M, C, 2.0f);
    snprintf(what, sizeof what, "add_rms_norm M=%lld C=%lld (sum)", (long long)M, (long long)C);
    cpu->add_rms_norm(cpu, &y.c, &xs.c, &r.c, &w.c, 1e-5f);
    gpu->add_rms_norm(gpu, &y.g, &xs.g, &r.g, &w.g, 1e-5f);
    compare(what, &xs, 0, 1.0 / 256); /* one rounding of the sum */
    snprintf(what, sizeof what, "add_rms_norm M=%lld C=%lld (norm)", (long long)M, (long long)C);
    compare(what, &y, 1e-4, 1.0 / 64); /* the sum's rounding, then the norm's two */
    /* y aliasing r, on a fresh x again */
    pair x2 = pair_new(M, C, 2.0f);
    snprintf(what, sizeof what, "add_rms_norm M=%lld C=%lld (y aliasing r)", (long long)M, (long long)C);
    cpu->add_rms_norm(cpu, &r2.c, &x2.c, &r2.c, &w.c, 1e-5f);
    gpu->add_rms_norm(gpu, &r2.g, &x2.g, &r2.g, &w.g, 1e-5f);
    compare(what, &r2, 1e-4, 1.0 / 64);
    pair_free(&xs, false), pair_free(&x2, false), pair_free(&r2, false);
    pair_free(&r, false);
    pair_free(&x, false), pair_free(&y, false), pair_free(&w, true), pair_free(&b, true);
}

static void test_elementwise(int64_t M, int64_t C) {
    char what[128];
    pair a = pair_new(M, C, 2.0f), b = pair_new(M, C, 2.0f), y = pair_new(M, C, 0.0f);
    snprintf(what, sizeof what, "add %lldx%lld", (long long)M, (long long)C);
    cpu->add(cpu, &y.c, &a.c, &b.c);
    gpu->add(gpu, &y.g, &a.g, &b.g);
    compare(what, &y, 0, 1.0 / 256);
    snprintf(what, sizeof what, "swiglu %lldx%lld", (long long)M, (long long)C / 2);
    if (C % 2 == 0) { /* a row of a holds (gate | up) */
        pair half = pair_new(M, C / 2, 0.0f);
        cpu->swiglu(cpu, &half.c, &a.c);
        gpu->swiglu(gpu, &half.g, &a.g);
        /* silu rounded, then the product: two roundings */
        compare(what, &half, 1e-6, 1.0 / 128);
        pair_free(&half, false);
    }
    snprintf(what, sizeof what, "gelu %lldx%lld", (long long)M, (long long)C);
    cpu->gelu(cpu, &a.c);
    gpu->gelu(gpu, &a.g);
    compare(what, &a, 1e-6, 1.0 / 256);
    pair_free(&a, false), pair_free(&b, false), pair_free(&y, false);
}

/* x[B*T, C] += positions[T, C] (f32), as the encoder does for B chunks. */
static void test_add_rows(int B, int64_t T, int64_t C) {
    char what[128];
    snprintf(what, sizeof what, "add_rows_f32 B=%d T=%lld C=%lld", B, (long long)T, (long long)C);
    pair x = pair_new(B * T, C, 1.0f);
    float *pos = malloc((size_t)(T * C) * sizeof(float));
    for (int64_t i = 0; i < T * C; i++) pos[i] = sinf((float)i * 0.37f); /* not bf16-exact */
    int64_t s[2] = {T, C};
    vox_tensor pc, pg;
    vox_error err;
    cpu->weight(cpu, &pc, pos, VOX_DTYPE_F32, 2, s, true, &err);
    gpu->weight(gpu, &pg, pos, VOX_DTYPE_F32, 2, s, true, &err);
    cpu->add_rows_f32(cpu, &x.c, &pc);
    gpu->add_rows_f32(gpu, &x.g, &pg);
    compare(what, &x, 0, 1.0 / 256);
    cpu->free_weight(cpu, &pc);
    gpu->free_weight(gpu, &pg);
    pair_free(&x, false);
    free(pos);
}

/* Both encoder convolutions for B chunks: conv1 reads [B, C_in, T] channels-first, conv2 reads
 * conv1's time-major output with stride 2. */
static void test_conv(int B, int c_in, int c_mid, int t_in) {
    char what[160];
    pair x = pair_new((int64_t)B * c_in, t_in, 1.0f); /* [B, c_in, t_in] */
    pair h = pair_new((int64_t)B * t_in, c_mid, 0.0f);
    int t_out = (t_in - 1) / 2 + 1;
    pair y = pair_new((int64_t)B * t_out, c_mid, 0.0f);
    int64_t s1[3] = {c_mid, c_in, 3}, s2[3] = {c_mid, c_mid, 3}, sb[1] = {c_mid};
    pair w1 = weight_new(3, s1, 1.0f / sqrtf(3.0f * c_in)), b1 = weight_new(1, sb, 0.1f);
    pair w2 = weight_new(3, s2, 1.0f / sqrtf(3.0f * c_mid)), b2 = weight_new(1, sb, 0.1f);
    cpu->conv1d_k3(cpu, &h.c, &x.c, true, B, t_in, &w1.c, &b1.c, 1);
    gpu->conv1d_k3(gpu, &h.g, &x.g, true, B, t_in, &w1.g, &b1.g, 1);
    snprintf(what, sizeof what, "conv1 (channels-first, s1) B=%d c_in=%d c_out=%d t=%d", B, c_in, c_mid, t_in);
    compare(what, &h, 1e-5 * sqrt(3.0 * c_in), 1.0 / 256);
    /* conv2 from the GPU's own conv1 output, copied to the CPU, so the comparison is of conv2 alone */
    float *hh = malloc(h.n * sizeof(float));
    vox_error err;
    gpu->download_f32(gpu, hh, &h.g, h.n, &err);
    cpu->upload_f32(cpu, &h.c, hh, h.n);
    free(hh);
    cpu->conv1d_k3(cpu, &y.c, &h.c, false, B, t_in, &w2.c, &b2.c, 2);
    gpu->conv1d_k3(gpu, &y.g, &h.g, false, B, t_in, &w2.g, &b2.g, 2);
    snprintf(what, sizeof what, "conv2 (time-major, s2) B=%d c=%d t_in=%d", B, c_mid, t_in);
    compare(what, &y, 1e-5 * sqrt(3.0 * c_mid), 1.0 / 256);
    pair_free(&x, false), pair_free(&h, false), pair_free(&y, false);
    pair_free(&w1, true), pair_free(&b1, true), pair_free(&w2, true), pair_free(&b2, true);
}

/* qkv [T, (H + 2Hkv) D] -> q (roped), k (roped) and v into cache rows [pos0, pos0 + T). */
static void test_qkv_rope_cache(int64_t T, int H, int Hkv, int D, int64_t pos0, int64_t capacity) {
    char what[160];
    int64_t QD = (int64_t)H * D, KD = (int64_t)Hkv * D;
    pair qkv = pair_new(T, QD + 2 * KD, 1.0f), q = pair_new(T, QD, 0.0f);
    pair kc = pair_new(capacity, KD, 1.0f), vc = pair_new(capacity, KD, 1.0f);
    /* torch rounds x*cos, rotate_half(x)*sin and their sum to bf16, with cos/sin themselves in
     * bf16: four roundings of terms bounded by |a| + |b| for the pair (a, b) of each output. */
    float *qb = malloc(q.n * sizeof(float)), *kb = malloc(kc.n * sizeof(float));
    int half = D / 2;
    for (size_t i = 0; i < kc.n; i++) kb[i] = 0.0f; /* untouched rows and v: exact */
    for (int64_t t = 0; t < T; t++) {
        const float *row = qkv.host + t * (QD + 2 * KD);
        for (int64_t j = 0; j < QD; j++) {
            int64_t h = j / D, i = j % D, p = i < half ? i + half : i - half;
            qb[t * QD + j] = (fabsf(row[j]) + fabsf(row[h * D + p])) * 4.0f / 256.0f + 1e-6f;
        }
        for (int64_t j = 0; j < KD; j++) {
            int64_t h = j / D, i = j % D, p = i < half ? i + half : i - half;
            kb[(pos0 + t) * KD + j] = (fabsf(row[QD + j]) + fabsf(row[QD + h * D + p])) * 4.0f / 256.0f + 1e-6f;
        }
    }
    cpu->qkv_rope_cache(cpu, &q.c, &kc.c, &vc.c, &qkv.c, H, Hkv, D, pos0, 1e8);
    gpu->qkv_rope_cache(gpu, &q.g, &kc.g, &vc.g, &qkv.g, H, Hkv, D, pos0, 1e8);
    vox_error err;
    pair *outs[2] = {&q, &kc};
    float *bounds[2] = {qb, kb};
    const char *names[2] = {"q", "k cache"};
    for (int o = 0; o < 2; o++) {
        float *got = malloc(outs[o]->n * sizeof(float)), *ref = malloc(outs[o]->n * sizeof(float));
        gpu->download_f32(gpu, got, &outs[o]->g, outs[o]->n, &err);
        cpu->download_f32(cpu, ref, &outs[o]->c, outs[o]->n, &err);
        snprintf(what, sizeof what, "qkv_rope_cache %s T=%lld H=%d/%d D=%d pos0=%lld", names[o],
                 (long long)T, H, Hkv, D, (long long)pos0);
        gtu_compare_bound(what, got, ref, bounds[o], outs[o]->n);
        free(got), free(ref);
    }
    snprintf(what, sizeof what, "qkv_rope_cache v cache T=%lld pos0=%lld", (long long)T, (long long)pos0);
    compare(what, &vc, 0, 0);
    free(qb), free(kb);
    pair_free(&qkv, false), pair_free(&q, false), pair_free(&kc, false), pair_free(&vc, false);
}

/* Attention through the table: encoder (batched, bidirectional), prefill (causal, GQA, q_pos0 > 0
 * against a cache with spare rows), decode (one row against the cache). */
static void test_attention(int batch, int t_q, int t_k, int cap, int H, int Hkv, int D, bool causal,
                           int64_t q_pos0) {
    char what[160];
    snprintf(what, sizeof what, "attention B=%d tq=%d tk=%d cap=%d H=%d/%d D=%d causal=%d pos0=%lld",
             batch, t_q, t_k, cap, H, Hkv, D, causal, (long long)q_pos0);
    pair q = pair_new((int64_t)batch * t_q, (int64_t)H * D, 1.0f);
    pair k = pair_new((int64_t)batch * cap, (int64_t)Hkv * D, 1.0f);
    pair v = pair_new((int64_t)batch * cap, (int64_t)Hkv * D, 1.0f);
    pair o = pair_new((int64_t)batch * t_q, (int64_t)H * D, 0.0f);
    vox_tensor kc = vox_tensor_rows(&k.c, 0, (int64_t)batch * cap), kg = vox_tensor_rows(&k.g, 0, (int64_t)batch * cap);
    vox_tensor vc = vox_tensor_rows(&v.c, 0, (int64_t)batch * cap), vg = vox_tensor_rows(&v.g, 0, (int64_t)batch * cap);
    if (batch == 1) { /* the decoder passes only the filled rows of its cache */
        kc = vox_tensor_rows(&k.c, 0, t_k), kg = vox_tensor_rows(&k.g, 0, t_k);
        vc = vox_tensor_rows(&v.c, 0, t_k), vg = vox_tensor_rows(&v.g, 0, t_k);
    }
    float scale = 1.0f / sqrtf((float)D);
    cpu->attention(cpu, &o.c, &q.c, &kc, &vc, batch, t_q, batch == 1 ? t_k : cap, H, Hkv, D, scale, causal, q_pos0);
    gpu->attention(gpu, &o.g, &q.g, &kg, &vg, batch, t_q, batch == 1 ? t_k : cap, H, Hkv, D, scale, causal, q_pos0);
    compare(what, &o, 1.0 / 256, 1.0 / 128);
    pair_free(&q, false), pair_free(&k, false), pair_free(&v, false), pair_free(&o, false);
}

static void test_embed_copy(int64_t V, int64_t C, size_t n) {
    char what[128];
    int64_t s[2] = {V, C};
    pair table = weight_new(2, s, 1.0f);
    pair y = pair_new((int64_t)n, C, 0.0f);
    int32_t *ids = malloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++) ids[i] = (int32_t)(gtu_next_u64(&rng) % (uint64_t)V);
    ids[0] = (int32_t)(V - 1);
    cpu->embed(cpu, &y.c, &table.c, ids, n);
    gpu->embed(gpu, &y.g, &table.g, ids, n);
    snprintf(what, sizeof what, "embed V=%lld C=%lld n=%zu", (long long)V, (long long)C, n);
    compare(what, &y, 0, 0);
    /* copy rows into the middle of a bigger tensor (the [AUDIO] replacement) */
    pair big = pair_new((int64_t)n + 7, C, 1.0f);
    vox_tensor dc = vox_tensor_rows(&big.c, 3, (int64_t)n), dg = vox_tensor_rows(&big.g, 3, (int64_t)n);
    cpu->copy(cpu, &dc, &y.c);
    gpu->copy(gpu, &dg, &y.g);
    snprintf(what, sizeof what, "copy rows C=%lld n=%zu", (long long)C, n);
    compare(what, &big, 0, 0);
    pair_free(&table, true), pair_free(&y, false), pair_free(&big, false);
    free(ids);
}

static void test_logits(int64_t V, int k, int32_t chosen) {
    pair l = pair_new(1, V, 3.0f);
    vox_logits_stats a, b;
    vox_error err;
    CHECK(cpu->logits_stats(cpu, &l.c, chosen, k, &a, &err) == VOX_OK);
    CHECK_MSG(gpu->logits_stats(gpu, &l.g, chosen, k, &b, &err) == VOX_OK, "%s", err.msg);
    /* Inputs are bf16 values: ties are possible; the argmax rule (first index) must agree. */
    CHECK_MSG(a.argmax == b.argmax, "logits V=%lld: argmax %d vs cpu %d", (long long)V, b.argmax, a.argmax);
    CHECK(a.chosen == b.chosen);
    CHECK_CLOSE(b.chosen_logprob, a.chosen_logprob, 1e-4, 1e-5);
    CHECK_CLOSE(b.argmax_margin, a.argmax_margin, 1e-6, 0);
    CHECK(a.k == b.k);
    for (int i = 0; i < a.k && i < b.k; i++) {
        CHECK_MSG(a.top_ids[i] == b.top_ids[i], "logits V=%lld top[%d]: %d vs cpu %d", (long long)V,
                  i, b.top_ids[i], a.top_ids[i]);
        CHECK_CLOSE(b.top_logprobs[i], a.top_logprobs[i], 1e-4, 1e-5);
    }
    pair_free(&l, false);
}

int main(void) {
    gtu_require_device();
    vox_error err;
    if (vox_backend_create("cpu", &cpu, &err) || vox_backend_create("cuda:0", &gpu, &err)) {
        fprintf(stderr, "backend: %s\n", err.msg);
        return 1;
    }
    rng = gtu_rng_seed(20261130);

    test_matmul(1, 3072, 3072, false);  /* decode GEMV */
    test_matmul(17, 1027, 515, true);   /* awkward, with bias */
    test_matmul(5, 9, 7, false);        /* awkward, no bias */
    test_matmul(388, 1024, 3072, false); /* prefill k/v projection */
    test_matmul(3000, 1280, 1280, true); /* encoder, 2 chunks */
    test_norms(1, 3072);
    test_norms(17, 1280);
    test_norms(3000, 1280);
    test_norms(5, 127);
    test_elementwise(3, 8192);
    test_elementwise(17, 1027);
    test_elementwise(5, 2 * 8192);  /* swiglu at the model's ffn width */
    test_elementwise(2, 2 * 37);    /* swiglu, scalar path */
    test_add_rows(1, 1500, 1280);
    test_add_rows(2, 1500, 64);
    test_add_rows(3, 7, 33);
    test_conv(1, 128, 64, 3000);
    test_conv(2, 128, 64, 3000);
    test_conv(3, 7, 40, 17);
    test_qkv_rope_cache(1, 32, 8, 128, 411, 500);
    test_qkv_rope_cache(388, 32, 8, 128, 0, 400);
    test_qkv_rope_cache(5, 4, 2, 32, 31000, 31010);
    test_qkv_rope_cache(3, 3, 1, 6, 7, 12); /* odd sizes: the scalar path */
    test_attention(2, 1500, 1500, 1500, 20, 20, 64, false, 0); /* encoder, 2 chunks */
    test_attention(3, 17, 17, 17, 4, 4, 64, false, 0);
    test_attention(1, 388, 388, 388, 32, 8, 128, true, 0);     /* prefill */
    test_attention(1, 7, 130, 130, 4, 2, 32 * 4, true, 123);   /* prompt in pieces */
    test_attention(1, 1, 389, 389, 32, 8, 128, true, 388);     /* decode */
    test_attention(1, 1, 5000, 5000, 32, 8, 128, true, 4999);  /* long decode */
    test_embed_copy(1037, 3072, 17);
    test_embed_copy(131072, 128, 1);
    test_logits(131072, 20, -1);
    test_logits(1037, 5, 17);
    test_logits(2, 2, -1);

    CHECK_MSG(gpu->sync(gpu, &err) == VOX_OK, "sync: %s", err.msg);
    size_t live, peak;
    gpu->memory(gpu, &live, &peak);
    printf("pool: %zu bytes live at the end, peak %.1f MiB\n", live, peak / 1048576.0);
    vox_backend_destroy(gpu);
    vox_backend_destroy(cpu);
    return test_finish("cuda_backend");
}
