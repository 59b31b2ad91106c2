/* The decode-shaped projections (kernels/matvec.cu) against a host reference.
 *
 * y = epilogue(prologue(x) @ w^T) for x [m, k] (m <= 4), w [n, k], bf16. Every variant (what
 * vox_k_matvec picks, then each configuration of the test hook) runs every case at m = 1 and 4
 * (and 2, 3 on the small shapes), with and without the RMSNorm prologue: the decoder's shapes
 * (q|k|v + RoPE + KV cache, o proj + residual, gate|up + SwiGLU, down + residual, lm_head) and
 * awkward ones (n not a multiple of a block's rows, k = 8, k wider than one register slice,
 * tiny and odd head_dim, positions past 31000). Inputs are random (fixed seed): weights
 * N(0,1)/sqrt(k) in bf16, x rows N(0,1) times 1, 3, 0.25, 7 (so a row normalised with another
 * row's rsqrt shows), norm weights 1 + 0.2 N(0,1), a random y for ADD, random KV caches.
 * Output buffers start as NaN (ADD: the old y) with guard words behind them; rows >= m, the
 * guard, and every cache row but the m written ones must keep their contents bit for bit. A
 * variant that returns 0 must have launched nothing. Arguments the kernels refuse (k % 8, m,
 * alignment, shapes) are checked to return 0 and leave memory alone. Then the decoder's shapes
 * are timed at m = 1 with the weights out of L2 (printed, not asserted; --no-timing skips it).
 * lm_head (805 MB of weights) is checked at m = 1 through vox_k_matvec only, to keep it short.
 * QKV_ROPE_CACHE with row_pos / row_slot (a row per sequence, continuous batching) is checked
 * bit for bit against the legacy path run on each row alone (test_qkv_rows).
 *
 * Reference (host, plain C): h = x, or with the prologue h_i = bf16(nw_i * bf16(x_i * inv)),
 * inv = fp32(1 / sqrt(mean(x^2) + eps)) from a double sum; P = sum_i w_i h_i exactly (double,
 * from the same bf16 values); then the kernel's rounding sequence, step by step in fp32 with
 * bf16 round-to-nearest-even (common/dtype.h): STORE bf16(P); ADD bf16(y + bf16(P)); SWIGLU
 * bf16(bf16(g / (1 + exp(-g))) * u) with g, u = bf16(P); RoPE bf16(bf16(x1 c) - bf16(x2 s)),
 * bf16(bf16(x2 c) + bf16(x1 s)) with c, s = bf16(cos, sin of fp32(pos) * fp32(theta^(-2i/D)));
 * v = bf16(P).
 *
 * Tolerance: an interval per output, the reference's rounding sequence evaluated at the ends of
 * what the kernel may legitimately compute instead:
 *  - P: the kernel sums in fp32 in its own order. |P_kernel - P| <= e with
 *    e = 1e-5 * sqrt(sum_i (w_i h_i)^2), i.e. 1e-5 * sqrt(k) * the rms of this output's terms
 *    (for these inputs the fp32 error of the kernel's summation trees is ~1e-7 of that scale:
 *    1e-5 leaves a wide margin and is still far below a bf16 step), plus, with the prologue,
 *    sum_i |w_i| |dh_i| over the elements h_i whose roundings change for some inv within the
 *    worst case error of the kernel's fp32 sum of squares and rsqrtf (2 ulp) of the exact one:
 *    (depth / 2 + 8) * 2^-24 relative, depth = 8 ceil(k / 1024) + 13 the longest chain of fp32
 *    adds in that sum. Such h_i exist in a few % of the rows (see below); elsewhere h is exact.
 *  - Each later step is monotone in its inputs: fp32 and bf16 rounding, adds, products of two
 *    bf16 values (exact in fp32; an interval product takes its four corners), silu (monotone on
 *    either side of its minimum at -1.2785; the device's expf and division are within 1e-6
 *    relative of the exact silu), cos/sin (the device's sincosf is within 2 ulp: 3 fp32 ulps
 *    are allowed). So [P - e, P + e] maps to [lo, hi] of each output by evaluating the sequence
 *    at the ends, and gtu_compare_bound gets bound = max(hi - ref, ref - lo) around the central
 *    emulation. For bf16(P) this is at most e plus one bf16 step of |P| (one step is up to
 *    2^-7 |P|, where P sits just above a power of two); through ADD it adds one step of |y + P|;
 *    through SwiGLU and RoPE about one step per rounding, times the other factor. Where the
 *    interval holds one bf16 value (most outputs) the kernel must match bit for bit, so a wrong
 *    rounding step cannot hide inside the tolerance.
 *  - Also counted: outputs bit-identical to the central emulation, over each call: at most
 *    1 + n/100 may differ (legitimately: a P within ~1e-7 of a rounding boundary, a last-bit
 *    difference of the device's expf or sincosf next to one). Left out of that count are the
 *    rows where the prologue may round some h_i either way (the interval analysis above finds
 *    them: x is bf16, so x_i * inv takes only ~128 distinct positions between two bf16 values,
 *    and in a few % of rows one of them lies within the rsqrt error of a rounding boundary; ~k/128
 *    elements then flip together, moving every output of that row by ~1e-4 and changing the
 *    last bit of ~20% of them, all inside the bounds). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kernels.h"

/* Test hooks exported by kernels/matvec.cu (not part of kernels.h). variant -1: what
 * vox_k_matvec picks; 0..count-1: each configuration. They return 0, launching nothing, when
 * the variant does not take the arguments. */
int vox_k_matvec_variant_count(void);
const char *vox_k_matvec_variant_name(int variant);
int vox_k_matvec_variant(int variant, const vox_k_matvec_args *a, cudaStream_t stream);

#define EPS 1e-5f
#define MROWS VOX_K_MATVEC_MAX_M /* rows of x on the device, whatever m a call uses */
#define GUARD 64                 /* bf16 words after y that no call may write */
#define NAN_WORD 0xffffu
#define TIME_ITERS 50
#define L2_FLUSH_BYTES (512.0 * 1024.0 * 1024.0) /* weight copies rotated when timing */

enum { STORE = VOX_K_MATVEC_STORE, ADD = VOX_K_MATVEC_ADD, SWIGLU = VOX_K_MATVEC_SWIGLU,
       QKV = VOX_K_MATVEC_QKV_ROPE_CACHE };

static gtu_rng rng;
static float normal_table[65536]; /* N(0,1) draws: weights are sampled from it (fast) */
static int n_variants;
static size_t reference_inconsistent;

static const float row_scale[MROWS] = {1.0f, 3.0f, 0.25f, 7.0f};

static const char *vname(int v) { return v < 0 ? "auto" : vox_k_matvec_variant_name(v); }

/* ---- bf16 and interval helpers --------------------------------------------------------------- */

static float bfr(float v) { return vox_bf16_to_f32(vox_f32_to_bf16(v)); }
/* A real value as the kernel's fp32 value rounded to bf16: to float (RN), then to bf16 (RN). */
static float bfd(double v) { return bfr((float)v); }

