/* The persistent decode kernel (kernels/pdecode.cu) against a CPU reference of the decode step
 * with the same rounding points (bf16 where torch rounds: q|k|v, RoPE's products, attention
 * output, each projection, residual adds, SwiGLU; FP8: each staged input row quantized with its
 * own scale, a row's sum times s_x * s_w), on random weights at awkward shapes, a full-width
 * shape, and FP8, over several consecutive steps (each launch reads the cache rows the previous
 * one wrote and must find its counters zeroed).
 *
 * What is checked, every element:
 *  - the logits, and the key and value rows written to the cache in every layer: within
 *    rel |ref| + elem rms(ref), and the mean |diff| within mean rms(ref) (kBounds*). bf16: the
 *    kernel sums in another fp32 order than the reference (which sums in double), and attention
 *    rounds P to bf16 against a running maximum rather than the final one, so a few
 *    intermediate bf16 values land one ulp (2^-8 relative) apart and carry through the layers
 *    (measured: mean |diff| 0.2-0.7% of rms(ref), the worst element under half its bound).
 *    FP8 at later positions: such a one-ulp difference moves an input element to the next E4M3
 *    code (2^-3 relative) where it lies near a rounding boundary (measured: mean 2-4% of
 *    rms(ref)); at the first positions, where attention is exact, FP8 meets the bf16 bounds
 *    (measured: identical). A wrong row, head, position or scale gives errors of the order of
 *    rms(ref) on most elements.
 *  - the argmax, wherever the reference's top-2 margin exceeds twice the bound;
 *  - every other cache row: unchanged, bit for bit.
 * Every shape runs with each consumer of the kernel's projections (vox_k_pdecode_args.consumer:
 * the CUDA cores, a warp a row; the tensor cores, a warp a column slice of every page).
 * At the end, on a GPU with room for it, the kernel's time at the full size, bf16 and FP8, with
 * each consumer (information).
 * Skips (exit 77) without a device, and passes without checking on GPUs the kernel does not
 * take (below sm_90), after checking that it says so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fp8.h"
#include "gpu/gpu_test_util.h"
#include "harness.h"
#include "kernels.h"

typedef struct {
    const char *name;
    int layers, hidden, heads, kv_heads, head_dim, ffn, vocab, pos0, steps, fp8;
    int in_order; /* blocks 1, 2, 3, ... as a fresh pool hands them out, else shuffled */
    int rows;     /* sequences a launch decodes (0: 1), at positions kRowSpread apart */
} shape;

typedef struct {
    float rel, elem, mean;
} bounds;

static const int kBlock = 16;
/* bf16: the reference rounds P against the final maximum, the kernel against a running one, and
 * sums in another order: a few intermediate values land one bf16 ulp apart and carry through
 * the layers. FP8: such a difference moves an input element to the next E4M3 code (2^-3
 * relative) where it lies near a rounding boundary. A wrong row, head, position or scale gives
 * errors of the order of rms(ref) on most elements. */
static const bounds kBoundsBf16 = {0.0078125f, 0.05f, 0.01f};
static const bounds kBoundsFp8 = {0.0625f, 0.2f, 0.06f};

static float bfr(float x) { return vox_bf16_to_f32(vox_f32_to_bf16(x)); }

/* A weight matrix [n, k]: bf16 words (or E4M3 codes and row scales) on the device, and the
 * values the reference multiplies (bf16 values, or the codes' values). */
typedef struct {
    int n, k;
    float *val;   /* [n, k] host */
    float *scale; /* [n] host (FP8), else NULL */
    void *dev;
    float *dev_scale;
} weight;

static weight make_weight(gtu_rng *r, int n, int k, int fp8) {
    weight w = {n, k, NULL, NULL, NULL, NULL};
    float std = 1.0f / sqrtf((float)k);
    size_t nk = (size_t)n * k;
    uint16_t *h = gtu_randn_bf16(r, nk, std, 0.0f, &w.val);
    if (!fp8) {
        w.dev = gtu_dev_upload(h, nk * 2);
    } else {
        uint8_t *codes = gtu_malloc(nk);
        w.scale = gtu_malloc((size_t)n * sizeof(float));
        for (int i = 0; i < n; i++) {
            w.scale[i] = vox_fp8_quantize_row(w.val + (size_t)i * k, (size_t)k, codes + (size_t)i * k);
            for (int j = 0; j < k; j++) w.val[(size_t)i * k + j] = vox_e4m3_to_f32(codes[(size_t)i * k + j]);
        }
        w.dev = gtu_dev_upload(codes, nk);
        w.dev_scale = gtu_dev_upload(w.scale, (size_t)n * sizeof(float));
        free(codes);
    }
    free(h);
    return w;
}

static void free_weight(weight *w) {
    free(w->val);
    free(w->scale);
    gtu_dev_free(w->dev);
    gtu_dev_free(w->dev_scale);
}

/* y[i] = the row's product with the staged input x [k] (FP8: x quantized by the scheme first,
 * the sum times s_x * s_w), in double. */
static void ref_matvec(const weight *w, const float *x, double *y) {
    const float *in = x;
    float sx = 1.0f, *q = NULL;
    if (w->scale) {
        q = gtu_malloc((size_t)w->k * sizeof *q);
        uint8_t *codes = gtu_malloc((size_t)w->k);
        sx = vox_fp8_quantize_row(x, (size_t)w->k, codes);
        for (int j = 0; j < w->k; j++) q[j] = vox_e4m3_to_f32(codes[j]);
        free(codes);
        in = q;
    }
    for (int i = 0; i < w->n; i++) {
        double s = 0;
        const float *row = w->val + (size_t)i * w->k;
        for (int j = 0; j < w->k; j++) s += (double)row[j] * in[j];
        if (w->scale) s = (double)((float)s * (sx * w->scale[i]));
        y[i] = s;
    }
    free(q);
}

