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

/* An output: zeros on the CPU; on the GPU as allocated, never written from the host, so that
 * only the operation under test writes it (under compute-sanitizer initcheck, reading it back
 * tells whether the tool saw those writes). */
static pair pair_fresh(int64_t rows, int64_t cols) {
    pair p = {0};
    p.n = (size_t)(rows * cols);
    p.host = calloc(p.n, sizeof(float));
    vox_error err;
    if (!p.host || vox_tensor_new2(cpu, &p.c, VOX_DTYPE_F32, rows, cols, &err) ||
        vox_tensor_new2(gpu, &p.g, gpu->act_type, rows, cols, &err)) {
        fprintf(stderr, "allocation failed: %s\n", p.host ? err.msg : "out of memory");
        exit(1);
    }
    cpu->upload_f32(cpu, &p.c, p.host, p.n);
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
    if (cpu->weight(cpu, &p.c, p.host, VOX_DTYPE_F32, ndim, shape, false, NULL, &err) ||
        gpu->weight(gpu, &p.g, p.host, VOX_DTYPE_F32, ndim, shape, false, NULL, &err)) {
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

/* fresh: y is a new allocation that only the GEMM writes (pair_fresh), as in the model */
static void test_matmul(int64_t M, int64_t N, int64_t K, bool bias, bool fresh) {
    char what[128];
    snprintf(what, sizeof what, "matmul M=%lld N=%lld K=%lld bias=%d%s", (long long)M, (long long)N,
             (long long)K, bias, fresh ? " (fresh output)" : "");
    pair x = pair_new(M, K, 1.0f), y = fresh ? pair_fresh(M, N) : pair_new(M, N, 0.0f);
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
    pair_free(&x, false), pair_free(&y, false), pair_free(&w, true), pair_free(&b, true);
}

/* A GPU tensor of random bf16 values (scale 0: zeros). */
static vox_tensor gpu_random(int64_t rows, int64_t cols, float scale) {
    pair p = pair_new(rows, cols, scale);
    vox_tensor t = p.g;
    vox_tensor_free(cpu, &p.c);
    free(p.host);
    return t;
}

/* got against want, both on the GPU, every element: |got - want| <= atol + rtol * (|want| +
 * |terms|), where terms (optional, same shape) are values a rounding of the result scales with. */
static void gpu_compare(const char *what, const vox_tensor *got, const vox_tensor *want,
                        const float *terms, double atol, double rtol) {
    size_t n = vox_tensor_numel(got);
    float *g = malloc(n * sizeof(float)), *w = malloc(n * sizeof(float));
    float *bound = malloc(n * sizeof(float));
    vox_error err;
    CHECK_MSG(gpu->download_f32(gpu, g, got, n, &err) == VOX_OK, "%s: %s", what, err.msg);
    CHECK_MSG(gpu->download_f32(gpu, w, want, n, &err) == VOX_OK, "%s: %s", what, err.msg);
    for (size_t i = 0; i < n; i++)
        bound[i] = (float)(atol + rtol * (fabs(w[i]) + (terms ? fabs(terms[i]) : 0.0)));
    gtu_compare_bound(what, g, w, bound, n);
    gtu_check_nonzero(what, g, n);
    free(g), free(w), free(bound);
}

/* A batch as the engine builds them: n_dec decode sequences (sequence i has dec_len[i] keys, its
 * last position written this step), then prompt chunks (pre_rows[i] rows from position
 * pre_pos0[i]); every sequence's blocks drawn at random from a pool of n_blocks blocks of bs
 * positions (block 0 never handed out), so neighbouring positions are far apart in the pool. */
typedef struct {
    vox_batch b;
    int32_t *ids, *pos, *slot, *row0, *len, *tables, *lrows;
    int64_t pool_rows;
} test_batch;

static test_batch batch_new(int n_dec, const int *dec_len, int n_pre, const int *pre_rows,
                            const int *pre_pos0, int bs, int n_blocks, int64_t vocab) {
    test_batch t = {0};
    int n_seqs = n_dec + n_pre, rows = n_dec, tw = 1;
    for (int i = 0; i < n_pre; i++) rows += pre_rows[i];
    for (int i = 0; i < n_seqs; i++) {
        int keys = i < n_dec ? dec_len[i] : pre_pos0[i - n_dec] + pre_rows[i - n_dec];
        if ((keys + bs - 1) / bs > tw) tw = (keys + bs - 1) / bs;
    }
    t.ids = calloc((size_t)n_seqs + 1, sizeof *t.ids);
    t.pos = calloc((size_t)rows, sizeof *t.pos);
    t.slot = calloc((size_t)rows, sizeof *t.slot);
    t.row0 = calloc((size_t)n_seqs + 1, sizeof *t.row0);
    t.len = calloc((size_t)n_seqs, sizeof *t.len);
    t.tables = calloc((size_t)n_seqs * tw, sizeof *t.tables);
    t.lrows = calloc((size_t)n_seqs, sizeof *t.lrows);
    int32_t *perm = malloc((size_t)n_blocks * sizeof *perm);
    for (int i = 0; i < n_blocks; i++) perm[i] = i;
    for (int i = n_blocks - 1; i > 1; i--) { /* shuffle blocks 1.. */
        int j = 1 + (int)(gtu_next_u64(&rng) % (uint64_t)i);
        int32_t x = perm[i];
        perm[i] = perm[j], perm[j] = x;
    }
    int next_block = 1, r = 0;
    for (int i = 0; i < n_seqs; i++) {
        int keys = i < n_dec ? dec_len[i] : pre_pos0[i - n_dec] + pre_rows[i - n_dec];
        int n = i < n_dec ? 1 : pre_rows[i - n_dec];
        int nb = (keys + bs - 1) / bs;
        if (next_block + nb > n_blocks) {
            fprintf(stderr, "test batch: a pool of %d blocks is too small (a bug in the test)\n", n_blocks);
            exit(1);
        }
        for (int j = 0; j < nb; j++) t.tables[(size_t)i * tw + j] = perm[next_block++];
        t.row0[i] = r;
        t.len[i] = keys;
        if (i < n_dec) t.ids[i] = (int32_t)(gtu_next_u64(&rng) % (uint64_t)vocab);
        for (int j = 0; j < n; j++, r++) {
            t.pos[r] = keys - n + j;
            t.slot[r] = t.tables[(size_t)i * tw + t.pos[r] / bs] * bs + t.pos[r] % bs;
        }
        t.lrows[i] = r - 1;
    }
    t.row0[n_seqs] = r;
    free(perm);
    t.b = (vox_batch){.n_rows = rows, .n_seqs = n_seqs, .n_decode = n_dec, .ids = t.ids,
                      .row_pos = t.pos, .row_slot = t.slot, .seq_row0 = t.row0, .seq_len = t.len,
                      .tables = t.tables, .table_width = tw, .block_size = bs,
                      .logit_rows = t.lrows, .n_logits = n_seqs};
    t.pool_rows = (int64_t)n_blocks * bs;
    return t;
}

/* Makes t the current batch of both backends. */
static void batch_set_both(const test_batch *t, int H, int D) {
    vox_error err;
    const vox_batch *b = &t->b;
    vox_backend *bes[2] = {cpu, gpu};
    for (int i = 0; i < 2; i++) {
        CHECK_MSG(bes[i]->batch_reserve(bes[i], b->n_rows, b->n_seqs, b->table_width, b->block_size,
                                        H, D, &err) == VOX_OK, "batch_reserve: %s", err.msg);
        CHECK_MSG(bes[i]->batch_set(bes[i], b, &err) == VOX_OK, "batch_set: %s", err.msg);
    }
}

static void batch_free(test_batch *t) {
    free(t->ids), free(t->pos), free(t->slot), free(t->row0), free(t->len), free(t->tables);
    free(t->lrows);
}

/* The fused projection op (the decoder's decode path) against the separate operations it stands
 * for, both on the GPU: those are each checked against the CPU above, and kernels/matvec.cu
 * against a host reference in test_kernels_matvec. This checks the wiring (shapes, position,
 * which tensor is which). The two differ only in the fp32 summation order of the product (atol
 * as matmul's), so a bf16 rounding of the product may land one ulp apart: up to 2^-7 of the
 * rounded value (an ulp is 2^-7 of a value just above a power of two). The bound is therefore
 * 2^-7 of the output plus 2^-7 of the product terms it is made of: for ADD, the product added
 * to the residual (|x + P| can be far smaller than |P|); for SwiGLU and RoPE, the two product
 * values of the pair (gate and up; dims i and i + D/2). */
static void test_projection_bias(vox_projection_out out, int64_t M, int64_t K, int H, int Hkv,
                                 int D, int64_t N, bool norm, bool with_bias) {
    static const char *names[] = {"store", "add", "swiglu", "rope_cache"};
    char what[160];
    if (out == VOX_PROJ_ROPE_CACHE) N = (int64_t)(H + 2 * Hkv) * D;
    int64_t ycols = out == VOX_PROJ_SWIGLU ? N / 2 : out == VOX_PROJ_ROPE_CACHE ? (int64_t)H * D : N;
    int64_t ws[2] = {N, K}, ns[1] = {K};
    /* M decoding sequences at awkward lengths, blocks of 16 scattered over a pool of 64 */
    int lens[8] = {32, 1, 17, 200, 45, 3, 16, 90};
    /* (only ROPE_CACHE reads the batch; larger M, the prefill shapes, use none of it) */
    test_batch tb = batch_new(M < 8 ? (int)M : 8, lens, 0, NULL, NULL, 16, 64, 1000);
    int64_t cap = tb.pool_rows;
    if (out == VOX_PROJ_ROPE_CACHE) batch_set_both(&tb, H, D);
    int64_t bs[1] = {N};
    pair w = weight_new(2, ws, 1.0f / sqrtf((float)K)), nw = weight_new(1, ns, 1.0f),
         bias = weight_new(1, bs, 0.5f);
    vox_tensor x = gpu_random(M, K, 1.0f);
    vox_tensor y_fused = gpu_random(M, ycols, 1.0f), y_sep = gpu_random(M, ycols, 0.0f);
    gpu->copy(gpu, &y_sep, &y_fused); /* ADD starts from the same residual */
    vox_tensor h = gpu_random(M, K, 0.0f), prod = gpu_random(M, N, 0.0f);
    int64_t KD = (int64_t)Hkv * D;
    vox_tensor kc[2], vc[2];
    for (int i = 0; i < 2; i++) {
        kc[i] = gpu_random(cap, KD > 0 ? KD : 1, 0.0f);
        vc[i] = gpu_random(cap, KD > 0 ? KD : 1, 0.0f);
    }
    vox_projection p = {.y = &y_fused, .x = &x, .w = &w.g, .norm_w = norm ? &nw.g : NULL,
                        .bias = with_bias ? &bias.g : NULL,
                        .eps = 1e-5f, .out = out, .k_pool = &kc[0], .v_pool = &vc[0],
                        .n_heads = H, .n_kv_heads = Hkv, .head_dim = D, .theta = 1e8};
    bool taken = gpu->projection(gpu, &p);
    snprintf(what, sizeof what, "projection %s M=%lld N=%lld K=%lld norm=%d bias=%d", names[out],
             (long long)M, (long long)N, (long long)K, norm, with_bias);
    /* decode shapes (few rows, no bias) in kernels/matvec.cu; residual adds of aligned shapes
     * at any size in cuBLASLt's epilogue */
    bool expect = (M <= 4 && !with_bias) || (out == VOX_PROJ_ADD && !norm && K % 8 == 0 && N % 8 == 0);
    CHECK_MSG(taken == expect, "%s: taken %d", what, taken);
    if (taken) {
        const vox_tensor *in = &x;
        if (norm) {
            gpu->rms_norm(gpu, &h, &x, &nw.g, 1e-5f);
            in = &h;
        }
        gpu->matmul(gpu, out == VOX_PROJ_STORE ? &y_sep : &prod, in, &w.g,
                    with_bias ? &bias.g : NULL);
        if (out == VOX_PROJ_ADD) gpu->add(gpu, &y_sep, &y_sep, &prod);
        if (out == VOX_PROJ_SWIGLU) gpu->swiglu(gpu, &y_sep, &prod);
        if (out == VOX_PROJ_ROPE_CACHE)
            gpu->rope_cache(gpu, &y_sep, &kc[1], &vc[1], &prod, H, Hkv, D, 1e8);
        double atol = 1e-5 * sqrt((double)K), rtol = 1.0 / 128;
        /* the product terms of each output (see above), from the separate path's product */
        float *P = malloc((size_t)(M * N) * sizeof(float));
        float *terms = calloc((size_t)(M * ycols), sizeof(float));
        float *kterms = calloc((size_t)(cap * (KD > 0 ? KD : 1)), sizeof(float));
        vox_error err;
        if (out != VOX_PROJ_STORE)
            CHECK(gpu->download_f32(gpu, P, &prod, (size_t)(M * N), &err) == VOX_OK);
        for (int64_t r = 0; r < M && out != VOX_PROJ_STORE; r++)
            for (int64_t j = 0; j < ycols; j++) {
                const float *pr = P + r * N;
                if (out == VOX_PROJ_ADD) terms[r * ycols + j] = pr[j];
                if (out == VOX_PROJ_SWIGLU)
                    terms[r * ycols + j] = 2.2f * fabsf(pr[j]) * fabsf(pr[N / 2 + j]) + fabsf(pr[N / 2 + j]);
                if (out == VOX_PROJ_ROPE_CACHE) {
                    int64_t i = j % D, pair = i < D / 2 ? j + D / 2 : j - D / 2;
                    terms[r * ycols + j] = fabsf(pr[j]) + fabsf(pr[pair]);
                }
            }
        /* SwiGLU: one ulp of g moves y = silu(g) u by |u| |silu'(g)| ulp(g) <= 1.1 * 2^-7 |g| |u|;
         * one ulp of u, of silu's rounding or of y's: 2^-7 |y| each, |y| <= |g| |u|; the
         * summation-order atol on g and u moves y by about 1.1 |u| atol: 2.2 |g| |u| + |u|. */
        gpu_compare(what, &y_fused, &y_sep, terms, atol, rtol);
        if (out == VOX_PROJ_ROPE_CACHE) {
            /* the whole pools: the rows at the batch's slots, and every other row untouched */
            for (int64_t r = 0; r < M; r++)
                for (int64_t j = 0; j < KD; j++) {
                    int64_t i = j % D, pair = i < D / 2 ? j + D / 2 : j - D / 2;
                    const float *kr = P + r * N + (int64_t)H * D;
                    kterms[tb.slot[r] * KD + j] = fabsf(kr[j]) + fabsf(kr[pair]);
                }
            snprintf(what, sizeof what, "projection rope_cache k pool M=%lld", (long long)M);
            gpu_compare(what, &kc[0], &kc[1], kterms, atol, rtol);
            snprintf(what, sizeof what, "projection rope_cache v pool M=%lld", (long long)M);
            gpu_compare(what, &vc[0], &vc[1], NULL, atol, rtol);
        }
        free(P), free(terms), free(kterms);
    }
    vox_tensor *ts[] = {&x, &y_fused, &y_sep, &h, &prod, &kc[0], &kc[1], &vc[0], &vc[1]};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) vox_tensor_free(gpu, ts[i]);
    pair_free(&w, true), pair_free(&nw, true), pair_free(&bias, true);
    batch_free(&tb);
}

static void test_projection(vox_projection_out out, int64_t M, int64_t K, int H, int Hkv, int D,
                            int64_t N, bool norm) {
    test_projection_bias(out, M, K, H, Hkv, D, N, norm, false);
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
    cpu->weight(cpu, &pc, pos, VOX_DTYPE_F32, 2, s, true, NULL, &err);
    gpu->weight(gpu, &pg, pos, VOX_DTYPE_F32, 2, s, true, NULL, &err);
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

/* qkv [rows, (H + 2Hkv) D] of a batch -> q (roped), k (roped) and v into the pools at the rows'
 * slots; pool rows no row writes stay as they were (zero). */
static void test_rope_cache(int n_dec, const int *dec_len, int n_pre, const int *pre_rows,
                            const int *pre_pos0, int bs, int n_blocks, int H, int Hkv, int D) {
    char what[160];
    test_batch tb = batch_new(n_dec, dec_len, n_pre, pre_rows, pre_pos0, bs, n_blocks, 1000);
    batch_set_both(&tb, H, D);
    int64_t T = tb.b.n_rows, QD = (int64_t)H * D, KD = (int64_t)Hkv * D;
    pair qkv = pair_new(T, QD + 2 * KD, 1.0f), q = pair_new(T, QD, 0.0f);
    pair kc = pair_new(tb.pool_rows, KD, 0.0f), vc = pair_new(tb.pool_rows, KD, 0.0f);
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
            kb[(int64_t)tb.slot[t] * KD + j] =
                (fabsf(row[QD + j]) + fabsf(row[QD + h * D + p])) * 4.0f / 256.0f + 1e-6f;
        }
    }
    cpu->rope_cache(cpu, &q.c, &kc.c, &vc.c, &qkv.c, H, Hkv, D, 1e8);
    gpu->rope_cache(gpu, &q.g, &kc.g, &vc.g, &qkv.g, H, Hkv, D, 1e8);
    vox_error err;
    pair *outs[2] = {&q, &kc};
    float *bounds[2] = {qb, kb};
    const char *names[2] = {"q", "k pool"};
    for (int o = 0; o < 2; o++) {
        float *got = malloc(outs[o]->n * sizeof(float)), *ref = malloc(outs[o]->n * sizeof(float));
        gpu->download_f32(gpu, got, &outs[o]->g, outs[o]->n, &err);
        cpu->download_f32(cpu, ref, &outs[o]->c, outs[o]->n, &err);
        snprintf(what, sizeof what, "rope_cache %s rows=%lld H=%d/%d D=%d bs=%d", names[o],
                 (long long)T, H, Hkv, D, bs);
        gtu_compare_bound(what, got, ref, bounds[o], outs[o]->n);
        free(got), free(ref);
    }
    snprintf(what, sizeof what, "rope_cache v pool rows=%lld", (long long)T);
    compare(what, &vc, 0, 0);
    free(qb), free(kb);
    pair_free(&qkv, false), pair_free(&q, false), pair_free(&kc, false), pair_free(&vc, false);
    batch_free(&tb);
}

