/* The FP8 kernels (kernels/fp8.cu, kernels/fp8_matvec.cu) and the CUDA backend's FP8 GEMMs
 * against the CPU reference (common/fp8.c, the CPU backend), every output element checked.
 *
 * 1. vox_k_fp8_quantize_rows: codes and row scales bit for bit against the host encoder
 *    (vox_fp8_quantize_row on the same bf16 values): rows of normal values, all-zero rows,
 *    rows whose x / s fall exactly on E4M3 midpoints (ties, to even), rows of mostly subnormal
 *    codes with their ties, single non-zero elements, rows whose max / s rounds past 448 (the
 *    clamp), magnitudes from 1e-30 to 1e30; k from 1 to 16384, odd ones included, up to 388
 *    rows. Exact: both sides compute max|x| (order-free), one IEEE division and one RNE.
 *    Rows of k % 8 == 0 up to 32768 take the vector path (norm.cu: a row read once into
 *    registers), the others the scalar kernel; both are checked.
 * 1b. vox_k_rms_norm_fp8 (RMSNorm and quantization in one pass): its bf16 rows bit for bit
 *    vox_k_rms_norm's, its codes and scales bit for bit the host encoder's on those rows, with
 *    and without the bf16 rows written; shapes it must refuse (c % 8, c > 32768, misalignment)
 *    return 0 and write nothing.
 * 2. vox_k_fp8_scale_apply: bf16(acc * (s_x * s_w)) bit for bit (the same two float products),
 *    then stored, added to y, or through SwiGLU, each bit for bit.
 * 3. vox_k_matvec with F8 weights (w_scale set), every configuration (the launcher's pick, then
 *    each variant of the test hook), m = 1..4, with and without the RMSNorm prologue, every
 *    epilogue, awkward shapes (n = 5, 37, 1029; k = 16, 48, 144, 1040, 4112: not multiples of a
 *    register slice) and the decoder's (q|k|v 6144 x 3072 + RoPE + cache, o 3072 x 4096 + add,
 *    gate|up 16384 x 3072 + SwiGLU, down 3072 x 8192 + add). The input quantization is exact
 *    when the kernel's staged rows are known exactly: without the prologue they are x; with it,
 *    x rows are +-c (c = 1, 2, 0.5, 4 by row), so x * rsqrt(c^2 + eps) rounds to +-1 in bf16
 *    and h = +-norm_w exactly whatever the rsqrt's last bits. Then P = (sum of code products) *
 *    s_x * s_w with the codes known, and the only freedom is the kernel's float32 summation:
 *    |P_kernel - P| <= e = 1e-5 * sqrt(sum_i (q_x,i q_w,i)^2) * s_x * s_w (the rounding error
 *    of such sums is ~1e-7 of that, test_kernels_matvec.c's bound), plus 2^-22 |P| for the order
 *    of the two scale products. Each output's bound adds its bf16 roundings: half a step
 *    (2^-8 relative at most) per rounding of a value, as the epilogue rounds it (STORE one, ADD
 *    two, SwiGLU three of g, u and silu(g) u, RoPE four of the products and the sum, the sine
 *    and cosine within 1e-6). A wrong code, scale or row pairing moves an output by far more.
 * 4. The backend: be->matmul with F8 weights on the CUDA backend (input rows quantized by
 *    kernel 1, cuBLASLt's FP8 GEMM with outer-vector scales, or the scale kernel after a
 *    float32 GEMM with VOX_FP8_GEMM=epilogue; both run here) against the CPU backend's
 *    matmul on the same bf16 values: the same codes (kernel 1 is exact), so only the sums
 *    differ, plus one bf16 rounding. The tensor cores' FP8 products are exact, but their
 *    accumulator keeps about 14 bits between cuBLASLt's promotions to float32 (DeepSeek-V3's
 *    report measured it on Hopper, section 3.3.2): |delta| <= 2^-12 sum_i |a_i b_i| <=
 *    2^-12 |a| |b| (the rows' code values times their scales). That does not see a single
 *    wrong code (kernel 1's test does); it sees a wrong scale, row or layout, which moves
 *    outputs by their own size. M = 1, 3, 5, 17, 64, 388 (prefill) and the decoder's N x K.
 *    Weights whose dimensions are not multiples of 16 are refused with a message. The same
 *    with VOX_SKINNY_GEMM=1 (the few-row kernel at M = 5..64). Then be->projection with F8
 *    weights at M = 5..388 against the separate operations (test_backend_projection).
 * Timing is printed for the decoder's shapes at m = 1 (--no-timing skips it), not asserted. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fp8.h"
#include "gpu_test_util.h"
#include "kernels.h"

int vox_k_matvec_variant_count(void);
const char *vox_k_matvec_variant_name(int variant);
int vox_k_matvec_variant(int variant, const vox_k_matvec_args *a, cudaStream_t stream);

#define STEP 0.00390625 /* 2^-8: half a bf16 step, relative, at most */
static gtu_rng rng;
static int timing = 1;

static float bfr(float v) { return vox_bf16_to_f32(vox_f32_to_bf16(v)); }

/* ---- 1. quantize_rows ------------------------------------------------------------------------ */

/* Row r of a test matrix, by kind (see the header). */
static void fill_row(uint16_t *h, int64_t k, int kind) {
    static const float mids[] = {1.0625f, 1.1875f, 3.25f, 0.0029296875f, 0.0009765625f, 13.0f,
                                 104.0f, 448.0f - 16.0f, 0.0146484375f, 240.0f + 8.0f};
    float scale = powf(10.0f, gtu_uniform(&rng, -3.0f, 3.0f));
    for (int64_t i = 0; i < k; i++) {
        float v;
        switch (kind) {
        case 0: v = gtu_normal(&rng) * scale; break;
        case 1: v = 0.0f; break;
        case 2: v = mids[i % 10] * (gtu_next_u64(&rng) & 1 ? -1.0f : 1.0f); break;
        case 3: v = (float)(2 * (gtu_next_u64(&rng) % 9) + 1) * 0.0009765625f; break; /* subnormal ties */
        case 4: v = i == k / 2 ? -3.0f : 0.0f; break;
        default: v = gtu_normal(&rng) * powf(10.0f, gtu_uniform(&rng, -30.0f, 30.0f)); break;
        }
        h[i] = vox_f32_to_bf16(v);
    }
    if (kind == 2 || kind == 3) h[(k - 1) / 2] = vox_f32_to_bf16(448.0f); /* s = 1 exactly */
}