/* h = bf16(w * bf16(x * inv)), inv = 1 / sqrt(mean(x^2) + eps) (matvec.cuh's stage_input). */
static void ref_rms(const float *x, const float *w, int k, float eps, float *h) {
    double ss = 0;
    for (int j = 0; j < k; j++) ss += (double)x[j] * x[j];
    float inv = 1.0f / sqrtf((float)(ss / k) + eps);
    for (int j = 0; j < k; j++) h[j] = bfr(w[j] * bfr(x[j] * inv));
}

/* RoPE of the pair (a, b) = dims (i, i + D/2) at position pos (common.cuh's rounding). */
static void ref_rope(float a, float b, int i, int D, double theta, int pos, float *o1, float *o2) {
    float inv_freq = (float)(1.0 / pow(theta, (double)(2 * i) / D));
    float ang = (float)pos * inv_freq;
    float c = bfr(cosf(ang)), s = bfr(sinf(ang));
    *o1 = bfr(bfr(a * c) - bfr(b * s));
    *o2 = bfr(bfr(b * c) + bfr(a * s));
}

typedef struct {
    weight qkv, o, gu, down;
    float *attn_norm, *ffn_norm; /* host values */
    void *attn_norm_dev, *ffn_norm_dev;
    uint16_t *k_pool, *v_pool; /* host copies the reference reads and writes */
    void *k_dev, *v_dev;
} layer;

static float rms_of(const float *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return (float)sqrt(s / (double)(n ? n : 1));
}

/* got against ref: every element within rel |ref| + elem rms(ref), and the mean |diff| at most
 * mean rms(ref) (the header says why these). */
static void compare_scaled(const char *what, const float *got, const float *ref, size_t n, bounds b) {
    float *bound = gtu_malloc(n * sizeof *bound);
    float r = rms_of(ref, n);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        bound[i] = b.rel * fabsf(ref[i]) + b.elem * r;
        sum += fabs((double)got[i] - ref[i]);
    }
    gtu_compare_bound(what, got, ref, bound, n);
    double mean = sum / (double)(n ? n : 1);
    CHECK_MSG(mean <= b.mean * r, "%s: mean |diff| %.3g over %.3g rms(ref)", what, mean, b.mean * r);
    printf("     mean |diff| %.3g = %.4f rms(ref)\n", mean, r > 0 ? mean / r : 0.0);
    free(bound);
}

static const char *const kConsumerName[] = {"", "a warp a row", "a warp a slice"};
static const char *const kConsumerShort[] = {"", "row", "split"}; /* --timing-only's names */

/* Positions of row b are pos0 + b * kRowSpread + step: rows of different lengths, whose keys
 * split and cross blocks at different places. */
static const int kRowSpread = 37;

/* The reference's working rows of one step. */
typedef struct {
    float *h, *qkv, *attn, *gu, *sc;
    double *acc;
} ref_work;

/* The reference step of one row: its input x [H] (rewritten: the residual), its position, cache
 * slot and block table; writes its key and value to the host pools (and kref, vref [layers, KD])
 * and its logits [vocab]. */
static void ref_row_step(const shape *S, layer *L, const weight *lm, const float *final_norm,
                         const int32_t *blocks, int pos, int slot, float *x, float *kref,
                         float *vref, float *logits, ref_work *w) {
    const int H = S->hidden, D = S->head_dim, QD = S->heads * D, KD = S->kv_heads * D, F = S->ffn;
    const int GQ = S->heads / S->kv_heads, len = pos + 1;
    const float eps = 1e-5f, scale = 1.0f / sqrtf((float)D);
    const double theta = 1e8;
    float *h = w->h, *qkv = w->qkv, *attn = w->attn, *gu = w->gu, *sc = w->sc;
    double *acc = w->acc;
    for (int l = 0; l < S->layers; l++) {
        layer *Y = &L[l];
        ref_rms(x, Y->attn_norm, H, eps, h);
        ref_matvec(&Y->qkv, h, acc);
        for (int i = 0; i < QD + 2 * KD; i++) qkv[i] = bfr((float)acc[i]);
        for (int hd = 0; hd < S->heads + S->kv_heads; hd++) /* RoPE on q and k heads */
            for (int i = 0; i < D / 2; i++) {
                float *v = qkv + (size_t)hd * D;
                ref_rope(v[i], v[i + D / 2], i, D, theta, pos, &v[i], &v[i + D / 2]);
            }
        for (int j = 0; j < KD; j++) {
            Y->k_pool[(size_t)slot * KD + j] = vox_f32_to_bf16(qkv[QD + j]);
            Y->v_pool[(size_t)slot * KD + j] = vox_f32_to_bf16(qkv[QD + KD + j]);
            kref[(size_t)l * KD + j] = qkv[QD + j];
            vref[(size_t)l * KD + j] = qkv[QD + KD + j];
        }
        for (int hq = 0; hq < S->heads; hq++) {
            const int g = hq / GQ;
            const float *q = qkv + (size_t)hq * D;
            float mx = -INFINITY;
            for (int j = 0; j < len; j++) {
                size_t row = (size_t)blocks[j / kBlock] * kBlock + j % kBlock;
                const uint16_t *k = Y->k_pool + row * KD + (size_t)g * D;
                double s = 0;
                for (int e = 0; e < D; e++) s += (double)q[e] * vox_bf16_to_f32(k[e]);
                sc[j] = (float)s * scale;
                if (sc[j] > mx) mx = sc[j];
            }
            double l_sum = 0;
            double *o = acc; /* D doubles */
            for (int e = 0; e < D; e++) o[e] = 0;
            for (int j = 0; j < len; j++) {
                size_t row = (size_t)blocks[j / kBlock] * kBlock + j % kBlock;
                const uint16_t *v = Y->v_pool + row * KD + (size_t)g * D;
                float p = expf(sc[j] - mx);
                l_sum += p;
                float pr = bfr(p); /* P is bf16 for P@V */
                for (int e = 0; e < D; e++) o[e] += (double)pr * vox_bf16_to_f32(v[e]);
            }
            for (int e = 0; e < D; e++) attn[(size_t)hq * D + e] = bfr((float)(o[e] / l_sum));
        }
        ref_matvec(&Y->o, attn, acc);
        for (int i = 0; i < H; i++) x[i] = bfr(x[i] + bfr((float)acc[i]));
        ref_rms(x, Y->ffn_norm, H, eps, h);
        ref_matvec(&Y->gu, h, acc);
        for (int i = 0; i < 2 * F; i++) gu[i] = bfr((float)acc[i]);
        for (int i = 0; i < F; i++) {
            float g = gu[i];
            h[i] = bfr(bfr(g / (1.0f + expf(-g))) * gu[F + i]);
        }
        ref_matvec(&Y->down, h, acc);
        for (int i = 0; i < H; i++) x[i] = bfr(x[i] + bfr((float)acc[i]));
    }
    ref_rms(x, final_norm, H, eps, h);
    ref_matvec(lm, h, acc);
    for (int i = 0; i < S->vocab; i++) logits[i] = bfr((float)acc[i]);
}