/* An output's possible values: lo <= mid <= hi, mid the central emulation (all bf16 values). */
typedef struct {
    float lo, mid, hi;
} iv;

static iv iv_p(double p, double e) {
    iv v = {bfd(p - e), bfd(p), bfd(p + e)};
    return v;
}

/* bf16(a * b) for a in A, b in B: the products of bf16 values are exact in fp32. */
static iv iv_mul(iv a, iv b) {
    const float c[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
    float lo = c[0], hi = c[0];
    for (int i = 1; i < 4; i++) lo = fminf(lo, c[i]), hi = fmaxf(hi, c[i]);
    iv r = {bfr(lo), bfr(a.mid * b.mid), bfr(hi)};
    return r;
}

static iv iv_sub(iv a, iv b) {
    iv r = {bfr(a.lo - b.hi), bfr(a.mid - b.mid), bfr(a.hi - b.lo)};
    return r;
}

static iv iv_add(iv a, iv b) {
    iv r = {bfr(a.lo + b.lo), bfr(a.mid + b.mid), bfr(a.hi + b.hi)};
    return r;
}

static double silu_d(double g) { return g / (1.0 + exp(-g)); }

/* bf16(silu(g)) for g in G, silu evaluated in fp32 by the device (within 1e-6 relative). */
static iv iv_silu(iv g) {
    const double xmin = -1.2784645427610738; /* silu's minimum */
    const double a = silu_d(g.lo), b = silu_d(g.hi);
    double lo = fmin(a, b), hi = fmax(a, b);
    if (g.lo <= xmin && xmin <= g.hi) lo = silu_d(xmin);
    lo -= 1e-6 * fabs(lo) + 1e-38;
    hi += 1e-6 * fabs(hi) + 1e-38;
    iv r = {bfd(lo), bfr(g.mid / (1.0f + expf(-g.mid))), bfd(hi)};
    return r;
}

/* bf16 of the device's sincosf value: within 2 ulp of the exact one (3 allowed). */
static iv iv_trig(double exact) {
    const float f = (float)exact;
    float lo = f, hi = f;
    for (int i = 0; i < 3; i++) lo = nextafterf(lo, -INFINITY), hi = nextafterf(hi, INFINITY);
    iv r = {bfr(lo), bfr(f), bfr(hi)};
    return r;
}

/* Stores the centre and the symmetric bound (rounded up to a float). */
static void iv_store(iv v, float *ref, float *bound, size_t i) {
    if (!(v.lo <= v.mid && v.mid <= v.hi)) reference_inconsistent++;
    const double b = fmax((double)v.hi - v.mid, (double)v.mid - v.lo);
    float bf = (float)b;
    if ((double)bf < b) bf = nextafterf(bf, INFINITY);
    ref[i] = v.mid;
    bound[i] = bf;
}

/* ---- cases ----------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int ep;
    int64_t n, k; /* QKV: n is (H + 2 Hkv) * D, filled in by run_case */
    int H, Hkv, D;
    double theta;
    int64_t pos0, capacity;
    int norms;           /* bit 0: without the prologue, bit 1: with it */
    int m_mask;          /* bit m: run with m rows */
    int auto_only;       /* check only what vox_k_matvec picks (the largest shape) */
    int time_norm;       /* -1: not timed, else timed at m = 1 with (1) or without (0) prologue */
    int auto_may_reject; /* head_dim not a multiple of the default row group */
} mv_case;

/* Host data and device buffers of one case. */
typedef struct {
    int64_t out_w, kd; /* y row width; k/v cache row width (QKV) */
    uint16_t *hw;      /* [n, k] */
    uint16_t *hx, *hnw;
    float *x, *nw;        /* [MROWS, k], [k] exact mirrors */
    uint16_t *y_init;     /* [MROWS * out_w + GUARD] */
    float *y_old;         /* [MROWS, out_w] (ADD) */
    uint16_t *kc_init, *vc_init; /* [capacity, kd] */
    uint16_t *y_got, *kc_got, *vc_got;
    void *d_w, *d_x, *d_nw, *d_y, *d_kc, *d_vc;
    int64_t *d_pos;
} mv_ctx;

typedef struct {
    int rows;
    float *ref, *bound;                   /* [rows, out_w] */
    float *kref, *kbound, *vref, *vbound; /* QKV: [rows, kd] */
    int row_may_flip[MROWS]; /* the prologue may round some h_i of this row either way */
    size_t n_out, n_determined, n_amb;
} mv_ref;

static uint16_t *make_weights(int64_t n, int64_t k) {
    const size_t cnt = (size_t)n * (size_t)k;
    uint16_t *w = (uint16_t *)gtu_malloc(cnt * sizeof *w);
    const float scale = 1.0f / sqrtf((float)k);
    size_t i = 0;
    while (i < cnt) {
        uint64_t z = gtu_next_u64(&rng);
        for (int j = 0; j < 4 && i < cnt; j++, i++, z >>= 16)
            w[i] = vox_f32_to_bf16(normal_table[z & 0xffffu] * scale);
    }
    return w;
}

static size_t y_words(const mv_ctx *t) { return (size_t)(MROWS * t->out_w + GUARD); }
static size_t cache_words(const mv_case *c, const mv_ctx *t) {
    return c->ep == QKV ? (size_t)(c->capacity * t->kd) : 0;
}

static void setup_case(const mv_case *c, mv_ctx *t) {
    memset(t, 0, sizeof *t);
    const int64_t k = c->k;
    t->out_w = c->ep == SWIGLU ? c->n / 2 : c->ep == QKV ? (int64_t)c->H * c->D : c->n;
    t->kd = (int64_t)c->Hkv * c->D;
    t->hw = make_weights(c->n, k);
    t->hx = (uint16_t *)gtu_malloc((size_t)(MROWS * k) * sizeof *t->hx);
    t->x = (float *)gtu_malloc((size_t)(MROWS * k) * sizeof *t->x);
    for (int r = 0; r < MROWS; r++)
        for (int64_t i = 0; i < k; i++) {
            t->hx[r * k + i] = vox_f32_to_bf16(row_scale[r] * gtu_normal(&rng));
            t->x[r * k + i] = vox_bf16_to_f32(t->hx[r * k + i]);
        }
    t->hnw = gtu_randn_bf16(&rng, (size_t)k, 0.2f, 1.0f, &t->nw);
    const size_t ny = y_words(t);
    t->y_init = (uint16_t *)gtu_malloc(ny * sizeof *t->y_init);
    t->y_got = (uint16_t *)gtu_malloc(ny * sizeof *t->y_got);
    for (size_t i = 0; i < ny; i++) t->y_init[i] = NAN_WORD;
    if (c->ep == ADD) {
        float *f;
        uint16_t *h = gtu_randn_bf16(&rng, (size_t)(MROWS * t->out_w), 1.0f, 0.0f, &f);
        memcpy(t->y_init, h, (size_t)(MROWS * t->out_w) * sizeof *h);
        t->y_old = f;
        free(h);
    }
    const size_t ncw = cache_words(c, t);
    if (ncw) {
        t->kc_init = gtu_randn_bf16(&rng, ncw, 1.0f, 0.0f, NULL);
        t->vc_init = gtu_randn_bf16(&rng, ncw, 1.0f, 0.0f, NULL);
        t->kc_got = (uint16_t *)gtu_malloc(ncw * sizeof *t->kc_got);
        t->vc_got = (uint16_t *)gtu_malloc(ncw * sizeof *t->vc_got);
        t->d_kc = gtu_dev_alloc(ncw * 2);
        t->d_vc = gtu_dev_alloc(ncw * 2);
    }
    t->d_w = gtu_dev_upload(t->hw, (size_t)c->n * (size_t)k * 2);
    t->d_x = gtu_dev_upload(t->hx, (size_t)(MROWS * k) * 2);
    t->d_nw = gtu_dev_upload(t->hnw, (size_t)k * 2);
    t->d_y = gtu_dev_alloc(ny * 2);
    t->d_pos = (int64_t *)gtu_dev_upload(&c->pos0, sizeof c->pos0);
}