static void test_quantize(int64_t rows, int64_t k) {
    uint16_t *hx = gtu_malloc((size_t)(rows * k) * 2);
    for (int64_t r = 0; r < rows; r++) fill_row(hx + r * k, k, (int)(r % 6));
    void *dx = gtu_dev_upload(hx, (size_t)(rows * k) * 2);
    uint8_t *dq = gtu_dev_alloc((size_t)(rows * k)), *q = gtu_malloc((size_t)(rows * k));
    float *ds = gtu_dev_alloc((size_t)rows * 4), *s = gtu_malloc((size_t)rows * 4);
    vox_k_fp8_quantize_rows(dq, ds, dx, rows, k, 0);
    gtu_download(q, dq, (size_t)(rows * k));
    gtu_download(s, ds, (size_t)rows * 4);
    float *f = gtu_malloc((size_t)k * 4);
    uint8_t *want = gtu_malloc((size_t)k);
    size_t bad = 0, ties = 0, clamped = 0, sub = 0;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < k; i++) f[i] = vox_bf16_to_f32(hx[r * k + i]);
        float ws = vox_fp8_quantize_row(f, (size_t)k, want);
        if (memcmp(&ws, &s[r], 4) != 0 && bad++ < 5)
            fprintf(stderr, "  row %lld: scale %.9g, host %.9g\n", (long long)r, s[r], ws);
        for (int64_t i = 0; i < k; i++) {
            float v = f[i] / ws;
            uint8_t lo = vox_f32_to_e4m3(nextafterf(v, -INFINITY)), hi = vox_f32_to_e4m3(nextafterf(v, INFINITY));
            ties += lo != hi && fabsf(v) <= 448.0f; /* v on a midpoint: its neighbours part */
            clamped += fabsf(v) > 448.0f;
            sub += (want[i] & 0x78) == 0 && (want[i] & 7) != 0;
            if (q[r * k + i] != want[i] && bad++ < 5)
                fprintf(stderr, "  row %lld [%lld]: x %.9g / s %.9g -> 0x%02x, host 0x%02x\n",
                        (long long)r, (long long)i, f[i], ws, q[r * k + i], want[i]);
        }
    }
    char what[96];
    snprintf(what, sizeof what, "quantize_rows %lld x %lld", (long long)rows, (long long)k);
    CHECK_MSG(bad == 0, "%s: %zu codes or scales differ from the host encoder", what, bad);
    printf("  %s %-28s every code and scale exact (%zu ties, %zu clamped past 448, %zu subnormal)\n",
           bad ? "FAIL" : "ok", what, ties, clamped, sub);
    free(hx), free(q), free(s), free(f), free(want);
    gtu_dev_free(dx), gtu_dev_free(dq), gtu_dev_free(ds);
}

/* ---- 1b. rms_norm_fp8 ------------------------------------------------------------------------ */

static void test_norm_quantize(int64_t rows, int64_t c, bool write_y) {
    size_t n = (size_t)(rows * c);
    uint16_t *hx = gtu_malloc(n * 2), *hw = gtu_malloc((size_t)c * 2);
    for (int64_t r = 0; r < rows; r++) fill_row(hx + r * c, c, (int)(r % 6));
    for (int64_t i = 0; i < c; i++) hw[i] = vox_f32_to_bf16(gtu_uniform(&rng, -2.0f, 2.0f));
    void *dx = gtu_dev_upload(hx, n * 2), *dw = gtu_dev_upload(hw, (size_t)c * 2);
    void *dref = gtu_dev_alloc(n * 2), *dy = gtu_dev_alloc(n * 2);
    uint8_t *dq = gtu_dev_alloc(n), *q = gtu_malloc(n), *want = gtu_malloc((size_t)c);
    float *ds = gtu_dev_alloc((size_t)rows * 4), *s = gtu_malloc((size_t)rows * 4);
    float *f = gtu_malloc((size_t)c * 4);
    uint16_t *ref = gtu_malloc(n * 2), *y = gtu_malloc(n * 2);
    GTU_CUDA(cudaMemset(dy, 0x7f, n * 2)); /* a value the kernel never writes */
    vox_k_rms_norm(dref, dx, dw, rows, c, 1e-5f, 0);
    int taken = vox_k_rms_norm_fp8(dq, ds, write_y ? dy : NULL, dx, dw, rows, c, 1e-5f, 0);
    GTU_CUDA(cudaDeviceSynchronize());
    char what[96];
    snprintf(what, sizeof what, "rms_norm_fp8 %lld x %lld%s", (long long)rows, (long long)c,
             write_y ? " +bf16" : "");
    CHECK_MSG(taken, "%s: not taken", what);
    gtu_download(ref, dref, n * 2);
    gtu_download(y, dy, n * 2);
    gtu_download(q, dq, n);
    gtu_download(s, ds, (size_t)rows * 4);
    size_t bad = 0, bad_y = 0;
    for (size_t i = 0; i < n; i++) bad_y += write_y ? y[i] != ref[i] : y[i] != 0x7f7f;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < c; i++) f[i] = vox_bf16_to_f32(ref[r * c + i]);
        float ws = vox_fp8_quantize_row(f, (size_t)c, want);
        bad += memcmp(&ws, &s[r], 4) != 0;
        for (int64_t i = 0; i < c; i++) bad += q[r * c + i] != want[i];
    }
    CHECK_MSG(bad == 0 && bad_y == 0, "%s: %zu codes or scales, %zu bf16 values wrong", what, bad, bad_y);
    printf("  %s %-36s codes, scales and bf16 rows exact\n", bad || bad_y ? "FAIL" : "ok", what);
    free(hx), free(hw), free(q), free(want), free(s), free(f), free(ref), free(y);
    gtu_dev_free(dx), gtu_dev_free(dw), gtu_dev_free(dref), gtu_dev_free(dy), gtu_dev_free(dq),
        gtu_dev_free(ds);
}