/* In-flight caps the steps cycle through, pages: the default, 1 to 4, and 16 (past the ring: no
 * wait) */
static const int kInflightCaps[] = {0, 1, 2, 3, 4, 16};

/* vox_k_pdecode_tune on the step just launched (a): it returns one of the caps it was given, and
 * the logits and the rows' new cache entries are, bit for bit, those of that one launch. */
static void check_tune_repeats_step(const shape *S, const vox_k_pdecode_args *a, const layer *L,
                                    const int32_t *slots) {
    const int R = a->rows > 1 ? a->rows : 1, KD = S->kv_heads * S->head_dim;
    const size_t n_logits = (size_t)R * S->vocab, n_cache = (size_t)S->layers * 2 * R * KD;
    uint16_t *before = gtu_malloc((n_logits + n_cache) * 2), *after = gtu_malloc((n_logits + n_cache) * 2);
    for (int pass = 0; pass < 2; pass++) {
        uint16_t *h = pass ? after : before;
        gtu_download(h, a->logits, n_logits * 2);
        for (int l = 0; l < S->layers; l++)
            for (int kv = 0; kv < 2; kv++)
                for (int b = 0; b < R; b++)
                    gtu_download(h + n_logits + (((size_t)l * 2 + kv) * R + b) * KD,
                                 (const char *)(kv ? L[l].v_dev : L[l].k_dev) + (size_t)slots[b] * KD * 2,
                                 (size_t)KD * 2);
        if (pass) break;
        static const int caps[] = {1, 2, 3, 5};
        float us[4] = {0};
        const int got = vox_k_pdecode_tune(a, caps, 4, 2, us, 0);
        GTU_SYNC_CHECK();
        CHECK_MSG(got == 1 || got == 2 || got == 3 || got == 5, "%s: tune returned cap %d", S->name, got);
        for (int i = 0; i < 4; i++)
            CHECK_MSG(us[i] > 0 && isfinite(us[i]), "%s: tune timed cap %d at %g us", S->name, caps[i], us[i]);
    }
    CHECK_MSG(memcmp(before, after, (n_logits + n_cache) * 2) == 0,
              "%s: the step's logits or cache rows differ after vox_k_pdecode_tune", S->name);
    free(before), free(after);
}

/* consumer: vox_k_pdecode_args.consumer, 1 (a warp a row), 2 (a warp a slice; the only one of
 * launches of several rows) */