static void free_case(mv_ctx *t) {
    gtu_dev_free(t->d_w), gtu_dev_free(t->d_x), gtu_dev_free(t->d_nw), gtu_dev_free(t->d_y);
    gtu_dev_free(t->d_pos);
    if (t->d_kc) gtu_dev_free(t->d_kc), gtu_dev_free(t->d_vc);
    free(t->hw), free(t->hx), free(t->x), free(t->hnw), free(t->nw);
    free(t->y_init), free(t->y_got), free(t->y_old);
    free(t->kc_init), free(t->vc_init), free(t->kc_got), free(t->vc_got);
}

/* Puts y and the caches back to their initial contents. */
static void reset_buffers(const mv_case *c, const mv_ctx *t) {
    GTU_CUDA(cudaMemcpy(t->d_y, t->y_init, y_words(t) * 2, cudaMemcpyHostToDevice));
    const size_t ncw = cache_words(c, t);
    if (ncw) {
        GTU_CUDA(cudaMemcpy(t->d_kc, t->kc_init, ncw * 2, cudaMemcpyHostToDevice));
        GTU_CUDA(cudaMemcpy(t->d_vc, t->vc_init, ncw * 2, cudaMemcpyHostToDevice));
    }
}

static vox_k_matvec_args make_args(const mv_case *c, const mv_ctx *t, int m, int norm) {
    vox_k_matvec_args a;
    memset(&a, 0, sizeof a);
    a.w = t->d_w;
    a.x = t->d_x;
    a.norm_w = norm ? t->d_nw : NULL;
    a.n = c->n;
    a.k = c->k;
    a.m = m;
    a.eps = EPS;
    a.epilogue = (vox_k_matvec_epilogue)c->ep;
    a.y = t->d_y;
    if (c->ep == QKV) {
        a.k_cache = t->d_kc;
        a.v_cache = t->d_vc;
        a.n_heads = c->H;
        a.n_kv_heads = c->Hkv;
        a.head_dim = c->D;
        a.pos_dev = t->d_pos;
        a.theta = c->theta;
    }
    return a;
}

/* ---- reference ------------------------------------------------------------------------------- */

static void build_reference(const mv_case *c, const mv_ctx *t, int norm, int rows, mv_ref *R) {
    const int64_t n = c->n, k = c->k, ow = t->out_w, kd = t->kd;
    memset(R, 0, sizeof *R);
    R->rows = rows;

    /* the prologue, and the elements whose roundings the kernel's inv may flip */
    float *h = (float *)gtu_malloc((size_t)(rows * k) * sizeof *h);
    int64_t *amb_i = (int64_t *)gtu_malloc((size_t)(rows * k) * sizeof *amb_i);
    float *amb_d = (float *)gtu_malloc((size_t)(rows * k) * sizeof *amb_d);
    size_t namb[MROWS] = {0};
    for (int r = 0; r < rows; r++) {
        const float *xr = t->x + r * k;
        float *hr = h + r * k;
        if (!norm) {
            memcpy(hr, xr, (size_t)k * sizeof *hr);
            continue;
        }
        double ss = 0;
        for (int64_t i = 0; i < k; i++) ss += (double)xr[i] * xr[i];
        const double inv_exact = 1.0 / sqrt(ss / (double)k + (double)EPS);
        const float inv = (float)inv_exact;
        const double depth = 8.0 * (double)((k + 1023) / 1024) + 13.0;
        const double delta = (0.5 * depth + 8.0) * ldexp(1.0, -24);
        const float inv_lo = nextafterf((float)(inv_exact * (1.0 - delta)), 0.0f);
        const float inv_hi = nextafterf((float)(inv_exact * (1.0 + delta)), INFINITY);
        for (int64_t i = 0; i < k; i++) {
            hr[i] = bfr(t->nw[i] * bfr(xr[i] * inv));
            const float a = bfr(t->nw[i] * bfr(xr[i] * inv_lo));
            const float b = bfr(t->nw[i] * bfr(xr[i] * inv_hi));
            const float d = fmaxf(fabsf(a - hr[i]), fabsf(b - hr[i]));
            if (d > 0) {
                amb_i[r * k + (int64_t)namb[r]] = i;
                amb_d[r * k + (int64_t)namb[r]] = d;
                namb[r]++;
            }
        }
        R->n_amb += namb[r];
        R->row_may_flip[r] = namb[r] > 0;
    }

    /* P exactly (double), and how far the kernel's fp32 sum may be from it */
    double *P = (double *)gtu_malloc((size_t)(rows * n) * sizeof *P);
    double *E = (double *)gtu_malloc((size_t)(rows * n) * sizeof *E);
    float *wrow = (float *)gtu_malloc((size_t)k * sizeof *wrow);
    for (int64_t j = 0; j < n; j++) {
        const uint16_t *wj = t->hw + j * k;
        for (int64_t i = 0; i < k; i++) wrow[i] = vox_bf16_to_f32(wj[i]);
        for (int r = 0; r < rows; r++) {
            const float *hr = h + r * k;
            double s0 = 0, s1 = 0, q0 = 0, q1 = 0;
            for (int64_t i = 0; i < k; i += 2) { /* k % 8 == 0 */
                const double t0 = (double)wrow[i] * hr[i], t1 = (double)wrow[i + 1] * hr[i + 1];
                s0 += t0, s1 += t1, q0 += t0 * t0, q1 += t1 * t1;
            }
            double amb = 0;
            for (size_t a = 0; a < namb[r]; a++)
                amb += fabs((double)wrow[amb_i[r * k + (int64_t)a]]) * amb_d[r * k + (int64_t)a];
            P[r * n + j] = s0 + s1;
            E[r * n + j] = 1e-5 * sqrt(q0 + q1) + amb;
        }
    }
    free(wrow), free(h), free(amb_i), free(amb_d);

    R->ref = (float *)gtu_malloc((size_t)(rows * ow) * sizeof(float));
    R->bound = (float *)gtu_malloc((size_t)(rows * ow) * sizeof(float));
    R->n_out = (size_t)(rows * ow);
#define PIV(r, j) iv_p(P[(r) * n + (j)], E[(r) * n + (j)])
    switch (c->ep) {
    case STORE:
        for (int r = 0; r < rows; r++)
            for (int64_t j = 0; j < n; j++)
                iv_store(PIV(r, j), R->ref, R->bound, (size_t)(r * ow + j));
        break;
    case ADD:
        for (int r = 0; r < rows; r++)
            for (int64_t j = 0; j < n; j++) {
                const iv a = PIV(r, j);
                const float y = t->y_old[r * ow + j];
                const iv s = {bfr(y + a.lo), bfr(y + a.mid), bfr(y + a.hi)};
                iv_store(s, R->ref, R->bound, (size_t)(r * ow + j));
            }
        break;
    case SWIGLU:
        for (int r = 0; r < rows; r++)
            for (int64_t j = 0; j < ow; j++) {
                const iv g = PIV(r, j), u = PIV(r, ow + j);
                iv_store(iv_mul(iv_silu(g), u), R->ref, R->bound, (size_t)(r * ow + j));
            }
        break;
    case QKV: {
        const int D = c->D, half = D / 2, H = c->H, Hkv = c->Hkv;
        R->kref = (float *)gtu_malloc((size_t)(rows * kd) * sizeof(float));
        R->kbound = (float *)gtu_malloc((size_t)(rows * kd) * sizeof(float));
        R->vref = (float *)gtu_malloc((size_t)(rows * kd) * sizeof(float));
        R->vbound = (float *)gtu_malloc((size_t)(rows * kd) * sizeof(float));
        R->n_out += (size_t)(2 * rows * kd);
        for (int r = 0; r < rows; r++) {
            const int64_t pos = c->pos0 + r;
            for (int i = 0; i < half; i++) {
                const float inv_freq = (float)(1.0 / pow(c->theta, (double)(2 * i) / D));
                const float angle = (float)pos * inv_freq;
                const iv co = iv_trig(cos((double)angle)), sn = iv_trig(sin((double)angle));
                for (int hd = 0; hd < H + 2 * Hkv; hd++) {
                    const int64_t col = (int64_t)hd * D + i;
                    const iv a = PIV(r, col), b = PIV(r, col + half);
                    iv o1 = a, o2 = b; /* v: not rotated */
                    if (hd < H + Hkv) {
                        o1 = iv_sub(iv_mul(a, co), iv_mul(b, sn));
                        o2 = iv_add(iv_mul(b, co), iv_mul(a, sn));
                    }
                    float *ref, *bound;
                    int64_t at;
                    if (hd < H)
                        ref = R->ref, bound = R->bound, at = r * ow + (int64_t)hd * D;
                    else if (hd < H + Hkv)
                        ref = R->kref, bound = R->kbound, at = r * kd + (int64_t)(hd - H) * D;
                    else
                        ref = R->vref, bound = R->vbound, at = r * kd + (int64_t)(hd - H - Hkv) * D;
                    iv_store(o1, ref, bound, (size_t)(at + i));
                    iv_store(o2, ref, bound, (size_t)(at + i + half));
                }
            }
        }
        for (size_t i = 0; i < (size_t)(rows * kd); i++)
            R->n_determined += (R->kbound[i] == 0) + (R->vbound[i] == 0);
        break;
    }
    }
#undef PIV
    for (size_t i = 0; i < (size_t)(rows * ow); i++) R->n_determined += R->bound[i] == 0;
    free(P), free(E);
}