/* The decoder's attention over a batch: decode rows and prompt chunks against their own
 * scattered blocks, the CPU's loops against the GPU's kernels (tolerance as test_attention). */
static void test_paged_attention(int n_dec, const int *dec_len, int n_pre, const int *pre_rows,
                                 const int *pre_pos0, int bs, int n_blocks, int H, int Hkv, int D) {
    char what[200];
    test_batch tb = batch_new(n_dec, dec_len, n_pre, pre_rows, pre_pos0, bs, n_blocks, 1000);
    batch_set_both(&tb, H, D);
    snprintf(what, sizeof what, "paged_attention decode=%d prefill=%d rows=%d bs=%d H=%d/%d D=%d",
             n_dec, n_pre, tb.b.n_rows, bs, H, Hkv, D);
    pair q = pair_new(tb.b.n_rows, (int64_t)H * D, 1.0f), o = pair_new(tb.b.n_rows, (int64_t)H * D, 0.0f);
    pair k = pair_new(tb.pool_rows, (int64_t)Hkv * D, 1.0f), v = pair_new(tb.pool_rows, (int64_t)Hkv * D, 1.0f);
    float scale = 1.0f / sqrtf((float)D);
    cpu->paged_attention(cpu, &o.c, &q.c, &k.c, &v.c, H, Hkv, D, scale);
    gpu->paged_attention(gpu, &o.g, &q.g, &k.g, &v.g, H, Hkv, D, scale);
    compare(what, &o, 1.0 / 256, 1.0 / 128);
    pair_free(&q, false), pair_free(&k, false), pair_free(&v, false), pair_free(&o, false);
    batch_free(&tb);
}