static void run_shape(const shape *S, int consumer, gtu_rng *rng) {
    const int R = S->rows > 1 ? S->rows : 1;
    printf("%s: %d layers, hidden %d, %d/%d heads of %d, ffn %d, vocab %d, %d row%s, positions %d..%d%s, %s\n",
           S->name, S->layers, S->hidden, S->heads, S->kv_heads, S->head_dim, S->ffn, S->vocab, R,
           R > 1 ? "s" : "", S->pos0, S->pos0 + (R - 1) * kRowSpread + S->steps - 1,
           S->fp8 ? ", FP8" : "", kConsumerName[consumer]);
    const int H = S->hidden, D = S->head_dim, QD = S->heads * D, KD = S->kv_heads * D, F = S->ffn;
    /* row b's blocks: width[b] of the pool's, after rows 0 .. b - 1's in one shuffled order */
    int width[VOX_K_PDECODE_MAX_ROWS], first_block[VOX_K_PDECODE_MAX_ROWS], n_used = 0, table_width = 0;
    for (int b = 0; b < R; b++) {
        const int last_pos = S->pos0 + b * kRowSpread + S->steps - 1;
        width[b] = last_pos / kBlock + 1;
        first_block[b] = n_used;
        n_used += width[b];
        if (width[b] > table_width) table_width = width[b];
    }
    const int n_blocks = n_used + 3;
    const size_t pool_rows = (size_t)n_blocks * kBlock;
    const float eps = 1e-5f;
    const double theta = 1e8;
    const float scale = 1.0f / sqrtf((float)D);

    layer *L = calloc((size_t)S->layers, sizeof *L);
    vox_k_pdecode_layer *table_host = calloc((size_t)S->layers ? (size_t)S->layers : 1, sizeof *table_host);
    for (int l = 0; l < S->layers; l++) {
        L[l].qkv = make_weight(rng, QD + 2 * KD, H, S->fp8);
        L[l].o = make_weight(rng, H, QD, S->fp8);
        L[l].gu = make_weight(rng, 2 * F, H, S->fp8);
        L[l].down = make_weight(rng, H, F, S->fp8);
        uint16_t *an = gtu_randn_bf16(rng, (size_t)H, 0.1f, 1.0f, &L[l].attn_norm);
        uint16_t *fn = gtu_randn_bf16(rng, (size_t)H, 0.1f, 1.0f, &L[l].ffn_norm);
        L[l].attn_norm_dev = gtu_dev_upload(an, (size_t)H * 2);
        L[l].ffn_norm_dev = gtu_dev_upload(fn, (size_t)H * 2);
        free(an), free(fn);
        L[l].k_pool = gtu_randn_bf16(rng, pool_rows * KD, 1.0f, 0.0f, NULL);
        L[l].v_pool = gtu_randn_bf16(rng, pool_rows * KD, 1.0f, 0.0f, NULL);
        L[l].k_dev = gtu_dev_upload(L[l].k_pool, pool_rows * KD * 2);
        L[l].v_dev = gtu_dev_upload(L[l].v_pool, pool_rows * KD * 2);
        table_host[l] = (vox_k_pdecode_layer){
            .qkv = L[l].qkv.dev, .o = L[l].o.dev, .gate_up = L[l].gu.dev, .down = L[l].down.dev,
            .qkv_scale = L[l].qkv.dev_scale, .o_scale = L[l].o.dev_scale,
            .gate_up_scale = L[l].gu.dev_scale, .down_scale = L[l].down.dev_scale,
            .attn_norm = L[l].attn_norm_dev, .ffn_norm = L[l].ffn_norm_dev,
            .k_cache = L[l].k_dev, .v_cache = L[l].v_dev};
    }
    weight lm = make_weight(rng, S->vocab, H, 0);
    float *final_norm;
    uint16_t *fnh = gtu_randn_bf16(rng, (size_t)H, 0.1f, 1.0f, &final_norm);
    void *final_norm_dev = gtu_dev_upload(fnh, (size_t)H * 2);
    free(fnh);
    /* the block tables [R, table_width]: distinct blocks in a shuffled order, block 0 never used;
     * entries past a row's width 0 (never read) */
    int32_t *blocks = calloc((size_t)R * table_width, sizeof *blocks);
    {
        int32_t *perm = gtu_malloc((size_t)(n_blocks - 1) * sizeof *perm);
        for (int i = 0; i < n_blocks - 1; i++) perm[i] = i + 1;
        for (int i = n_blocks - 2; i > 0 && !S->in_order; i--) {
            int j = (int)(gtu_next_u64(rng) % (uint64_t)(i + 1));
            int32_t t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        for (int b = 0; b < R; b++)
            memcpy(blocks + (size_t)b * table_width, perm + first_block[b], (size_t)width[b] * sizeof *blocks);
        free(perm);
    }
    void *table_dev = gtu_dev_upload(blocks, (size_t)R * table_width * sizeof *blocks);
    int32_t *scalars_dev = gtu_dev_alloc((size_t)3 * R * sizeof(int32_t)); /* pos, slot, len */
    void *x_dev = gtu_dev_alloc((size_t)R * H * 2), *logits_dev = gtu_dev_alloc((size_t)R * S->vocab * 2);

    vox_k_pdecode_args a = {
        .layers = table_host, .n_layers = S->layers, .hidden = H, .heads = S->heads,
        .kv_heads = S->kv_heads, .head_dim = D, .ffn = F, .rows = R, .vocab = S->vocab,
        .fp8 = S->fp8, .eps = eps, .attn_scale = scale, .theta = theta, .x = x_dev,
        .final_norm = final_norm_dev, .lm_head = lm.dev, .logits = logits_dev, .pos = scalars_dev,
        .slot = scalars_dev + R, .len = scalars_dev + 2 * R, .table = table_dev,
        .block_size = kBlock, .table_width = table_width, .consumer = consumer};
    CHECK_MSG(vox_k_pdecode_supported(&a), "%s: the kernel does not take this shape", S->name);
    size_t ws_bytes = vox_k_pdecode_workspace_bytes(&a);
    a.workspace = gtu_dev_alloc(ws_bytes);
    GTU_CUDA(cudaMemset(a.workspace, 0, ws_bytes));

    /* the reference's working rows */
    const int max_len = S->pos0 + (R - 1) * kRowSpread + S->steps;
    ref_work w = {
        .h = gtu_malloc((size_t)(F > H ? F : H) * 4 + QD * 4), .qkv = gtu_malloc((size_t)(QD + 2 * KD) * 4),
        .attn = gtu_malloc((size_t)QD * 4), .gu = gtu_malloc((size_t)2 * F * 4),
        .sc = gtu_malloc((size_t)max_len * 4),
        .acc = gtu_malloc((size_t)(S->vocab > 2 * F ? S->vocab : 2 * F) * 8 + (size_t)(QD + 2 * KD) * 8)};
    float *x = gtu_malloc((size_t)R * H * sizeof *x), *logits = gtu_malloc((size_t)R * S->vocab * 4);
    float *kref = gtu_malloc((size_t)R * S->layers * KD * 4 + 4);
    float *vref = gtu_malloc((size_t)R * S->layers * KD * 4 + 4);
    unsigned char *written = calloc(pool_rows, 1);
    uint16_t *xh = gtu_malloc((size_t)R * H * 2);
    int32_t *scal = gtu_malloc((size_t)3 * R * sizeof *scal);

    for (int step = 0; step < S->steps; step++) {
        for (int b = 0; b < R; b++) {
            const int pos = S->pos0 + b * kRowSpread + step;
            const int32_t *tb = blocks + (size_t)b * table_width;
            scal[b] = pos;
            scal[R + b] = tb[pos / kBlock] * kBlock + pos % kBlock;
            scal[2 * R + b] = pos + 1;
            written[scal[R + b]] = 1;
            float *xf;
            uint16_t *row = gtu_randn_bf16(rng, (size_t)H, 1.0f, 0.0f, &xf);
            memcpy(xh + (size_t)b * H, row, (size_t)H * 2);
            memcpy(x + (size_t)b * H, xf, (size_t)H * sizeof *x);
            free(row), free(xf);
        }
        GTU_CUDA(cudaMemcpy(x_dev, xh, (size_t)R * H * 2, cudaMemcpyHostToDevice));
        GTU_CUDA(cudaMemcpy(scalars_dev, scal, (size_t)3 * R * sizeof *scal, cudaMemcpyHostToDevice));
        /* each step at another in-flight cap (0: the default): the results must not depend on it */
        a.inflight = kInflightCaps[step % (int)(sizeof kInflightCaps / sizeof *kInflightCaps)];
        CHECK(vox_k_pdecode(&a, 0) == 1);
        GTU_SYNC_CHECK();
        if (step == S->steps - 1) check_tune_repeats_step(S, &a, L, scal + R);

        /* the reference: each row on its own (rows share nothing but the weights) */
        for (int b = 0; b < R; b++)
            ref_row_step(S, L, &lm, final_norm, blocks + (size_t)b * table_width, scal[b], scal[R + b],
                         x + (size_t)b * H, kref + (size_t)b * S->layers * KD,
                         vref + (size_t)b * S->layers * KD, logits + (size_t)b * S->vocab, &w);

        for (int b = 0; b < R; b++) {
            const int pos = scal[b], slot = scal[R + b];
            const float *lg = logits + (size_t)b * S->vocab;
            /* FP8 where attention spans many keys; at the first positions it is exact (P = 1 or
             * nearly) and FP8 must then meet the bf16 bounds */
            const bounds B = S->fp8 && S->pos0 + b * kRowSpread >= kBlock ? kBoundsFp8 : kBoundsBf16;
            char what[128], row_name[16] = "";
            if (R > 1) snprintf(row_name, sizeof row_name, " row %d", b);
            float *got = gtu_download_bf16_as_f32((const uint16_t *)logits_dev + (size_t)b * S->vocab,
                                                  (size_t)S->vocab);
            snprintf(what, sizeof what, "%s (%s)%s pos %d logits", S->name, kConsumerName[consumer], row_name, pos);
            compare_scaled(what, got, lg, (size_t)S->vocab, B);
            /* the argmax where the reference's top-2 margin is clear of the bound */
            int best = 0, gbest = 0;
            float second = -INFINITY;
            for (int i = 1; i < S->vocab; i++) {
                if (lg[i] > lg[best]) second = lg[best], best = i;
                else if (lg[i] > second) second = lg[i];
                if (got[i] > got[gbest]) gbest = i;
            }
            float bound = B.rel * fabsf(lg[best]) + B.elem * rms_of(lg, (size_t)S->vocab);
            if (lg[best] - second > 2 * bound)
                CHECK_MSG(gbest == best, "%s: argmax %d, reference %d", what, gbest, best);
            free(got);
            for (int l = 0; l < S->layers; l++) {
                const float *kr = kref + ((size_t)b * S->layers + l) * KD, *vr = vref + ((size_t)b * S->layers + l) * KD;
                float *kg = gtu_download_bf16_as_f32((char *)L[l].k_dev + (size_t)slot * KD * 2, (size_t)KD);
                float *vg = gtu_download_bf16_as_f32((char *)L[l].v_dev + (size_t)slot * KD * 2, (size_t)KD);
                snprintf(what, sizeof what, "%s (%s)%s pos %d layer %d new key", S->name, kConsumerName[consumer], row_name, pos, l);
                compare_scaled(what, kg, kr, (size_t)KD, B);
                snprintf(what, sizeof what, "%s (%s)%s pos %d layer %d new value", S->name, kConsumerName[consumer], row_name, pos, l);
                compare_scaled(what, vg, vr, (size_t)KD, B);
                free(kg), free(vg);
            }
        }
    }
    /* every row not written: unchanged (the reference wrote only the written rows too) */
    size_t changed = 0;
    uint16_t *pool = gtu_malloc(pool_rows * KD * 2);
    for (int l = 0; l < S->layers; l++)
        for (int kv = 0; kv < 2; kv++) {
            gtu_download(pool, kv ? L[l].v_dev : L[l].k_dev, pool_rows * KD * 2);
            const uint16_t *want = kv ? L[l].v_pool : L[l].k_pool;
            for (size_t r = 0; r < pool_rows; r++)
                if (!written[r] && memcmp(pool + r * KD, want + r * KD, (size_t)KD * 2)) changed++;
        }
    CHECK_MSG(changed == 0, "%s: %zu cache rows changed that no step wrote", S->name, changed);
    free(pool);

    for (int l = 0; l < S->layers; l++) {
        free_weight(&L[l].qkv), free_weight(&L[l].o), free_weight(&L[l].gu), free_weight(&L[l].down);
        free(L[l].attn_norm), free(L[l].ffn_norm), free(L[l].k_pool), free(L[l].v_pool);
        gtu_dev_free(L[l].attn_norm_dev), gtu_dev_free(L[l].ffn_norm_dev);
        gtu_dev_free(L[l].k_dev), gtu_dev_free(L[l].v_dev);
    }
    free_weight(&lm);
    free(L), free(table_host), free(final_norm), free(blocks), free(x), free(xh), free(scal);
    free(w.h), free(w.qkv), free(w.attn), free(w.gu), free(w.sc), free(w.acc);
    free(logits), free(kref), free(vref), free(written);
    gtu_dev_free(final_norm_dev), gtu_dev_free(table_dev);
    gtu_dev_free(scalars_dev), gtu_dev_free(x_dev), gtu_dev_free(logits_dev), gtu_dev_free(a.workspace);
}

static int cmp_u64(const void *a, const void *b) {
    const unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

/* The kernel's time at the full size of Voxtral Mini's decoder (30 layers, vocab 131072; weights
 * and cache of one constant, values do not change the time), and where it goes: per op, from the
 * kernel's stamps, the time blocks wait for the op before and the time they work. Information,
 * no check (bench/ holds the measured numbers). FP8: the layers' weights as E4M3 codes (the
 * lm_head stays bf16). */
static void time_full_size(int fp8, int consumer, int rows) {
    const int layers = 30, H = 3072, heads = 32, kvh = 8, D = 128, F = 8192, V = 131072, pos = 440;
    const int QD = heads * D, KD = kvh * D, width = pos / kBlock + 1;
    const size_t esz = fp8 ? 1 : 2;
    size_t wbytes = (size_t)layers * ((size_t)(QD + 2 * KD) * H + (size_t)H * QD + (size_t)2 * F * H +
                                      (size_t)H * F) * esz + (size_t)V * H * 2;
    size_t free_b = 0, total_b = 0;
    GTU_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (free_b < wbytes + ((size_t)2 << 30)) {
        printf("timing: skipped (%.1f GB free, %.1f GB of weights)\n", free_b / 1e9, wbytes / 1e9);
        return;
    }
    char *w = gtu_dev_alloc(wbytes);
    GTU_CUDA(cudaMemset(w, 0x3c, wbytes)); /* bf16 0x3c3c = 0.0115, E4M3 0x3c = 1.5 */
    /* FP8: every row's scale 0.01, each layer's own (as in a model: read from HBM once a step) */
    const size_t scales_a_layer = (size_t)(QD + 2 * KD) + H + 2 * F + H;
    float *scale = NULL;
    if (fp8) {
        float *h = gtu_malloc(scales_a_layer * layers * sizeof *h);
        for (size_t i = 0; i < scales_a_layer * layers; i++) h[i] = 0.01f;
        scale = gtu_dev_upload(h, scales_a_layer * layers * sizeof *h);
        free(h);
    }
    size_t pool = (size_t)(rows * width + 1) * kBlock * KD * 2; /* a table of its own a row */
    char *kv = gtu_dev_alloc(pool * 2 * layers);
    GTU_CUDA(cudaMemset(kv, 0x3c, pool * 2 * layers));
    vox_k_pdecode_layer L[30];
    char *at = w;
    for (int l = 0; l < layers; l++) {
        L[l] = (vox_k_pdecode_layer){0};
        L[l].qkv = at, at += (size_t)(QD + 2 * KD) * H * esz;
        L[l].o = at, at += (size_t)H * QD * esz;
        L[l].gate_up = at, at += (size_t)2 * F * H * esz;
        L[l].down = at, at += (size_t)H * F * esz;
        if (fp8) {
            float *sl = scale + (size_t)l * scales_a_layer;
            L[l].qkv_scale = sl, L[l].o_scale = sl + QD + 2 * KD;
            L[l].gate_up_scale = sl + QD + 2 * KD + H, L[l].down_scale = sl + QD + 2 * KD + H + 2 * F;
        }
        L[l].attn_norm = L[l].ffn_norm = w; /* any bf16 values */
        L[l].k_cache = kv + (size_t)l * 2 * pool, L[l].v_cache = kv + (size_t)l * 2 * pool + pool;
    }
    /* each row at the same position, in blocks of its own: pos [rows], slot [rows], len [rows],
     * then the tables [rows, width] */
    int32_t host[3 * 8 + 8 * 64];
    for (int b = 0; b < rows; b++) {
        host[b] = pos, host[rows + b] = (b * width + pos / kBlock) * kBlock + pos % kBlock;
        host[2 * rows + b] = pos + 1;
        for (int i = 0; i < width; i++) host[3 * rows + b * width + i] = b * width + i;
    }
    int32_t *dev = gtu_dev_upload(host, (size_t)(3 + width) * rows * sizeof *host);
    void *x = gtu_dev_alloc((size_t)rows * H * 2), *logits = gtu_dev_alloc((size_t)rows * V * 2);
    GTU_CUDA(cudaMemset(x, 0x3c, (size_t)rows * H * 2));
    vox_k_pdecode_args a = {.layers = L, .n_layers = layers, .hidden = H, .heads = heads,
                            .kv_heads = kvh, .head_dim = D, .ffn = F, .vocab = V, .eps = 1e-5f,
                            .attn_scale = 0.088f, .theta = 1e8, .x = x, .final_norm = w,
                            .lm_head = at, .logits = logits, .rows = rows, .pos = dev,
                            .slot = dev + rows, .len = dev + 2 * rows, .table = dev + 3 * rows,
                            .block_size = kBlock, .table_width = width, .fp8 = fp8,
                            .consumer = consumer};
    size_t ws = vox_k_pdecode_workspace_bytes(&a);
    a.workspace = gtu_dev_alloc(ws);
    GTU_CUDA(cudaMemset(a.workspace, 0, ws));
    int sms = 0;
    GTU_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int steps = layers * 5 + 1;
    for (int i = 0; i < 3; i++) vox_k_pdecode(&a, 0);
    GTU_SYNC_CHECK();
    double us = 0;
    GTU_TIME_US(us, 20, vox_k_pdecode(&a, 0));
    printf("timing: full size%s, %s, %d row%s at position %d: %.1f us a step, %.0f GB/s of weights\n",
           fp8 ? " FP8" : "", kConsumerName[consumer], rows, rows > 1 ? "s" : "", pos, us,
           (double)wbytes / (us * 1e3));
    {   /* the in-flight caps the backend tunes over, and around them (least of 5 rounds) */
        static const int caps[] = {1, 2, 3, 4, 5, 6, 8};
        enum { N = sizeof caps / sizeof *caps };
        float cap_us[N];
        const int best = vox_k_pdecode_tune(&a, caps, N, 5, cap_us, 0);
        printf("timing:   pages in flight a block, us a step:");
        for (int i = 0; i < N; i++) printf(" %d: %.1f", caps[i], cap_us[i]);
        printf("; fastest %d\n", best);
    }
    /* one stamped run */
    /* + the attention marks, + the staged marks (a word a block and step) */
    size_t nst = (size_t)sms * steps * 2 + (size_t)sms * layers * 10 + (size_t)sms * steps;
    a.stamps = gtu_dev_alloc(nst * sizeof(unsigned long long));
    GTU_CUDA(cudaMemset(a.stamps, 0, nst * sizeof(unsigned long long)));
    vox_k_pdecode(&a, 0);
    GTU_SYNC_CHECK();
    unsigned long long *st = gtu_malloc(nst * sizeof *st);
    gtu_download(st, a.stamps, nst * sizeof *st);
    /* VOX_PDECODE_STAMPS_DIR: the raw stamps too, for scripts/pdecode_stamps.py (u64 ns,
     * [block][step][begin, end], steps = layers x 5 ops + lm_head; then the attention marks) */
    const char *dir = getenv("VOX_PDECODE_STAMPS_DIR");
    if (dir && *dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/stamps-%s-%s%s-%dsm.u64", dir, fp8 ? "fp8" : "bf16",
                 kConsumerShort[consumer], rows == 2 ? "-r2" : rows == 4 ? "-r4" : rows == 8 ? "-r8" : "", sms);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(st, sizeof *st, nst, f) != nst) printf("timing: could not write %s\n", path);
        if (f) fclose(f);
    }
    unsigned long long t0 = ~0ull, t1 = 0;
    double wait[6] = {0}, busy[6] = {0};
    int count[6] = {0};
    for (int c = 0; c < sms; c++)
        for (int s = 0; s < steps; s++) {
            unsigned long long b = st[((size_t)c * steps + s) * 2], e = st[((size_t)c * steps + s) * 2 + 1];
            unsigned long long prev = s ? st[((size_t)c * steps + s - 1) * 2 + 1] : b;
            int op = s == steps - 1 ? 5 : s % 5;
            wait[op] += (double)(b - prev), busy[op] += (double)(e - b), count[op]++;
            if (b < t0) t0 = b;
            if (e > t1) t1 = e;
        }
    /* How far apart the blocks finish an op (its tail: the op ends with the last block), mean
     * over the layers: from the median block's end to the last one's, and from the first's. */
    double tail_med[6] = {0}, tail_first[6] = {0};
    unsigned long long *ends = gtu_malloc((size_t)sms * sizeof *ends);
    for (int s = 0; s < steps; s++) {
        for (int c = 0; c < sms; c++) ends[c] = st[((size_t)c * steps + s) * 2 + 1];
        qsort(ends, (size_t)sms, sizeof *ends, cmp_u64);
        int op = s == steps - 1 ? 5 : s % 5;
        tail_med[op] += (double)(ends[sms - 1] - ends[sms / 2]);
        tail_first[op] += (double)(ends[sms - 1] - ends[0]);
    }
    free(ends);
    static const char *names[] = {"qkv", "attention", "o", "gate|up", "down", "lm_head"};
    printf("timing: stamped run %.1f us; per op and block, mean us waiting for the op before / working; "
           "the op's last block ends after its median / first block by:\n", (t1 - t0) / 1e3);
    for (int op = 0; op < 6; op++) {
        const int n = op == 5 ? 1 : layers;
        printf("  %-10s wait %6.2f  work %7.2f  tail %6.2f / %6.2f  (x %d a step)\n", names[op],
               wait[op] / count[op] / 1e3, busy[op] / count[op] / 1e3, tail_med[op] / n / 1e3,
               tail_first[op] / n / 1e3, n);
    }
    free(st);
    gtu_dev_free(a.stamps), gtu_dev_free(a.workspace), gtu_dev_free(x), gtu_dev_free(logits);
    gtu_dev_free(dev), gtu_dev_free(kv), gtu_dev_free(w), gtu_dev_free(scale);
}