static void free_reference(mv_ref *R) {
    free(R->ref), free(R->bound), free(R->kref), free(R->kbound), free(R->vref), free(R->vbound);
}

/* ---- one call -------------------------------------------------------------------------------- */

typedef struct {
    int calls, skipped;
    double min_exact;
} mv_stats;

static size_t count_diff(const uint16_t *a, const uint16_t *b, size_t n) {
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += a[i] != b[i];
    return d;
}

/* Outputs of rows 0..m-1 (width w each) that differ from the emulated rounding sequence, rows
 * whose prologue may round differently left out; *counted gets how many were compared. */
static size_t mismatches(const mv_ref *R, const float *got, const float *ref, int m, int64_t w,
                         size_t *counted) {
    size_t bad = 0;
    for (int r = 0; r < m; r++) {
        if (R->row_may_flip[r]) continue;
        const double f = gtu_frac_exact(got + r * w, ref + r * w, (size_t)w);
        bad += (size_t)llround((1.0 - f) * (double)w);
        *counted += (size_t)w;
    }
    return bad;
}

static void run_call(const mv_case *c, mv_ctx *t, const mv_ref *R, int variant, int m, int norm,
                     mv_stats *st) {
    char what[160];
    snprintf(what, sizeof what, "%s m=%d%s [%s]", c->name, m, norm ? " +norm" : "", vname(variant));
    reset_buffers(c, t);
    const vox_k_matvec_args a = make_args(c, t, m, norm);
    const int ran = variant < 0 ? vox_k_matvec(&a, 0) : vox_k_matvec_variant(variant, &a, 0);
    const size_t ny = y_words(t), ncw = cache_words(c, t);
    gtu_download(t->y_got, t->d_y, ny * 2); /* synchronises and reports launch/execution errors */
    if (ncw) {
        gtu_download(t->kc_got, t->d_kc, ncw * 2);
        gtu_download(t->vc_got, t->d_vc, ncw * 2);
    }
    if (!ran) {
        const size_t changed = count_diff(t->y_got, t->y_init, ny) +
                               count_diff(t->kc_got, t->kc_init, ncw) +
                               count_diff(t->vc_got, t->vc_init, ncw);
        CHECK_MSG(changed == 0, "%s: returned 0 but wrote %zu words", what, changed);
        st->skipped++;
        if (variant < 0 && !c->auto_may_reject)
            CHECK_MSG(0, "%s: vox_k_matvec does not take a valid case", what);
        else if (c->ep != QKV)
            CHECK_MSG(0, "%s: the variant refuses a valid case (kernels.h: only m, k %% 8, "
                         "alignment or head_dim may be refused)", what);
        else
            printf("  skipped %s: does not take head_dim %d (nothing launched)\n", what, c->D);
        return;
    }
    st->calls++;
    const int64_t ow = t->out_w, kd = t->kd;
    const size_t nout = (size_t)(m * ow);

    /* untouched: rows >= m of y and the guard words */
    const size_t past = count_diff(t->y_got + nout, t->y_init + nout, ny - nout);
    CHECK_MSG(past == 0, "%s: %zu words of y past row m (or of the guard) were written", what,
              past);

    float *got = gtu_bf16_to_f32_host(t->y_got, nout);
    gtu_compare_bound(what, got, R->ref, R->bound, nout);
    gtu_check_nonzero(what, got, nout);
    size_t counted = 0, mism = mismatches(R, got, R->ref, m, ow, &counted);
    free(got);

    if (c->ep == QKV) {
        /* the m written rows against the reference, every other row as it was */
        const size_t rw = (size_t)(m * kd), lo = (size_t)(c->pos0 * kd);
        const size_t other = count_diff(t->kc_got, t->kc_init, lo) +
                             count_diff(t->kc_got + lo + rw, t->kc_init + lo + rw, ncw - lo - rw) +
                             count_diff(t->vc_got, t->vc_init, lo) +
                             count_diff(t->vc_got + lo + rw, t->vc_init + lo + rw, ncw - lo - rw);
        CHECK_MSG(other == 0, "%s: %zu words of cache rows other than %lld..%lld were written",
                  what, other, (long long)c->pos0, (long long)(c->pos0 + m - 1));
        char w2[192];
        float *kg = gtu_bf16_to_f32_host(t->kc_got + lo, rw);
        float *vg = gtu_bf16_to_f32_host(t->vc_got + lo, rw);
        snprintf(w2, sizeof w2, "%s k cache", what);
        gtu_compare_bound(w2, kg, R->kref, R->kbound, rw);
        gtu_check_nonzero(w2, kg, rw);
        snprintf(w2, sizeof w2, "%s v cache", what);
        gtu_compare_bound(w2, vg, R->vref, R->vbound, rw);
        gtu_check_nonzero(w2, vg, rw);
        mism += mismatches(R, kg, R->kref, m, kd, &counted);
        mism += mismatches(R, vg, R->vref, m, kd, &counted);
        free(kg), free(vg);
    }
    const size_t allowed = 1 + counted / 100;
    CHECK_MSG(mism <= allowed, "%s: %zu of %zu outputs differ from the emulated rounding sequence "
                               "(at most %zu may)", what, mism, counted, allowed);
    if (counted) {
        const double exact = 1.0 - (double)mism / (double)counted;
        if (exact < st->min_exact) st->min_exact = exact;
    }
}