/* Shapes the one-pass kernel must leave to the two kernels: nothing written, 0 returned. */
static void test_norm_quantize_refusals(void) {
    uint8_t *dq = gtu_dev_alloc(40000 * 2 + 64);
    float *ds = gtu_dev_alloc(64);
    uint16_t *dx = gtu_dev_alloc(40000 * 2 * 2 + 64), *dw = gtu_dev_alloc(40000 * 2 + 64);
    GTU_CUDA(cudaMemset(dx, 0, 40000 * 2 * 2 + 64));
    GTU_CUDA(cudaMemset(dq, 0x5a, 40000 * 2 + 64));
    int r1 = vox_k_rms_norm_fp8(dq, ds, NULL, dx, dw, 2, 1001, 1e-5f, 0);  /* c % 8 */
    int r2 = vox_k_rms_norm_fp8(dq, ds, NULL, dx, dw, 2, 32776, 1e-5f, 0); /* c > 32768 */
    int r3 = vox_k_rms_norm_fp8(dq, ds, NULL, dx + 1, dw, 2, 64, 1e-5f, 0); /* x unaligned */
    int r4 = vox_k_rms_norm_fp8(dq + 4, ds, NULL, dx, dw, 2, 64, 1e-5f, 0); /* q unaligned */
    uint8_t *q = gtu_malloc(40000 * 2);
    gtu_download(q, dq, 40000 * 2);
    size_t touched = 0;
    for (size_t i = 0; i < 40000 * 2; i++) touched += q[i] != 0x5a;
    CHECK_MSG(!r1 && !r2 && !r3 && !r4 && touched == 0,
              "rms_norm_fp8 refusals: returned %d %d %d %d, %zu bytes written", r1, r2, r3, r4, touched);
    printf("  %s rms_norm_fp8 refusals: c %% 8, c > 32768, unaligned x or q: 0, nothing written\n",
           !r1 && !r2 && !r3 && !r4 && touched == 0 ? "ok" : "FAIL");
    free(q);
    gtu_dev_free(dq), gtu_dev_free(ds), gtu_dev_free(dx), gtu_dev_free(dw);
}

/* ---- 2. the scales applied by the product's consumer --------------------------------------- */

/* vox_k_fp8_scale_apply(op) on acc [m, n]: P = bf16(acc * (s_x * s_w)) against the host bit for
 * bit; ADD's bf16(y + P) against the host bit for bit (both are one float32 operation and one
 * rounding); SWIGLU against P stored (STORE, checked above) and then vox_k_swiglu, bit for bit, as
 * the header promises (vox_k_swiglu itself is checked against the CPU in
 * test_kernels_elementwise). `skew` offsets y by one element: the scalar path. */
static void test_scale_apply(vox_k_fp8_consumer op, int64_t m, int64_t n, int skew) {
    static const char *names[] = {"store", "add", "swiglu"};
    const int64_t cols = op == VOX_K_FP8_SWIGLU ? n / 2 : n;
    float *acc = gtu_rand_f32(&rng, (size_t)(m * n), -300.0f, 300.0f);
    float *sx = gtu_rand_f32(&rng, (size_t)m, 1e-4f, 2.0f), *sw = gtu_rand_f32(&rng, (size_t)n, 1e-4f, 2.0f);
    float *yf;
    uint16_t *y0 = gtu_randn_bf16(&rng, (size_t)(m * cols), 30.0f, 0.0f, &yf);
    void *da = gtu_dev_upload(acc, (size_t)(m * n) * 4), *dsx = gtu_dev_upload(sx, (size_t)m * 4);
    void *dsw = gtu_dev_upload(sw, (size_t)n * 4);
    uint16_t *dbuf = gtu_dev_alloc((size_t)(m * cols + 1) * 2), *dy = dbuf + skew;
    GTU_CUDA(cudaMemcpy(dy, y0, (size_t)(m * cols) * 2, cudaMemcpyHostToDevice));
    vox_k_fp8_scale_apply(op, dy, da, dsx, dsw, m, n, 0);
    uint16_t *y = gtu_malloc((size_t)(m * cols) * 2), *want = gtu_malloc((size_t)(m * cols) * 2);
    gtu_download(y, dy, (size_t)(m * cols) * 2);
    if (op == VOX_K_FP8_SWIGLU) { /* P through the store path, then vox_k_swiglu */
        uint16_t *dp = gtu_dev_alloc((size_t)(m * n) * 2), *dw = gtu_dev_alloc((size_t)(m * cols + 1) * 2);
        vox_k_fp8_scale_apply(VOX_K_FP8_STORE, dp, da, dsx, dsw, m, n, 0);
        vox_k_swiglu(dw + skew, dp, m, cols, 0);
        gtu_download(want, dw + skew, (size_t)(m * cols) * 2);
        gtu_dev_free(dp), gtu_dev_free(dw);
    } else {
        for (int64_t i = 0; i < m * n; i++) {
            const float p = vox_bf16_to_f32(vox_f32_to_bf16(acc[i] * (sx[i / n] * sw[i % n])));
            want[i] = vox_f32_to_bf16(op == VOX_K_FP8_ADD ? yf[i] + p : p);
        }
    }
    size_t bad = 0;
    for (int64_t i = 0; i < m * cols; i++) {
        if (y[i] != want[i] && bad++ < 5)
            fprintf(stderr, "  [%lld]: %.9g, want %.9g\n", (long long)i, vox_bf16_to_f32(y[i]),
                    vox_bf16_to_f32(want[i]));
    }
    CHECK_MSG(bad == 0, "scale_apply %s %lld x %lld skew %d: %zu of %lld outputs differ", names[op],
              (long long)m, (long long)n, skew, bad, (long long)(m * cols));
    printf("  %s scale_apply %s %lld x %lld%s: every output bit for bit\n", bad ? "FAIL" : "ok",
           names[op], (long long)m, (long long)n, skew ? " (scalar path)" : "");
    free(acc), free(sx), free(sw), free(y0), free(yf), free(y), free(want);
    gtu_dev_free(da), gtu_dev_free(dsx), gtu_dev_free(dsw), gtu_dev_free(dbuf);
}