/* The decode rows' embedding from the batch's ids, and the gather of the rows whose logits are
 * wanted: exact copies. */
static void test_batch_rows(int n_dec, const int *dec_len, int n_pre, const int *pre_rows,
                            const int *pre_pos0, int64_t V, int64_t C) {
    char what[160];
    test_batch tb = batch_new(n_dec, dec_len, n_pre, pre_rows, pre_pos0, 16, 256, V);
    batch_set_both(&tb, 1, 8);
    int64_t s[2] = {V, C};
    pair table = weight_new(2, s, 1.0f);
    pair x = pair_new(tb.b.n_rows, C, 1.0f), y = pair_new(tb.b.n_logits, C, 0.0f);
    if (n_dec > 0) {
        vox_tensor xc = vox_tensor_rows(&x.c, 0, n_dec), xg = vox_tensor_rows(&x.g, 0, n_dec);
        cpu->embed_batch(cpu, &xc, &table.c);
        gpu->embed_batch(gpu, &xg, &table.g);
    }
    snprintf(what, sizeof what, "embed_batch n=%d V=%lld C=%lld", n_dec, (long long)V, (long long)C);
    compare(what, &x, 0, 0);
    cpu->gather_rows(cpu, &y.c, &x.c);
    gpu->gather_rows(gpu, &y.g, &x.g);
    snprintf(what, sizeof what, "gather_rows n=%d of %d C=%lld", tb.b.n_logits, tb.b.n_rows, (long long)C);
    compare(what, &y, 0, 0);
    pair_free(&table, true), pair_free(&x, false), pair_free(&y, false);
    batch_free(&tb);
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

/* Statistics of n rows of logits at once, each row with its own chosen id (-1: the argmax). */
static void test_logits(int n, int64_t V, int k, int32_t chosen) {
    int lens[64];
    for (int i = 0; i < n; i++) lens[i] = 1 + i;
    test_batch tb = batch_new(n, lens, 0, NULL, NULL, 16, 16 * 64, 100); /* sizes the results */
    batch_set_both(&tb, 1, 8);
    pair l = pair_new(n, V, 3.0f);
    vox_logits_stats a[64], b[64];
    int32_t ch[64];
    for (int i = 0; i < n; i++) ch[i] = i % 2 ? chosen : (int32_t)((chosen + 7 * i) % V);
    vox_error err;
    CHECK(cpu->logits_stats(cpu, &l.c, ch, k, a, &err) == VOX_OK);
    CHECK_MSG(gpu->logits_stats(gpu, &l.g, ch, k, b, &err) == VOX_OK, "%s", err.msg);
    for (int r = 0; r < n; r++) {
        /* Inputs are bf16 values: ties are possible; the argmax rule (first index) must agree. */
        CHECK_MSG(a[r].argmax == b[r].argmax, "logits n=%d V=%lld row %d: argmax %d vs cpu %d", n,
                  (long long)V, r, b[r].argmax, a[r].argmax);
        CHECK(a[r].chosen == b[r].chosen);
        CHECK_CLOSE(b[r].chosen_logprob, a[r].chosen_logprob, 1e-4, 1e-5);
        CHECK_CLOSE(b[r].argmax_margin, a[r].argmax_margin, 1e-6, 0);
        CHECK(a[r].k == b[r].k);
        for (int i = 0; i < a[r].k && i < b[r].k; i++) {
            CHECK_MSG(a[r].top_ids[i] == b[r].top_ids[i], "logits V=%lld row %d top[%d]: %d vs cpu %d",
                      (long long)V, r, i, b[r].top_ids[i], a[r].top_ids[i]);
            CHECK_CLOSE(b[r].top_logprobs[i], a[r].top_logprobs[i], 1e-4, 1e-5);
        }
    }
    pair_free(&l, false);
    batch_free(&tb);
}

int main(void) {
    gtu_require_device();
    vox_error err;
    if (vox_backend_create("cpu", &cpu, &err) || vox_backend_create("cuda:0", &gpu, &err)) {
        fprintf(stderr, "backend: %s\n", err.msg);
        return 1;
    }
    rng = gtu_rng_seed(20261130);

    test_matmul(1, 3072, 3072, false, false);  /* decode GEMV */
    test_matmul(17, 1027, 515, true, false);   /* awkward, with bias */
    test_matmul(5, 9, 7, false, false);        /* awkward, no bias */
    test_matmul(388, 1024, 3072, false, false); /* prefill k/v projection */
    test_matmul(3000, 1280, 1280, true, false); /* encoder, 2 chunks */
    /* into outputs nothing else wrote: the encoder's first GEMM (conv1 after im2col: 3000 frames
     * of a chunk, 128 mel bins x 3 taps, 1280 channels, bias), whose output initcheck reported
     * uninitialised when GELU read it (bench/NOTES-2026-12-01-sanitizers.md); a decoder one */
    test_matmul(3000, 1280, 384, true, true);
    test_matmul(388, 4096, 3072, false, true);
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
    {
        /* batches as the engine makes them: decode rows, prompt chunks, both */
        int dl[5] = {412, 1, 17, 16, 33}, pr[3] = {388, 7, 1}, pp[3] = {0, 123, 31000};
        test_rope_cache(1, dl, 0, NULL, NULL, 16, 64, 32, 8, 128);
        test_rope_cache(0, NULL, 1, pr, pp, 16, 64, 32, 8, 128);
        test_rope_cache(5, dl, 2, pr + 1, pp + 1, 16, 2100, 4, 2, 32);
        test_rope_cache(3, dl + 1, 1, pr + 1, pp, 3, 64, 3, 1, 6); /* odd sizes: the scalar path */
        test_paged_attention(1, dl, 0, NULL, NULL, 16, 64, 32, 8, 128);  /* batch-1 decode */
        test_paged_attention(5, dl, 0, NULL, NULL, 16, 64, 32, 8, 128);  /* mixed lengths */
        test_paged_attention(0, NULL, 1, pr, pp, 16, 64, 32, 8, 128);    /* a whole prompt */
        test_paged_attention(5, dl, 2, pr, pp, 16, 128, 32, 8, 128); /* decode + chunks */
        test_paged_attention(3, dl + 2, 1, pr + 1, pp + 1, 1, 1024, 4, 2, 64); /* blocks of 1 */
        int far_len[1] = {31002}, far_rows[1] = {5}, far_pos[1] = {30990};
        test_paged_attention(1, far_len, 1, far_rows, far_pos, 32, 2000, 32, 8, 128); /* long */
        int many[64];
        for (int i = 0; i < 64; i++) many[i] = 1 + (i * 97) % 700;
        test_paged_attention(64, many, 0, NULL, NULL, 16, 3000, 32, 8, 128);
        test_batch_rows(5, dl, 2, pr + 1, pp, 1037, 3072);
        test_batch_rows(0, NULL, 1, pr, pp, 100, 64);
    }
    /* the decoder's projections at decode (taken) and prefill (M = 5: not taken) */
    test_projection(VOX_PROJ_ROPE_CACHE, 1, 3072, 32, 8, 128, 0, true);
    test_projection(VOX_PROJ_ROPE_CACHE, 3, 264, 3, 1, 32, 0, true);
    test_projection(VOX_PROJ_ADD, 1, 4096, 0, 0, 0, 3072, false);
    test_projection(VOX_PROJ_SWIGLU, 1, 3072, 0, 0, 0, 2 * 8192, true);
    test_projection(VOX_PROJ_ADD, 2, 8192, 0, 0, 0, 3072, false);
    test_projection(VOX_PROJ_STORE, 1, 3072, 0, 0, 0, 32771, true);
    test_projection(VOX_PROJ_STORE, 4, 520, 0, 0, 0, 1027, false);
    test_projection(VOX_PROJ_STORE, 5, 520, 0, 0, 0, 1027, false);
    /* residual adds of prefill and the encoder: cuBLASLt accumulating into the residual */
    test_projection(VOX_PROJ_ADD, 5, 4096, 0, 0, 0, 3072, false);
    test_projection(VOX_PROJ_ADD, 389, 8192, 0, 0, 0, 3072, false);
    test_projection_bias(VOX_PROJ_ADD, 1500, 1280, 0, 0, 0, 1280, false, true);
    test_projection_bias(VOX_PROJ_ADD, 3, 520, 0, 0, 0, 1032, false, true);
    test_projection_bias(VOX_PROJ_ADD, 7, 520, 0, 0, 0, 1027, false, true); /* unaligned: not taken */
    test_attention(2, 1500, 1500, 1500, 20, 20, 64, false, 0); /* encoder, 2 chunks */
    test_attention(3, 17, 17, 17, 4, 4, 64, false, 0);
    test_attention(1, 388, 388, 388, 32, 8, 128, true, 0);     /* prefill */
    test_attention(1, 7, 130, 130, 4, 2, 32 * 4, true, 123);   /* prompt in pieces */
    test_attention(1, 1, 389, 389, 32, 8, 128, true, 388);     /* decode */
    test_attention(1, 1, 5000, 5000, 32, 8, 128, true, 4999);  /* long decode */
    test_embed_copy(1037, 3072, 17);
    test_embed_copy(131072, 128, 1);
    test_logits(1, 131072, 20, -1);
    test_logits(5, 131072, 20, -1);
    test_logits(3, 1037, 5, 17);
    test_logits(64, 2, 2, -1);

    CHECK_MSG(gpu->sync(gpu, &err) == VOX_OK, "sync: %s", err.msg);
    size_t live, peak;
    gpu->memory(gpu, &live, &peak);
    printf("pool: %zu bytes live at the end, peak %.1f MiB\n", live, peak / 1048576.0);
    vox_backend_destroy(gpu);
    vox_backend_destroy(cpu);
    return test_finish("cuda_backend");
}