/* ---- timing ---------------------------------------------------------------------------------- */

/* m = 1, every variant, the weights never in L2: the call after one using copy i uses copy
 * i + 1, and the copies together exceed 512 MB (the H200's L2 holds ~60 MB). */
static void time_case(const mv_case *c, mv_ctx *t, int norm) {
    const size_t wbytes = (size_t)c->n * (size_t)c->k * 2;
    int copies = (int)ceil(L2_FLUSH_BYTES / (double)wbytes);
    if (copies < 2) copies = 2;
    void **w = (void **)gtu_malloc((size_t)copies * sizeof *w);
    w[0] = t->d_w;
    for (int i = 1; i < copies; i++) {
        w[i] = gtu_dev_alloc(wbytes);
        GTU_CUDA(cudaMemcpy(w[i], w[0], wbytes, cudaMemcpyDeviceToDevice));
    }
    reset_buffers(c, t);
    GTU_SYNC_CHECK();
    vox_k_matvec_args a = make_args(c, t, 1, norm);
    printf("time %s m=1%s: %.1f MB of weights, %d copies (%.0f MB) in rotation\n", c->name,
           norm ? " +norm" : "", wbytes * 1e-6, copies, copies * wbytes * 1e-6);
    unsigned next = 0;
    for (int v = -1; v < n_variants; v++) {
        a.w = w[next++ % (unsigned)copies];
        if (!vox_k_matvec_variant(v, &a, 0)) {
            printf("  %-14s does not take this shape\n", vname(v));
            continue;
        }
        for (int i = 0; i < copies; i++) { /* warm-up: every copy once */
            a.w = w[next++ % (unsigned)copies];
            vox_k_matvec_variant(v, &a, 0);
        }
        GTU_SYNC_CHECK();
        double us[3];
        for (int rep = 0; rep < 3; rep++)
            GTU_TIME_US(us[rep], TIME_ITERS,
                        (a.w = w[next++ % (unsigned)copies], (void)vox_k_matvec_variant(v, &a, 0)));
        const double lo = fmin(us[0], fmin(us[1], us[2])), hi = fmax(us[0], fmax(us[1], us[2]));
        const double med = us[0] + us[1] + us[2] - lo - hi;
        printf("  %-14s %9.2f us %8.1f GB/s (mean of %d calls, median of 3)\n", vname(v), med,
               (double)wbytes / (med * 1e-6) * 1e-9, TIME_ITERS);
    }
    GTU_SYNC_CHECK();
    for (int i = 1; i < copies; i++) gtu_dev_free(w[i]);
    free(w);
}

/* ---- cases ----------------------------------------------------------------------------------- */

static int highest_m(int mask) {
    int m = 0;
    for (int i = 1; i <= MROWS; i++)
        if (mask & (1 << i)) m = i;
    return m;
}

static void run_case(const mv_case *cin, int timing) {
    mv_case c = *cin;
    if (c.ep == QKV) c.n = (int64_t)(c.H + 2 * c.Hkv) * c.D;
    printf("%s: n %lld, k %lld", c.name, (long long)c.n, (long long)c.k);
    if (c.ep == QKV)
        printf(", heads %d/%d, head_dim %d, theta %g, pos %lld, capacity %lld", c.H, c.Hkv, c.D,
               c.theta, (long long)c.pos0, (long long)c.capacity);
    printf("\n");
    mv_ctx t;
    setup_case(&c, &t);
    const int rows = highest_m(c.m_mask);
    for (int norm = 0; norm < 2; norm++) {
        if (!(c.norms & (1 << norm))) continue;
        mv_ref R;
        const size_t bad_before = reference_inconsistent;
        build_reference(&c, &t, norm, rows, &R);
        CHECK_MSG(reference_inconsistent == bad_before, "%s: host reference interval inconsistent",
                  c.name);
        mv_stats st = {0, 0, 1.0};
        for (int v = -1; v < (c.auto_only ? 0 : n_variants); v++)
            for (int m = 1; m <= MROWS; m++)
                if (c.m_mask & (1 << m)) run_call(&c, &t, &R, v, m, norm, &st);
        int flip_rows = 0;
        for (int r = 0; r < rows; r++) flip_rows += R.row_may_flip[r];
        printf("  %s%s: %d calls checked, %d skipped; bit-exact >= %.4f of outputs; %.4f of the "
               "reference intervals hold one value; %zu prologue elements in %d of %d rows may "
               "round either way\n",
               c.name, norm ? " +norm" : "", st.calls, st.skipped, st.calls ? st.min_exact : 0.0,
               (double)R.n_determined / (double)R.n_out, R.n_amb, flip_rows, rows);
        free_reference(&R);
    }
    if (timing && c.time_norm >= 0) time_case(&c, &t, c.time_norm);
    free_case(&t);
}

/* ---- QKV_ROPE_CACHE per row (continuous batching) ---------------------------------------------
 * With row_pos / row_slot set, row mm is at position row_pos[mm] (random, one repeated) and its
 * k/v go to pool row row_slot[mm] (random, distinct). The legacy path is run on each row alone
 * (m = 1, x and y at row mm, *pos_dev = row_pos[mm], a scratch cache of max_pos rows whose row
 * row_pos[mm] is then copied to the slot of the expected pools). A row's fp32 sums do not depend
 * on m or on the other rows (the same lanes add the same products in the same order, and the
 * prologue's statistics are per row), so y and both pools must match bit for bit; every pool row
 * no slot names keeps its contents, rows >= m of y and the guard stay NaN. pos_dev is NULL in
 * half the calls and points at 0 in the others (it must not be read). */