/* ---- 3. the FP8 matvec ----------------------------------------------------------------------- */

enum { STORE = VOX_K_MATVEC_STORE, ADD = VOX_K_MATVEC_ADD, SWIGLU = VOX_K_MATVEC_SWIGLU,
       QKV = VOX_K_MATVEC_QKV_ROPE_CACHE };

typedef struct {
    const char *name;
    int ep;
    int64_t n, k;
    int H, Hkv, D; /* QKV: n = (H + 2 Hkv) * D */
    int64_t pos0;
    int timed;
} mv_case;

#define M4 4
static const float row_c[M4] = {1.0f, 2.0f, 0.5f, 4.0f};

/* Random FP8 weights: each row normal values times its own magnitude, quantized by the scheme. */
static void make_weights(int64_t n, int64_t k, uint8_t *codes, float *scale) {
    float *row = gtu_malloc((size_t)k * 4);
    for (int64_t r = 0; r < n; r++) {
        float mag = powf(10.0f, gtu_uniform(&rng, -2.0f, 1.0f));
        for (int64_t i = 0; i < k; i++) row[i] = gtu_normal(&rng) * mag / sqrtf((float)k);
        scale[r] = vox_fp8_quantize_row(row, (size_t)k, codes + r * k);
    }
    free(row);
}

/* P [M4, n] and its summation bound e for the staged rows h [M4, k] (floats of bf16 values). */
static void host_products(const mv_case *c, const uint8_t *wq, const float *ws, const float *h,
                          double *P, double *e) {
    int64_t n = c->n, k = c->k;
    float *wv = gtu_malloc((size_t)k * 4), *xv = gtu_malloc((size_t)(M4 * k) * 4), sx[M4];
    uint8_t *xq = gtu_malloc((size_t)k);
    for (int mm = 0; mm < M4; mm++) {
        sx[mm] = vox_fp8_quantize_row(h + mm * k, (size_t)k, xq);
        vox_to_f32(xv + mm * k, xq, VOX_DTYPE_F8_E4M3, (size_t)k);
    }
    for (int64_t r = 0; r < n; r++) {
        vox_to_f32(wv, wq + r * k, VOX_DTYPE_F8_E4M3, (size_t)k);
        for (int mm = 0; mm < M4; mm++) {
            double s = 0, s2 = 0;
            for (int64_t i = 0; i < k; i++) {
                double t = (double)xv[mm * k + i] * wv[i];
                s += t, s2 += t * t;
            }
            double sc = (double)sx[mm] * ws[r];
            P[mm * n + r] = s * sc;
            e[mm * n + r] = 1e-5 * sqrt(s2) * sc + fabs(s * sc) * 2.4e-7;
        }
    }
    free(wv), free(xv), free(xq);
}

typedef struct {
    float *ref, *bound; /* [M4, out_w] */
    float *kref, *kbound, *vref, *vbound; /* QKV: [M4, kd] */
} mv_want;

/* The expected outputs of every row (the epilogue on P, rounded where the kernel rounds), with
 * their bounds. y0: ADD's previous y. */
static void host_outputs(const mv_case *c, const double *P, const double *e, const float *y0,
                         int64_t out_w, int64_t kd, mv_want *w) {
    int64_t n = c->n;
    for (int mm = 0; mm < M4; mm++) {
        if (c->ep == STORE || c->ep == ADD) {
            for (int64_t j = 0; j < n; j++) {
                double p = P[mm * n + j], b = e[mm * n + j] + STEP * fabs(p);
                float pv = bfr((float)p);
                if (c->ep == ADD) {
                    double sum = (double)y0[mm * n + j] + pv;
                    w->ref[mm * n + j] = bfr((float)sum);
                    b += STEP * fabs(sum);
                } else {
                    w->ref[mm * n + j] = pv;
                }
                w->bound[mm * n + j] = (float)(b * 1.001 + 1e-30);
            }
        } else if (c->ep == SWIGLU) {
            int64_t F = n / 2;
            for (int64_t j = 0; j < F; j++) {
                double g = P[mm * n + j], u = P[mm * n + F + j];
                double eg = e[mm * n + j] + STEP * fabs(g), eu = e[mm * n + F + j] + STEP * fabs(u);
                double sg = g / (1 + exp(-g));
                w->ref[mm * F + j] = (float)(sg * u);
                double b = 1.1 * eg * fabs(u) + (fabs(sg) + 1.1 * eg) * eu + 2 * STEP * fabs(sg * u) + 1e-6 * fabs(sg * u);
                w->bound[mm * F + j] = (float)(b * 1.001 + 1e-30);
            }
        } else { /* QKV: rotate-half RoPE of q and k at position pos0 + mm, v as it is */
            int D = c->D, half = D / 2;
            int64_t pos = c->pos0 + mm;
            for (int64_t hd = 0; hd < c->H + 2 * c->Hkv; hd++) {
                for (int i = 0; i < half; i++) {
                    int64_t ja = hd * D + i, jb = ja + half;
                    double a = P[mm * n + ja], b = P[mm * n + jb];
                    double ea = e[mm * n + ja] + STEP * fabs(a), eb = e[mm * n + jb] + STEP * fabs(b);
                    double o1 = a, o2 = b, bd1 = ea, bd2 = eb;
                    if (hd < c->H + c->Hkv) {
                        float inv = (float)(1.0 / pow(1e8, (double)(2 * i) / D));
                        double ang = (double)((float)pos * inv), cs = cos(ang), sn = sin(ang);
                        o1 = a * cs - b * sn, o2 = b * cs + a * sn;
                        double mag = fabs(a) + fabs(b);
                        bd1 = bd2 = ea + eb + 4 * STEP * mag + 2e-6 * mag;
                    }
                    bd1 += STEP * fabs(o1), bd2 += STEP * fabs(o2);
                    float *ref, *bnd;
                    int64_t base;
                    if (hd < c->H) ref = w->ref, bnd = w->bound, base = mm * out_w + hd * D;
                    else if (hd < c->H + c->Hkv) ref = w->kref, bnd = w->kbound, base = mm * kd + (hd - c->H) * D;
                    else ref = w->vref, bnd = w->vbound, base = mm * kd + (hd - c->H - c->Hkv) * D;
                    ref[base + i] = (float)o1, ref[base + i + half] = (float)o2;
                    bnd[base + i] = (float)(bd1 * 1.001), bnd[base + i + half] = (float)(bd2 * 1.001);
                }
            }
        }
    }
}