int main(int argc, char **argv) {
    gtu_require_device();
    /* --no-timing: the checks alone (compute-sanitizer's runs), and a further argument runs only
     * the shapes whose name contains it (drawing other random data than a full run: the shapes
     * share one generator); --timing-only: the full-size timing alone, and a further argument
     * times only the configurations whose name (bf16-row, bf16-split, fp8-row, fp8-split; with
     * 2, 4 or 8 rows bf16-split-r2, ..., fp8-split-r8, picked only by a name with "-r") contains it
     * (one kernel to find for a profiler: bench/NOTES-2026-12-04.md); after --no-timing NAME, a
     * consumer's short name (row, split) checks with that consumer alone (racecheck at the full
     * width takes minutes a consumer) */
    const int timing = !(argc > 1 && strcmp(argv[1], "--no-timing") == 0);
    const int checks = !(argc > 1 && strcmp(argv[1], "--timing-only") == 0);
    const char *only = argc > 2 ? argv[2] : NULL;
    const char *only_consumer = !timing && argc > 3 ? argv[3] : NULL;
    if (only_consumer && strcmp(only_consumer, kConsumerShort[1]) != 0 &&
        strcmp(only_consumer, kConsumerShort[2]) != 0) {
        fprintf(stderr, "test_kernels_pdecode: unknown consumer '%s' (%s or %s)\n", only_consumer,
                kConsumerShort[1], kConsumerShort[2]);
        return 2;
    }
    int major = 0;
    GTU_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    static const shape shapes[] = {
        /* name            layers hidden heads kv  D   ffn   vocab pos0 steps fp8 in_order rows */
        {"first position", 2, 128, 4, 2, 32, 256, 1400, 0, 3, 0, 0, 1},
        {"first position fp8", 2, 128, 4, 2, 32, 256, 1400, 0, 3, 1, 0, 1},
        {"tiny long", 2, 128, 4, 2, 32, 256, 1400, 770, 3, 0, 0, 1},
        {"tiny long in order", 2, 128, 4, 2, 32, 256, 1400, 755, 3, 0, 1, 1},
        {"block boundary", 2, 192, 6, 2, 64, 320, 520, 46, 4, 0, 0, 1},
        {"awkward", 3, 192, 6, 2, 64, 320, 520, 37, 3, 0, 0, 1},
        {"awkward fp8", 3, 192, 6, 2, 64, 320, 520, 37, 3, 1, 0, 1},
        {"long context", 1, 192, 6, 2, 64, 320, 520, 5000, 2, 0, 0, 1},
        /* down's K over whole pages and a partial one (pages of 3072-byte rows): bf16 1536 + 1536
         * + 272 columns, FP8 3072 + 272 */
        {"ffn chunks", 2, 192, 6, 2, 64, 3344, 520, 300, 3, 0, 0, 1},
        {"ffn chunks fp8", 2, 192, 6, 2, 64, 3344, 520, 300, 3, 1, 0, 1},
        {"full width", 2, 3072, 32, 8, 128, 8192, 8192, 440, 3, 0, 0, 1},
        {"full width fp8", 2, 3072, 32, 8, 128, 8192, 8192, 440, 3, 1, 0, 1},
        /* several sequences a launch (the batched instance): rows of different lengths, split
         * and blocked at different places; 3 rows leave a row of the mma's m side empty */
        {"rows 2 first position", 2, 128, 4, 2, 32, 256, 1400, 0, 3, 0, 0, 2},
        {"rows 2 first position fp8", 2, 128, 4, 2, 32, 256, 1400, 0, 3, 1, 0, 2},
        {"rows 4 tiny long", 2, 128, 4, 2, 32, 256, 1400, 770, 3, 0, 0, 4},
        {"rows 3 awkward", 3, 192, 6, 2, 64, 320, 520, 37, 3, 0, 0, 3},
        {"rows 3 awkward fp8", 3, 192, 6, 2, 64, 320, 520, 37, 3, 1, 0, 3},
        {"rows 4 block boundary", 2, 192, 6, 2, 64, 320, 520, 46, 4, 0, 1, 4},
        {"rows 4 ffn chunks fp8", 2, 192, 6, 2, 64, 3344, 520, 300, 3, 1, 0, 4},
        {"rows 2 full width", 2, 3072, 32, 8, 128, 8192, 8192, 440, 3, 0, 0, 2},
        {"rows 4 full width fp8", 2, 3072, 32, 8, 128, 8192, 8192, 440, 3, 1, 0, 4},
        /* 5 to 8 rows: inputs of more than 3072 columns (o's, down's) staged in chunks, whose
         * sums carry over: down's 3344 columns as 3072 + 272, the full width's o as 2 chunks and
         * down as 3 */
        {"rows 5 awkward fp8", 3, 192, 6, 2, 64, 320, 520, 37, 3, 1, 0, 5},
        {"rows 8 tiny long", 2, 128, 4, 2, 32, 256, 1400, 770, 3, 0, 0, 8},
        {"rows 6 ffn chunks", 2, 192, 6, 2, 64, 3344, 520, 300, 3, 0, 0, 6},
        {"rows 7 ffn chunks fp8", 2, 192, 6, 2, 64, 3344, 520, 300, 3, 1, 0, 7},
        {"rows 8 full width", 2, 3072, 32, 8, 128, 8192, 8192, 440, 3, 0, 0, 8},
        {"rows 8 full width fp8", 2, 3072, 32, 8, 128, 8192, 8192, 440, 3, 1, 0, 8},
    };
    if (major < 9) { /* the kernel needs sm_90: it must refuse, and the caller goes op by op */
        vox_k_pdecode_args a = {.n_layers = 1, .hidden = 128, .heads = 4, .kv_heads = 2,
                                .head_dim = 32, .ffn = 256, .vocab = 1400, .block_size = 16};
        CHECK(vox_k_pdecode_supported(&a) == 0);
        printf("sm_%d0: the persistent decode kernel is not taken here (checked)\n", major);
        return test_finish("test_kernels_pdecode");
    }
    { /* more than 4 query heads a kv head (pdecode.cu's kMaxGroup): refused, the caller goes op
       * by op; 4 (Voxtral's 32 / 8) taken */
        vox_k_pdecode_args a = {.n_layers = 1, .hidden = 128, .heads = 8, .kv_heads = 1,
                                .head_dim = 32, .ffn = 256, .vocab = 1400, .block_size = 16};
        CHECK(vox_k_pdecode_supported(&a) == 0);
        a.heads = 4;
        CHECK(vox_k_pdecode_supported(&a) == 1);
    }
    gtu_rng rng = gtu_rng_seed(0x5eed2026);
    for (int consumer = 1; consumer <= 2; consumer++)
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
            if (checks && (!only || strstr(shapes[i].name, only)) &&
                (!only_consumer || strcmp(only_consumer, kConsumerShort[consumer]) == 0) &&
                (shapes[i].rows <= 1 || consumer == 2)) /* several rows: the split consumer only */
                run_shape(&shapes[i], consumer, &rng);
    /* the one-row configurations, then the split consumer at 2, 4 and 8 rows (bf16-split-r2, ...) */
    static const int kTimed[][2] = {{2, 1}, {1, 1}, {2, 2}, {2, 4}, {2, 8}}; /* consumer, rows */
    if (timing)
        for (int fp8 = 0; fp8 <= 1; fp8++)
            for (size_t c = 0; c < sizeof kTimed / sizeof *kTimed; c++) {
                const int consumer = kTimed[c][0], rows = kTimed[c][1];
                char name[24];
                snprintf(name, sizeof name, "%s-%s%s", fp8 ? "fp8" : "bf16", kConsumerShort[consumer],
                         rows == 2 ? "-r2" : rows == 4 ? "-r4" : rows == 8 ? "-r8" : "");
                /* a one-row name (fp8-split) does not pick the several rows' (fp8-split-r4) */
                if (checks || !only || (strstr(name, only) && (rows == 1 || strstr(only, "-r"))))
                    time_full_size(fp8, consumer, rows);
            }
    return test_finish("test_kernels_pdecode");
}