static void test_qkv_rows(const char *name, int64_t k, int H, int Hkv, int D, double theta,
                          int32_t max_pos, int pool_rows) {
    const int64_t n = (int64_t)(H + 2 * Hkv) * D, qd = (int64_t)H * D, kd = (int64_t)Hkv * D;
    printf("%s: n %lld, k %lld, heads %d/%d, head_dim %d, theta %g, positions < %d, pool of %d "
           "rows\n", name, (long long)n, (long long)k, H, Hkv, D, theta, max_pos, pool_rows);
    uint16_t *hw = make_weights(n, k);
    uint16_t *hx = gtu_randn_bf16(&rng, (size_t)(MROWS * k), 2.0f, 0.0f, NULL);
    uint16_t *hn = gtu_randn_bf16(&rng, (size_t)k, 0.2f, 1.0f, NULL);
    const size_t ny = (size_t)(MROWS * qd + GUARD), npool = (size_t)pool_rows * kd;
    uint16_t *y_init = (uint16_t *)gtu_malloc(ny * 2);
    for (size_t i = 0; i < ny; i++) y_init[i] = NAN_WORD;
    uint16_t *kp0 = gtu_randn_bf16(&rng, npool, 1.0f, 0.0f, NULL);
    uint16_t *vp0 = gtu_randn_bf16(&rng, npool, 1.0f, 0.0f, NULL);
    uint16_t *kexp = (uint16_t *)gtu_malloc(npool * 2), *vexp = (uint16_t *)gtu_malloc(npool * 2);
    uint16_t *kgot = (uint16_t *)gtu_malloc(npool * 2), *vgot = (uint16_t *)gtu_malloc(npool * 2);
    uint16_t *y_rows = (uint16_t *)gtu_malloc(ny * 2), *y_leg = (uint16_t *)gtu_malloc(ny * 2);
    const int64_t zero = 0;
    void *d_w = gtu_dev_upload(hw, (size_t)n * (size_t)k * 2);
    uint16_t *d_x = (uint16_t *)gtu_dev_upload(hx, (size_t)(MROWS * k) * 2);
    void *d_n = gtu_dev_upload(hn, (size_t)k * 2);
    uint16_t *d_y = (uint16_t *)gtu_dev_alloc(ny * 2), *d_yl = (uint16_t *)gtu_dev_alloc(ny * 2);
    uint16_t *d_kp = (uint16_t *)gtu_dev_alloc(npool * 2), *d_vp = (uint16_t *)gtu_dev_alloc(npool * 2);
    uint16_t *d_ks = (uint16_t *)gtu_dev_alloc((size_t)max_pos * kd * 2);
    uint16_t *d_vs = (uint16_t *)gtu_dev_alloc((size_t)max_pos * kd * 2);
    int64_t *d_pos = (int64_t *)gtu_dev_alloc(sizeof(int64_t));
    int64_t *d_zero = (int64_t *)gtu_dev_upload(&zero, sizeof zero);
    int32_t *d_rpos = (int32_t *)gtu_dev_alloc(MROWS * sizeof(int32_t));
    int32_t *d_rslot = (int32_t *)gtu_dev_alloc(MROWS * sizeof(int32_t));

    int calls = 0;
    for (int v = -1; v < n_variants; v++)
        for (int m = 1; m <= MROWS; m++)
            for (int norm = 0; norm < 2; norm++) {
                char what[192];
                snprintf(what, sizeof what, "%s m=%d%s [%s]", name, m, norm ? " +norm" : "",
                         vname(v));
                int32_t pos[MROWS], slot[MROWS];
                for (int r = 0; r < m; r++) {
                    pos[r] = (int32_t)(gtu_next_u64(&rng) % (uint64_t)max_pos);
                    int fresh;
                    do { /* distinct slots */
                        slot[r] = (int32_t)(gtu_next_u64(&rng) % (uint64_t)pool_rows);
                        fresh = 1;
                        for (int q = 0; q < r; q++) fresh &= slot[q] != slot[r];
                    } while (!fresh);
                }
                if (m >= 2 && norm) pos[1] = pos[0]; /* two sequences at one position */
                if (m >= 3) pos[2] = max_pos - 1;
                GTU_CUDA(cudaMemcpy(d_rpos, pos, sizeof pos, cudaMemcpyHostToDevice));
                GTU_CUDA(cudaMemcpy(d_rslot, slot, sizeof slot, cudaMemcpyHostToDevice));
                GTU_CUDA(cudaMemcpy(d_y, y_init, ny * 2, cudaMemcpyHostToDevice));
                GTU_CUDA(cudaMemcpy(d_yl, y_init, ny * 2, cudaMemcpyHostToDevice));
                GTU_CUDA(cudaMemcpy(d_kp, kp0, npool * 2, cudaMemcpyHostToDevice));
                GTU_CUDA(cudaMemcpy(d_vp, vp0, npool * 2, cudaMemcpyHostToDevice));
                memcpy(kexp, kp0, npool * 2);
                memcpy(vexp, vp0, npool * 2);

                vox_k_matvec_args a;
                memset(&a, 0, sizeof a);
                a.w = d_w, a.x = d_x, a.norm_w = norm ? d_n : NULL, a.n = n, a.k = k, a.m = m;
                a.eps = EPS, a.epilogue = VOX_K_MATVEC_QKV_ROPE_CACHE, a.y = d_y;
                a.k_cache = d_kp, a.v_cache = d_vp, a.n_heads = H, a.n_kv_heads = Hkv;
                a.head_dim = D, a.theta = theta;
                a.pos_dev = norm ? d_zero : NULL;
                a.row_pos = d_rpos, a.row_slot = d_rslot;
                const int ran = v < 0 ? vox_k_matvec(&a, 0) : vox_k_matvec_variant(v, &a, 0);
                GTU_SYNC_CHECK();

                /* the legacy path, row by row */
                int ran_leg = 1;
                for (int r = 0; r < m; r++) {
                    const int64_t p = pos[r];
                    GTU_CUDA(cudaMemcpy(d_pos, &p, sizeof p, cudaMemcpyHostToDevice));
                    vox_k_matvec_args l = a;
                    l.m = 1, l.x = d_x + r * k, l.y = d_yl + r * qd;
                    l.k_cache = d_ks, l.v_cache = d_vs, l.pos_dev = d_pos;
                    l.row_pos = NULL, l.row_slot = NULL;
                    ran_leg &= v < 0 ? vox_k_matvec(&l, 0) : vox_k_matvec_variant(v, &l, 0);
                    gtu_download(kexp + (size_t)slot[r] * kd, d_ks + (size_t)p * kd, (size_t)kd * 2);
                    gtu_download(vexp + (size_t)slot[r] * kd, d_vs + (size_t)p * kd, (size_t)kd * 2);
                }
                CHECK_MSG(ran == ran_leg, "%s: with rows returned %d, legacy %d", what, ran,
                          ran_leg);
                CHECK_MSG(ran || v >= 0, "%s: vox_k_matvec does not take rows", what);
                if (!ran || !ran_leg) continue;
                calls++;
                gtu_download(y_rows, d_y, ny * 2);
                gtu_download(y_leg, d_yl, ny * 2);
                gtu_download(kgot, d_kp, npool * 2);
                gtu_download(vgot, d_vp, npool * 2);
                const size_t nout = (size_t)(m * qd);
                const size_t bad_y = count_diff(y_rows, y_leg, nout);
                const size_t past = count_diff(y_rows + nout, y_init + nout, ny - nout);
                const size_t bad_k = count_diff(kgot, kexp, npool);
                const size_t bad_v = count_diff(vgot, vexp, npool);
                const size_t written = count_diff(kexp, kp0, npool) + count_diff(vexp, vp0, npool);
                CHECK_MSG(bad_y == 0, "%s: %zu of %zu q outputs differ from the legacy path", what,
                          bad_y, nout);
                CHECK_MSG(past == 0, "%s: %zu words of y past row m (or of the guard) written",
                          what, past);
                CHECK_MSG(bad_k == 0 && bad_v == 0,
                          "%s: %zu k and %zu v pool words differ from the legacy rows at their "
                          "slots (or rows no slot names were written)", what, bad_k, bad_v);
                CHECK_MSG(written > 0, "%s: the legacy path wrote no pool word", what);
                float *yf = gtu_bf16_to_f32_host(y_rows, nout);
                gtu_check_nonzero(what, yf, nout);
                free(yf);
            }
    printf("  ok %s: %d calls, y and pools bit-identical to the legacy path row by row\n", name,
           calls);

    gtu_dev_free(d_w), gtu_dev_free(d_x), gtu_dev_free(d_n), gtu_dev_free(d_y), gtu_dev_free(d_yl);
    gtu_dev_free(d_kp), gtu_dev_free(d_vp), gtu_dev_free(d_ks), gtu_dev_free(d_vs);
    gtu_dev_free(d_pos), gtu_dev_free(d_zero), gtu_dev_free(d_rpos), gtu_dev_free(d_rslot);
    free(hw), free(hx), free(hn), free(y_init), free(kp0), free(vp0), free(kexp), free(vexp);
    free(kgot), free(vgot), free(y_rows), free(y_leg);
}