static void run_matvec_case(const mv_case *c) {
    int64_t n = c->n, k = c->k;
    int64_t out_w = c->ep == SWIGLU ? n / 2 : c->ep == QKV ? (int64_t)c->H * c->D : n;
    int64_t kd = c->ep == QKV ? (int64_t)c->Hkv * c->D : 0, cap = c->pos0 + M4;
    uint8_t *wq = gtu_malloc((size_t)(n * k));
    float *ws = gtu_malloc((size_t)n * 4);
    make_weights(n, k, wq, ws);
    void *d_w = gtu_dev_upload(wq, (size_t)(n * k)), *d_ws = gtu_dev_upload(ws, (size_t)n * 4);
    float *nw_f;
    uint16_t *nw = gtu_rand_bf16(&rng, (size_t)k, 0.5f, 1.5f, &nw_f);
    for (int64_t i = 0; i < k; i += 3) nw[i] ^= 0x8000, nw_f[i] = -nw_f[i]; /* some negative */
    void *d_nw = gtu_dev_upload(nw, (size_t)k * 2);
    float *y0_f;
    uint16_t *y0 = gtu_randn_bf16(&rng, (size_t)(M4 * out_w), 1.0f, 0.0f, &y0_f);
    void *d_y = gtu_dev_alloc((size_t)(M4 * out_w) * 2), *d_x = gtu_dev_alloc((size_t)(M4 * k) * 2);
    void *d_kc = kd ? gtu_dev_alloc((size_t)(cap * kd) * 2) : NULL, *d_vc = kd ? gtu_dev_alloc((size_t)(cap * kd) * 2) : NULL;
    int64_t *d_pos = gtu_dev_upload(&c->pos0, sizeof c->pos0);
    double *P = gtu_malloc((size_t)(M4 * n) * 8), *e = gtu_malloc((size_t)(M4 * n) * 8);
    mv_want w = {gtu_malloc((size_t)(M4 * out_w) * 4), gtu_malloc((size_t)(M4 * out_w) * 4),
                 kd ? gtu_malloc((size_t)(M4 * kd) * 4) : NULL, kd ? gtu_malloc((size_t)(M4 * kd) * 4) : NULL,
                 kd ? gtu_malloc((size_t)(M4 * kd) * 4) : NULL, kd ? gtu_malloc((size_t)(M4 * kd) * 4) : NULL};
    uint16_t *hx = gtu_malloc((size_t)(M4 * k) * 2);
    float *h = gtu_malloc((size_t)(M4 * k) * 4);
    for (int norm = 0; norm < 2; norm++) {
        /* the staged rows h: x itself, or +-norm_w (x = +-c, see the header) */
        for (int mm = 0; mm < M4; mm++)
            for (int64_t i = 0; i < k; i++) {
                bool neg = gtu_next_u64(&rng) & 1;
                float v = norm ? (neg ? -row_c[mm] : row_c[mm]) : gtu_normal(&rng) * row_c[mm];
                hx[mm * k + i] = vox_f32_to_bf16(v);
                h[mm * k + i] = norm ? (neg ? -nw_f[i] : nw_f[i]) : vox_bf16_to_f32(hx[mm * k + i]);
            }
        GTU_CUDA(cudaMemcpy(d_x, hx, (size_t)(M4 * k) * 2, cudaMemcpyHostToDevice));
        host_products(c, wq, ws, h, P, e);
        host_outputs(c, P, e, y0_f, out_w, kd, &w);
        for (int variant = -1; variant < vox_k_matvec_variant_count(); variant++) {
            for (int m = 1; m <= M4; m++) {
                GTU_CUDA(cudaMemcpy(d_y, y0, (size_t)(M4 * out_w) * 2, cudaMemcpyHostToDevice));
                vox_k_matvec_args a;
                memset(&a, 0, sizeof a);
                a.w = d_w, a.w_scale = d_ws, a.x = d_x, a.norm_w = norm ? d_nw : NULL;
                a.n = n, a.k = k, a.m = m, a.eps = 1e-5f, a.epilogue = (vox_k_matvec_epilogue)c->ep;
                a.y = d_y, a.k_cache = d_kc, a.v_cache = d_vc, a.n_heads = c->H;
                a.n_kv_heads = c->Hkv, a.head_dim = c->D, a.pos_dev = d_pos, a.theta = 1e8;
                int ran = vox_k_matvec_variant(variant, &a, 0);
                char what[160];
                snprintf(what, sizeof what, "%s %s m=%d%s", c->name, variant < 0 ? "auto" : vox_k_matvec_variant_name(variant), m, norm ? " +norm" : "");
                CHECK_MSG(ran, "%s: not taken", what);
                if (!ran) continue;
                float *got = gtu_download_bf16_as_f32(d_y, (size_t)(m * out_w));
                gtu_compare_bound(what, got, w.ref, w.bound, (size_t)(m * out_w));
                gtu_check_nonzero(what, got, (size_t)(m * out_w));
                free(got);
                if (kd) {
                    char kw[180];
                    float *kg = gtu_download_bf16_as_f32((char *)d_kc + (size_t)(c->pos0 * kd) * 2, (size_t)(m * kd));
                    float *vg = gtu_download_bf16_as_f32((char *)d_vc + (size_t)(c->pos0 * kd) * 2, (size_t)(m * kd));
                    snprintf(kw, sizeof kw, "%s k cache", what);
                    gtu_compare_bound(kw, kg, w.kref, w.kbound, (size_t)(m * kd));
                    snprintf(kw, sizeof kw, "%s v cache", what);
                    gtu_compare_bound(kw, vg, w.vref, w.vbound, (size_t)(m * kd));
                    free(kg), free(vg);
                }
            }
        }
    }
    if (timing && c->timed) {
        vox_k_matvec_args a;
        memset(&a, 0, sizeof a);
        a.w = d_w, a.w_scale = d_ws, a.x = d_x, a.n = n, a.k = k, a.m = 1, a.eps = 1e-5f;
        a.epilogue = (vox_k_matvec_epilogue)c->ep, a.y = d_y, a.k_cache = d_kc, a.v_cache = d_vc;
        a.n_heads = c->H, a.n_kv_heads = c->Hkv, a.head_dim = c->D, a.pos_dev = d_pos, a.theta = 1e8;
        double us;
        GTU_TIME_US(us, 50, vox_k_matvec(&a, 0));
        printf("  time %s m=1: %.1f us, %.0f GB/s of weights (L2-warm: one copy)\n", c->name, us,
               (double)(n * k) / us * 1e-3);
    }
    free(wq), free(ws), free(nw), free(nw_f), free(y0), free(y0_f), free(P), free(e), free(hx), free(h);
    free(w.ref), free(w.bound), free(w.kref), free(w.kbound), free(w.vref), free(w.vbound);
    gtu_dev_free(d_w), gtu_dev_free(d_ws), gtu_dev_free(d_nw), gtu_dev_free(d_y), gtu_dev_free(d_x);
    if (d_kc) gtu_dev_free(d_kc), gtu_dev_free(d_vc);
    gtu_dev_free(d_pos);
}