/* ---- rejections ------------------------------------------------------------------------------ */

/* Arguments no variant takes: vox_k_matvec and every variant return 0 and write nothing. */
static void test_rejections(void) {
    enum { N = 16, K = 16, XR = 8 };
    uint16_t *hw = make_weights(N, K);
    uint16_t *hx = gtu_randn_bf16(&rng, XR * K, 1.0f, 0.0f, NULL);
    uint16_t *hn = gtu_randn_bf16(&rng, K, 0.2f, 1.0f, NULL);
    const size_t ny = (size_t)(XR * N + GUARD), nc = 8 * N;
    uint16_t *y_init = (uint16_t *)gtu_malloc(ny * 2), *y_got = (uint16_t *)gtu_malloc(ny * 2);
    uint16_t *c_init = gtu_randn_bf16(&rng, nc, 1.0f, 0.0f, NULL);
    uint16_t *kc_got = (uint16_t *)gtu_malloc(nc * 2), *vc_got = (uint16_t *)gtu_malloc(nc * 2);
    for (size_t i = 0; i < ny; i++) y_init[i] = NAN_WORD;
    const int64_t pos = 1;
    uint16_t *d_w = (uint16_t *)gtu_dev_upload(hw, N * K * 2);
    uint16_t *d_x = (uint16_t *)gtu_dev_upload(hx, XR * K * 2);
    uint16_t *d_n = (uint16_t *)gtu_dev_upload(hn, K * 2);
    uint16_t *d_y = (uint16_t *)gtu_dev_alloc(ny * 2);
    uint16_t *d_kc = (uint16_t *)gtu_dev_alloc(nc * 2), *d_vc = (uint16_t *)gtu_dev_alloc(nc * 2);
    int64_t *d_pos = (int64_t *)gtu_dev_upload(&pos, sizeof pos);
    const int32_t row_pos = 5, row_slot = 3;
    int32_t *d_rpos = (int32_t *)gtu_dev_upload(&row_pos, sizeof row_pos);
    int32_t *d_rslot = (int32_t *)gtu_dev_upload(&row_slot, sizeof row_slot);

    vox_k_matvec_args base;
    memset(&base, 0, sizeof base);
    base.w = d_w, base.x = d_x, base.norm_w = d_n, base.n = N, base.k = K, base.m = 1;
    base.eps = EPS, base.epilogue = VOX_K_MATVEC_STORE, base.y = d_y;
    vox_k_matvec_args qkv = base; /* valid: H = Hkv = 1, D = 4, n = 12 */
    qkv.epilogue = VOX_K_MATVEC_QKV_ROPE_CACHE, qkv.n = 12, qkv.k_cache = d_kc, qkv.v_cache = d_vc;
    qkv.n_heads = 1, qkv.n_kv_heads = 1, qkv.head_dim = 4, qkv.pos_dev = d_pos, qkv.theta = 1e4;

    struct {
        const char *name;
        vox_k_matvec_args a;
    } cases[16];
    int nc_ = 0;
#define REJECT(label, args, edit)                                                            \
    do {                                                                                     \
        cases[nc_].name = label;                                                             \
        cases[nc_].a = args;                                                                 \
        { vox_k_matvec_args *p = &cases[nc_].a; edit; }                                      \
        nc_++;                                                                               \
    } while (0)
    REJECT("k = 12 (k % 8 != 0)", base, p->k = 12);
    REJECT("m = 5", base, p->m = 5);
    REJECT("m = 0", base, p->m = 0);
    REJECT("x misaligned", base, p->x = d_x + 1);
    REJECT("w misaligned", base, p->w = d_w + 4);
    REJECT("norm_w misaligned", base, p->norm_w = d_n + 1);
    REJECT("y NULL", base, p->y = NULL);
    REJECT("swiglu odd n", base, (p->epilogue = VOX_K_MATVEC_SWIGLU, p->n = 15));
    REJECT("qkv n != (H + 2 Hkv) D", qkv, p->n = 16);
    REJECT("qkv k_cache NULL", qkv, p->k_cache = NULL);
    REJECT("qkv pos_dev NULL", qkv, p->pos_dev = NULL);
    REJECT("qkv row_slot without row_pos", qkv, p->row_slot = d_rslot);
    REJECT("qkv row_pos, row_slot NULL, pos_dev NULL", qkv, (p->row_pos = d_rpos, p->pos_dev = NULL));
    REJECT("qkv head_dim 3", qkv, (p->head_dim = 3, p->n = 9));
    REJECT("m * k over the shared memory", base, (p->m = 4, p->k = 25608));
#undef REJECT

    for (int i = 0; i < nc_; i++) {
        GTU_CUDA(cudaMemcpy(d_y, y_init, ny * 2, cudaMemcpyHostToDevice));
        GTU_CUDA(cudaMemcpy(d_kc, c_init, nc * 2, cudaMemcpyHostToDevice));
        GTU_CUDA(cudaMemcpy(d_vc, c_init, nc * 2, cudaMemcpyHostToDevice));
        const int r = vox_k_matvec(&cases[i].a, 0);
        CHECK_MSG(r == 0, "rejection %s: vox_k_matvec returned %d", cases[i].name, r);
        for (int v = 0; v < n_variants; v++) {
            const int rv = vox_k_matvec_variant(v, &cases[i].a, 0);
            CHECK_MSG(rv == 0, "rejection %s: variant %s returned %d", cases[i].name, vname(v), rv);
        }
        gtu_download(y_got, d_y, ny * 2);
        gtu_download(kc_got, d_kc, nc * 2);
        gtu_download(vc_got, d_vc, nc * 2);
        const size_t changed = count_diff(y_got, y_init, ny) + count_diff(kc_got, c_init, nc) +
                               count_diff(vc_got, c_init, nc);
        CHECK_MSG(changed == 0, "rejection %s: %zu words written", cases[i].name, changed);
        printf("  ok rejects %s\n", cases[i].name);
    }

    /* a variant index past the end, on valid arguments */
    GTU_CUDA(cudaMemcpy(d_y, y_init, ny * 2, cudaMemcpyHostToDevice));
    CHECK(vox_k_matvec_variant(n_variants, &base, 0) == 0);
    gtu_download(y_got, d_y, ny * 2);
    CHECK_MSG(count_diff(y_got, y_init, ny) == 0, "variant %d (past the end) wrote y", n_variants);

    /* and the valid arguments themselves are taken (so the above tested the refusals) */
    CHECK_MSG(vox_k_matvec(&base, 0) == 1, "vox_k_matvec refuses a valid STORE n=16 k=16");
    CHECK_MSG(vox_k_matvec(&qkv, 0) == 1, "vox_k_matvec refuses a valid QKV H=1/1 D=4");
    vox_k_matvec_args qkv_rows = qkv; /* rows: pos_dev need not be set */
    qkv_rows.pos_dev = NULL, qkv_rows.row_pos = d_rpos, qkv_rows.row_slot = d_rslot;
    CHECK_MSG(vox_k_matvec(&qkv_rows, 0) == 1,
              "vox_k_matvec refuses a valid QKV H=1/1 D=4 with row_pos / row_slot");
    gtu_download(y_got, d_y, ny * 2);
    CHECK_MSG(count_diff(y_got, y_init, N) == N, "valid STORE n=16 k=16 did not write y");

    gtu_dev_free(d_w), gtu_dev_free(d_x), gtu_dev_free(d_n), gtu_dev_free(d_y);
    gtu_dev_free(d_kc), gtu_dev_free(d_vc), gtu_dev_free(d_pos);
    gtu_dev_free(d_rpos), gtu_dev_free(d_rslot);
    free(hw), free(hx), free(hn), free(y_init), free(y_got), free(c_init), free(kc_got);
    free(vc_got);
}

/* ---- main ------------------------------------------------------------------------------------ */

#define M14 ((1 << 1) | (1 << 4))
#define M1234 ((1 << 1) | (1 << 2) | (1 << 3) | (1 << 4))

int main(int argc, char **argv) {
    gtu_require_device();
    rng = gtu_rng_seed(20260411);
    for (int i = 0; i < 65536; i++) normal_table[i] = gtu_normal(&rng);
    const int timing = !(argc > 1 && strcmp(argv[1], "--no-timing") == 0);
    n_variants = vox_k_matvec_variant_count();
    CHECK(n_variants >= 1);
    printf("variants: auto");
    for (int v = 0; v < n_variants; v++) printf(", %d: %s", v, vname(v));
    printf("\n");

    printf("rejections:\n");
    test_rejections();

    static const mv_case cases[] = {
        /* name, epilogue, n, k, H, Hkv, D, theta, pos0, capacity, norms (bit 0: without the
         * prologue, bit 1: with), m set, auto only, timed (-1: no, else with the prologue or
         * not), auto may reject */
        /* the decoder's projections at decode, at every batch of 1 to 4 rows (m = 3 at k = 8192
         * fills exactly 48 KB of shared memory with its input) */
        {"qkv rope cache", QKV, 0, 3072, 32, 8, 128, 1e8, 411, 500, 3, M1234, 0, 1, 0},
        {"o proj add", ADD, 3072, 4096, 0, 0, 0, 0, 0, 0, 3, M1234, 0, 0, 0},
        {"gate|up swiglu", SWIGLU, 2 * 8192, 3072, 0, 0, 0, 0, 0, 0, 3, M1234, 0, 1, 0},
        {"down add", ADD, 3072, 8192, 0, 0, 0, 0, 0, 0, 3, M1234, 0, 0, 0},
        {"lm_head store", STORE, 131072, 3072, 0, 0, 0, 0, 0, 0, 2, 1 << 1, 1, 1, 0},
        /* awkward shapes */
        {"store 1027x520", STORE, 1027, 520, 0, 0, 0, 0, 0, 0, 3, M1234, 0, -1, 0},
        {"add 37x8", ADD, 37, 8, 0, 0, 0, 0, 0, 0, 3, M1234, 0, -1, 0},
        {"add 33x4104", ADD, 33, 4104, 0, 0, 0, 0, 0, 0, 3, M1234, 0, -1, 0},
        {"swiglu 2x515x1032", SWIGLU, 2 * 515, 1032, 0, 0, 0, 0, 0, 0, 3, M1234, 0, -1, 0},
        {"store 5x12296", STORE, 5, 12296, 0, 0, 0, 0, 0, 0, 3, M1234, 0, -1, 0},
        {"qkv D32 pos 31000", QKV, 0, 264, 3, 1, 32, 1e6, 31000, 31010, 3, M1234, 0, -1, 0},
        {"qkv D8", QKV, 0, 136, 4, 2, 8, 1e4, 5, 12, 3, M1234, 0, -1, 0},
        {"qkv D12", QKV, 0, 48, 2, 1, 12, 1e4, 9, 16, 3, M1234, 0, -1, 0},
        {"qkv D6", QKV, 0, 40, 2, 1, 6, 1e4, 0, 8, 3, M1234, 0, -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], timing);

    /* QKV_ROPE_CACHE per row: the decoder's shape, and small odd ones */
    test_qkv_rows("qkv rows decoder", 3072, 32, 8, 128, 1e8, 32000, 37);
    test_qkv_rows("qkv rows D32", 264, 3, 1, 32, 1e6, 31010, 9);
    test_qkv_rows("qkv rows D8", 136, 4, 2, 8, 1e4, 12, 5);
    test_qkv_rows("qkv rows D6", 40, 2, 1, 6, 1e4, 8, 4);

    return test_finish("test_kernels_matvec");
}