/* ---- 4. the backend's FP8 GEMMs ---------------------------------------------------------------- */

/* be->projection with F8 weights at prefill / batched-decode row counts (the RMSNorm quantized
 * in the same pass, the GEMM, then its neighbour) against the separate operations on the same
 * GPU (be->rms_norm, be->matmul, be->add / be->swiglu), whose parts are checked above. The
 * codes are the same (1b), the GEMM the same call, so STORE and SWIGLU must agree bit for bit;
 * ADD may add the product inside the GEMM: bf16(y + P) against bf16(y + bf16(P)). The two
 * sums before rounding differ by at most half an ulp of P, and each side is then within half an
 * ulp of its own sum, so |got - ref| <= 2^-8 (|got| + |ref| + |P|) (an ulp of v is at most
 * 2^-7 |v|): one rounding of the result can land an ulp away (measured on the H200 with the
 * few-row kernel: up to one ulp, e.g. 8.0625 against 8). */
static void test_backend_projection(vox_backend *gpu, const char *label) {
    /* 5..128 rows: plain FP8 products scaled by the consumer; 129 and more: outer-vector scales
     * (cuda.c's FP8_PLAIN_ROWS) */
    static const int64_t ms[] = {5, 17, 128, 129, 388};
    static const struct { vox_projection_out out; int64_t n, k; bool norm; const char *name; } cs[] = {
        {VOX_PROJ_STORE, 6144, 3072, true, "store+norm"},
        {VOX_PROJ_ADD, 3072, 4096, false, "add"},
        {VOX_PROJ_SWIGLU, 2 * 1040, 3072, true, "swiglu+norm"},
        {VOX_PROJ_ADD, 272, 8192, false, "add"},
    };
    vox_error err = {0};
    for (size_t ci = 0; ci < sizeof cs / sizeof *cs; ci++)
        for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++) {
            const int64_t M = ms[mi], N = cs[ci].n, K = cs[ci].k;
            const int64_t ycols = cs[ci].out == VOX_PROJ_SWIGLU ? N / 2 : N;
            uint8_t *wq = gtu_malloc((size_t)(N * K));
            float *ws = gtu_malloc((size_t)N * 4), *nwf = gtu_malloc((size_t)K * 4);
            make_weights(N, K, wq, ws);
            int64_t shape[2] = {N, K};
            vox_tensor wg, nw, x, h, tmp, prod, y_f, y_s;
            CHECK_MSG(gpu->weight(gpu, &wg, wq, VOX_DTYPE_F8_E4M3, 2, shape, false, ws, &err) == VOX_OK, "%s", err.msg);
            for (int64_t i = 0; i < K; i++) nwf[i] = bfr(gtu_uniform(&rng, 0.5f, 2.0f));
            float *xf, *yf;
            uint16_t *xb = gtu_randn_bf16(&rng, (size_t)(M * K), 1.0f, 0.0f, &xf);
            uint16_t *yb = gtu_randn_bf16(&rng, (size_t)(M * ycols), 4.0f, 0.0f, &yf);
            CHECK(vox_tensor_new2(gpu, &nw, VOX_DTYPE_BF16, 1, K, &err) == VOX_OK);
            vox_tensor *ts[] = {&x, &h, &tmp, &prod, &y_f, &y_s};
            const int64_t cols[] = {K, K, N, N, ycols, ycols};
            for (int i = 0; i < 6; i++) CHECK(vox_tensor_new2(gpu, ts[i], VOX_DTYPE_BF16, M, cols[i], &err) == VOX_OK);
            gpu->upload_f32(gpu, &nw, nwf, (size_t)K);
            gpu->upload_f32(gpu, &x, xf, (size_t)(M * K));
            gpu->upload_f32(gpu, &y_f, yf, (size_t)(M * ycols));
            gpu->upload_f32(gpu, &y_s, yf, (size_t)(M * ycols));
            vox_projection p = {.y = &y_f, .x = &x, .w = &wg, .norm_w = cs[ci].norm ? &nw : NULL,
                                .eps = 1e-5f, .out = cs[ci].out, .h = &h, .tmp = &tmp};
            char what[128];
            snprintf(what, sizeof what, "projection %s %s M=%lld N=%lld K=%lld", label, cs[ci].name,
                     (long long)M, (long long)N, (long long)K);
            bool taken = gpu->projection(gpu, &p);
            CHECK_MSG(taken, "%s: not taken", what);
            const vox_tensor *in = &x;
            if (cs[ci].norm) gpu->rms_norm(gpu, &h, &x, &nw, 1e-5f), in = &h;
            gpu->matmul(gpu, cs[ci].out == VOX_PROJ_STORE ? &y_s : &prod, in, &wg, NULL);
            if (cs[ci].out == VOX_PROJ_ADD) gpu->add(gpu, &y_s, &y_s, &prod);
            if (cs[ci].out == VOX_PROJ_SWIGLU) gpu->swiglu(gpu, &y_s, &prod);
            float *got = gtu_malloc((size_t)(M * ycols) * 4), *ref = gtu_malloc((size_t)(M * ycols) * 4);
            float *pf = gtu_malloc((size_t)(M * N) * 4), *bound = gtu_malloc((size_t)(M * ycols) * 4);
            CHECK_MSG(gpu->download_f32(gpu, got, &y_f, (size_t)(M * ycols), &err) == VOX_OK, "%s", err.msg);
            CHECK_MSG(gpu->download_f32(gpu, ref, &y_s, (size_t)(M * ycols), &err) == VOX_OK, "%s", err.msg);
            CHECK_MSG(gpu->download_f32(gpu, pf, &prod, (size_t)(M * N), &err) == VOX_OK, "%s", err.msg);
            for (int64_t i = 0; i < M * ycols; i++)
                bound[i] = cs[ci].out == VOX_PROJ_ADD
                               ? (float)(STEP * (fabs(got[i]) + fabs(ref[i]) + fabs(pf[i])))
                               : 0.0f;
            gtu_compare_bound(what, got, ref, bound, (size_t)(M * ycols));
            gtu_check_nonzero(what, got, (size_t)(M * ycols));
            free(wq), free(ws), free(nwf), free(xb), free(xf), free(yb), free(yf);
            free(got), free(ref), free(pf), free(bound);
            for (int i = 0; i < 6; i++) vox_tensor_free(gpu, ts[i]);
            vox_tensor_free(gpu, &nw);
            gpu->free_weight(gpu, &wg);
        }
}

static void test_backend(const char *mode, bool skinny) {
    if (mode) setenv("VOX_FP8_GEMM", mode, 1);
    else unsetenv("VOX_FP8_GEMM");
    if (skinny) setenv("VOX_SKINNY_GEMM", "1", 1);
    else unsetenv("VOX_SKINNY_GEMM");
    vox_backend *cpu = gtu_cpu_backend(), *gpu = NULL;
    vox_error err = {0};
    CHECK_MSG(vox_backend_create("cuda:0", &gpu, &err) == VOX_OK, "%s", err.msg);
    if (!gpu) return;
    const char *label = mode ? "epilogue kernel" : skinny ? "few-row kernel" : "cuBLASLt's choice";
    static const int64_t shapes[][3] = {{1, 6144, 3072}, {3, 48, 32}, {5, 3072, 4096}, {17, 16384, 3072},
                                        {33, 272, 144}, {64, 3072, 8192}, {388, 6144, 3072}};
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
        uint8_t *wq = gtu_malloc((size_t)(N * K));
        float *ws = gtu_malloc((size_t)N * 4);
        make_weights(N, K, wq, ws);
        int64_t shape[2] = {N, K};
        vox_tensor wc, wg;
        CHECK(cpu->weight(cpu, &wc, wq, VOX_DTYPE_F8_E4M3, 2, shape, false, ws, &err) == VOX_OK);
        CHECK_MSG(gpu->weight(gpu, &wg, wq, VOX_DTYPE_F8_E4M3, 2, shape, false, ws, &err) == VOX_OK, "%s", err.msg);
        float *xf;
        uint16_t *xb = gtu_randn_bf16(&rng, (size_t)(M * K), 1.0f, 0.0f, &xf);
        vox_tensor xc = gtu_cpu_tensor(xf, VOX_DTYPE_F32, M, K), xg, yg;
        float *yc_f = gtu_malloc((size_t)(M * N) * 4), *yg_f = gtu_malloc((size_t)(M * N) * 4);
        vox_tensor yc = gtu_cpu_tensor(yc_f, VOX_DTYPE_F32, M, N);
        CHECK(vox_tensor_new2(gpu, &xg, VOX_DTYPE_BF16, M, K, &err) == VOX_OK);
        CHECK(vox_tensor_new2(gpu, &yg, VOX_DTYPE_BF16, M, N, &err) == VOX_OK);
        gpu->upload_f32(gpu, &xg, xf, (size_t)(M * K)); /* bf16 values: exact */
        cpu->matmul(cpu, &yc, &xc, &wc, NULL);
        gpu->matmul(gpu, &yg, &xg, &wg, NULL);
        CHECK_MSG(gpu->download_f32(gpu, yg_f, &yg, (size_t)(M * N), &err) == VOX_OK, "%s", err.msg);
        /* the accumulation bound from norms: sum |a_i b_i| <= |a| |b| (codes' values times scales) */
        float *bound = gtu_malloc((size_t)(M * N) * 4), *v = gtu_malloc((size_t)K * 4);
        uint8_t *q = gtu_malloc((size_t)K);
        double *wn = gtu_malloc((size_t)N * 8);
        for (int64_t r = 0; r < N; r++) {
            vox_to_f32(v, wq + r * K, VOX_DTYPE_F8_E4M3, (size_t)K);
            double s2 = 0;
            for (int64_t i = 0; i < K; i++) s2 += (double)v[i] * v[i];
            wn[r] = sqrt(s2) * ws[r];
        }
        for (int64_t mm = 0; mm < M; mm++) {
            float sx = vox_fp8_quantize_row(xf + mm * K, (size_t)K, q);
            vox_to_f32(v, q, VOX_DTYPE_F8_E4M3, (size_t)K);
            double s2 = 0;
            for (int64_t i = 0; i < K; i++) s2 += (double)v[i] * v[i];
            for (int64_t r = 0; r < N; r++)
                bound[mm * N + r] = (float)(0.000244140625 * sqrt(s2) * sx * wn[r] + (STEP + 5e-7) * fabs(yc_f[mm * N + r]));
        }
        char what[128];
        snprintf(what, sizeof what, "matmul %s M=%lld N=%lld K=%lld",
                 mode ? "epilogue" : skinny ? "skinny" : "auto", (long long)M, (long long)N, (long long)K);
        gtu_compare_bound(what, yg_f, yc_f, bound, (size_t)(M * N));
        gtu_check_nonzero(what, yg_f, (size_t)(M * N));
        free(wq), free(ws), free(xb), free(xf), free(yc_f), free(yg_f), free(bound), free(v), free(q), free(wn);
        vox_tensor_free(gpu, &xg), vox_tensor_free(gpu, &yg);
        gpu->free_weight(gpu, &wg), cpu->free_weight(cpu, &wc);
    }
    /* dimensions cuBLASLt's FP8 GEMM cannot take are refused at load */
    uint8_t codes[24 * 32] = {0};
    float sc[24];
    for (int i = 0; i < 24; i++) sc[i] = 1.0f;
    int64_t bad_shape[2] = {24, 32};
    vox_tensor wb;
    vox_status st = gpu->weight(gpu, &wb, codes, VOX_DTYPE_F8_E4M3, 2, bad_shape, false, sc, &err);
    CHECK_MSG(st == VOX_ERR_UNSUPPORTED && strstr(err.msg, "multiples of 16"), "24 x 32 FP8 weights: %d '%s'", st, err.msg);
    if (st == VOX_OK) gpu->free_weight(gpu, &wb);
    test_backend_projection(gpu, mode ? "epilogue" : skinny ? "skinny" : "auto");
    CHECK_MSG(gpu->sync(gpu, &err) == VOX_OK, "%s", err.msg);
    printf("  backend (%s): done\n", label);
    vox_backend_destroy(gpu);
    vox_backend_destroy(cpu);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--no-timing") == 0) timing = 0;
    gtu_require_device();
    int dev = 0, major = 0, minor = 0;
    GTU_CUDA(cudaGetDevice(&dev));
    GTU_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    GTU_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    rng = gtu_rng_seed(0xf8f8f8);

    printf("1. activation quantization (codes and scales against the host encoder)\n");
    static const int64_t qs[][2] = {{1, 1},    {3, 7},     {6, 16},    {4, 33},   {5, 24},
                                    {12, 1000}, {7, 2056},  {6, 3072},  {3, 4096}, {6, 8192},
                                    {2, 16384}, {1, 32768}, {2, 32776}, {388, 3072}};
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) test_quantize(qs[i][0], qs[i][1]);

    printf("1b. RMSNorm and quantization in one pass (against vox_k_rms_norm and the host encoder)\n");
    static const int64_t ns[][2] = {{1, 3072}, {5, 3072}, {64, 3072}, {7, 4096}, {3, 2056},
                                    {2, 24},   {17, 8192}, {388, 3072}, {1, 32768}};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        test_norm_quantize(ns[i][0], ns[i][1], i % 2 == 0), test_norm_quantize(ns[i][0], ns[i][1], i % 2 != 0);
    test_norm_quantize_refusals();

    printf("2. scales after a float32 GEMM, applied by the product's consumer\n");
    static const int64_t sa[][2] = {{1, 16}, {3, 37 * 2}, {5, 3072}, {128, 6144}, {129, 16384}, {388, 6144}};
    for (int op = VOX_K_FP8_STORE; op <= VOX_K_FP8_SWIGLU; op++)
        for (size_t i = 0; i < sizeof sa / sizeof *sa; i++)
            test_scale_apply((vox_k_fp8_consumer)op, sa[i][0], sa[i][1], i == 1);

    printf("3. FP8 decode projections (vox_k_matvec with w_scale)\n");
    const mv_case cases[] = {
        {"store n5 k16", STORE, 5, 16, 0, 0, 0, 0, 0},
        {"store n37 k48", STORE, 37, 48, 0, 0, 0, 0, 0},
        {"add n1029 k4112", ADD, 1029, 4112, 0, 0, 0, 0, 0},
        {"swiglu n70 k1040", SWIGLU, 70, 1040, 0, 0, 0, 0, 0},
        {"qkv H2 Hkv1 D8 k144", QKV, 32, 144, 2, 1, 8, 31000, 0},
        {"qkv 6144x3072", QKV, 6144, 3072, 32, 8, 128, 377, 1},
        {"o 3072x4096", ADD, 3072, 4096, 0, 0, 0, 0, 1},
        {"gate_up 16384x3072", SWIGLU, 16384, 3072, 0, 0, 0, 0, 1},
        {"down 3072x8192", ADD, 3072, 8192, 0, 0, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_matvec_case(&cases[i]);

    printf("4. the CUDA backend's FP8 matmul against the CPU backend's\n");
    if (major * 10 + minor < 89) {
        printf("  compute capability %d.%d: FP8 weights must be refused\n", major, minor);
        vox_backend *gpu = NULL;
        vox_error err = {0};
        CHECK(vox_backend_create("cuda:0", &gpu, &err) == VOX_OK);
        uint8_t codes[16 * 16] = {0};
        float sc[16] = {1};
        int64_t shape[2] = {16, 16};
        vox_tensor w;
        CHECK_MSG(gpu->weight(gpu, &w, codes, VOX_DTYPE_F8_E4M3, 2, shape, false, sc, &err) ==
                      VOX_ERR_UNSUPPORTED && strstr(err.msg, "compute capability"), "%s", err.msg);
        vox_backend_destroy(gpu);
    } else {
        test_backend(NULL, false);
        test_backend("epilogue", false);
        test_backend(NULL, true);
    }
    return test_finish("kernels_fp8");
}
