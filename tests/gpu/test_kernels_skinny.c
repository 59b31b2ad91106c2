/* The GEMM of a few rows (kernels/skinny_gemm.cu) against a host reference.
 *
 * y [m, n] = x [m, k] @ w [n, k]^T (STORE) or y + that (ADD, one rounding), m = 1..64, bf16 x and
 * w, or FP8 (issue 10's scheme): E4M3 codes of x and w with row scales s_x, s_w, the product
 * being the sum of code products times s_x * s_w.
 *
 * 1. Fragment layout and stream-K fix-up, bit for bit. bf16: x and w hold small integers
 *    (|v| <= 3) and k <= 2048, so every partial sum is an integer below 2^24 and exact in fp32
 *    whatever the order, the tensor cores' rounding, or how a tile is cut between blocks: the
 *    kernel must return bf16(exact) (ADD: bf16(y + exact)) bit for bit. FP8: codes of -1, 0
 *    and 1 (a chunk's sum, at most 256 in size, is exact in any accumulator the tensor cores
 *    keep) and power-of-two scales (their products are exact), so bf16(sum * s_x * s_w) (+ y)
 *    is exact too. Awkward shapes: m not a multiple of 8 or 16, n and k not multiples of a tile
 *    (128) or chunk, one unit in all, more blocks' worth of tiles than chunks, a tile cut into
 *    many pieces (few tiles, long k).
 * 2. Random values at the decoder's shapes (q|k|v 6144 x 3072, o 3072 x 4096, gate|up
 *    16384 x 3072, down 3072 x 8192) and awkward ones: w N(0,1)/sqrt(k), x N(0,1) per row times
 *    1, 3, 0.25 or 7, y N(0,1) for ADD; FP8: both quantized row by row by the host's encoder
 *    (common/fp8.h). Reference: the exact sum P in double (FP8: of the codes' values, times
 *    s_x * s_w), then the rounding bf16(P) or bf16(y + P). Tolerance: the kernel's sum differs
 *    from P by at most e, and the output must lie in [round(P - e), round(P + e)] (rounding is
 *    monotone): the bound per element is the distance from the reference to the farther end.
 *    - bf16: e = (k / 32 + 48) * 2^-23 * sum_i |x_i w_i|: the standard bound gamma_n * sum
 *      |terms| for a chain of n = k / 32 + 48 fp32 additions (a warp's k16 steps over half the
 *      columns, the 16-term sum inside an mma, the two halves and at most ~20 partials of a cut
 *      tile), 2^-23 (not 2^-24) per addition since the tensor cores may truncate.
 *    - FP8: the same chain, plus 2^-12 * sum_i |a_i b_i| for the tensor cores' FP8 accumulator
 *      within a chunk (about 14 bits, as test_kernels_fp8.c bounds cuBLASLt's FP8 GEMMs from
 *      DeepSeek-V3's measurement), plus 2^-22 |P| for the scale products; all in the scaled
 *      values. A wrong code, scale, row or layout moves an output by its own size.
 *    For these inputs e is a fraction of a bf16 step, so most outputs have one admissible value.
 * Every case runs through the default entry and through each configuration (vox_k_skinny_gemm_
 * variant), all with one workspace, as the backend has, over shapes of growing and shrinking n.
 * 3. Every output buffer starts as NaN (ADD: the old y) with guard words behind it; the guard
 *    must keep its bits. Results are the same bits on repeated runs (workspace reuse: the
 *    tickets must be back to zero), and the kernel refuses what it does not take (m = 0 or 65,
 *    n not a multiple of 8, rows not whole 16-byte vectors, unaligned x, scales for one side
 *    only, a workspace too small), launching nothing.
 * 4. Timing (--no-timing skips it): each configuration at the decoder's shapes at m = 8, 16, 32,
 *    64 with the weights out of L2 (several copies in rotation), as TB/s of weights read, bf16
 *    and FP8; printed, not asserted. tests/gpu/time_gemm_algos times cuBLASLt at the same
 *    shapes (--fp8 for its FP8 GEMMs).
 * FP8 cases run where the device has FP8 tensor cores (compute capability 8.9+), and are
 * checked to be refused elsewhere. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fp8.h"
#include "gpu_test_util.h"
#include "kernels.h"

#define GUARD 64 /* bf16 words behind y */

static void *g_ws;
static size_t g_ws_bytes;
static int g_fp8; /* the device has FP8 tensor cores */

/* One workspace for every call, as the backend has: a call must find it as the last left it. */
static void ensure_workspace(void) {
    if (g_ws) return;
    g_ws_bytes = vox_k_skinny_gemm_workspace_bytes();
    g_ws = gtu_dev_alloc(g_ws_bytes);
    GTU_CUDA(cudaMemset(g_ws, 0, g_ws_bytes));
}

/* A case on the host: x and w as bf16 words or E4M3 codes (fp8, with their row scales). */
typedef struct {
    int fp8, m, accumulate;
    int64_t n, k;
    const void *x, *w;
    const float *sx, *sw;
    const uint16_t *y0; /* ADD: the old y */
} gemm_case;

static size_t esize(const gemm_case *c) { return c->fp8 ? 1 : 2; }

/* The name of configuration v (-1: the default entry). */
static const char *variant_name(int v) { return v < 0 ? "default" : vox_k_skinny_gemm_variant_name(v); }

/* Runs the case through configuration v; returns y (m*n words, malloc'd) after checking that the
 * kernel took the case and left the guard behind y alone. `what` names the test. */
static uint16_t *run(const char *what, int v, const gemm_case *c) {
    const size_t ny = (size_t)c->m * (size_t)c->n;
    uint16_t *hy = (uint16_t *)gtu_malloc((ny + GUARD) * 2);
    for (size_t i = 0; i < ny + GUARD; i++) hy[i] = 0x7fc1; /* NaN */
    if (c->accumulate) memcpy(hy, c->y0, ny * 2);
    void *dx = gtu_dev_upload(c->x, (size_t)c->m * (size_t)c->k * esize(c));
    void *dw = gtu_dev_upload(c->w, (size_t)c->n * (size_t)c->k * esize(c));
    void *dy = gtu_dev_upload(hy, (ny + GUARD) * 2);
    void *dsx = c->fp8 ? gtu_dev_upload(c->sx, (size_t)c->m * 4) : NULL;
    void *dsw = c->fp8 ? gtu_dev_upload(c->sw, (size_t)c->n * 4) : NULL;
    ensure_workspace();
    vox_k_skinny_args a = {.y = dy, .x = dx, .w = dw, .x_scale = dsx, .w_scale = dsw, .m = c->m,
                           .n = c->n, .k = c->k, .accumulate = c->accumulate,
                           .workspace = g_ws, .workspace_bytes = g_ws_bytes};
    const int launched = v < 0 ? vox_k_skinny_gemm(&a, 0) : vox_k_skinny_gemm_variant(v, &a, 0);
    CHECK_MSG(launched, "%s m=%d n=%lld k=%lld [%s]: not taken", what, c->m, (long long)c->n,
              (long long)c->k, variant_name(v));
    uint16_t *out = (uint16_t *)gtu_malloc((ny + GUARD) * 2);
    gtu_download(out, dy, (ny + GUARD) * 2);
    int guard_ok = 1;
    for (size_t i = ny; i < ny + GUARD; i++) guard_ok &= out[i] == 0x7fc1;
    CHECK_MSG(guard_ok, "%s m=%d n=%lld k=%lld [%s]: the guard behind y was written", what, c->m,
              (long long)c->n, (long long)c->k, variant_name(v));
    gtu_dev_free(dx), gtu_dev_free(dw), gtu_dev_free(dy);
    if (dsx) gtu_dev_free(dsx), gtu_dev_free(dsw);
    free(hy);
    return out;
}

/* Element i of x or w as a float (a bf16 value, or an E4M3 code's value). */
static float elem(const gemm_case *c, const void *p, size_t i) {
    return c->fp8 ? vox_e4m3_to_f32(((const uint8_t *)p)[i]) : vox_bf16_to_f32(((const uint16_t *)p)[i]);
}

/* ---- 1. small integers: bit for bit ---- */
static void test_exact(int fp8, int m, int64_t n, int64_t k, int accumulate, gtu_rng *r) {
    const size_t nx = (size_t)m * (size_t)k, nw = (size_t)n * (size_t)k, ny = (size_t)m * (size_t)n;
    const int span = fp8 ? 3 : 7; /* values -1..1 or -3..3 */
    void *x = gtu_malloc(nx * 2), *w = gtu_malloc(nw * 2);
    uint16_t *y0 = (uint16_t *)gtu_malloc(ny * 2);
    float *sx = (float *)gtu_malloc((size_t)m * 4), *sw = (float *)gtu_malloc((size_t)n * 4);
    for (size_t i = 0; i < nx + nw; i++) {
        const float v = (float)((int)(gtu_next_u64(r) % span) - span / 2);
        void *dst = i < nx ? x : w;
        const size_t at = i < nx ? i : i - nx;
        if (fp8) ((uint8_t *)dst)[at] = vox_f32_to_e4m3(v);
        else ((uint16_t *)dst)[at] = vox_f32_to_bf16(v);
    }
    for (size_t i = 0; i < ny; i++) y0[i] = vox_f32_to_bf16((float)((int)(gtu_next_u64(r) % 201) - 100));
    for (int mm = 0; mm < m; mm++) sx[mm] = ldexpf(1.0f, mm % 5 - 2);
    for (int64_t j = 0; j < n; j++) sw[j] = ldexpf(1.0f, (int)(j % 3) - 1);
    const gemm_case c = {fp8, m, accumulate, n, k, x, w, sx, sw, y0};
    /* the exact sums, once */
    uint16_t *want = (uint16_t *)gtu_malloc(ny * 2);
    for (int mm = 0; mm < m; mm++)
        for (int64_t j = 0; j < n; j++) {
            int64_t sum = 0;
            for (int64_t i = 0; i < k; i++)
                sum += (int64_t)elem(&c, x, (size_t)mm * k + i) * (int64_t)elem(&c, w, (size_t)j * k + i);
            float v = (float)sum;
            if (fp8) v *= sx[mm] * sw[j];
            if (accumulate) v += vox_bf16_to_f32(y0[(size_t)mm * n + j]);
            want[(size_t)mm * n + j] = vox_f32_to_bf16(v);
        }
    const char *kind = fp8 ? "fp8" : "bf16";
    for (int v = -1; v < vox_k_skinny_gemm_variant_count(); v++) {
        uint16_t *y = run("exact", v, &c);
        size_t bad = 0;
        for (size_t i = 0; i < ny; i++)
            if (y[i] != want[i]) {
                if (bad < 5)
                    fprintf(stderr, "  exact %s m=%d n=%lld k=%lld %s [%s]: y[%zu][%zu] = %g, want %g\n",
                            kind, m, (long long)n, (long long)k, accumulate ? "ADD" : "STORE",
                            variant_name(v), i / (size_t)n, i % (size_t)n, vox_bf16_to_f32(y[i]),
                            vox_bf16_to_f32(want[i]));
                bad++;
            }
        CHECK_MSG(bad == 0, "exact %s m=%d n=%lld k=%lld %s [%s]: %zu of %zu outputs differ", kind,
                  m, (long long)n, (long long)k, accumulate ? "ADD" : "STORE", variant_name(v), bad, ny);
        if (!bad)
            printf("  ok exact %-4s m=%-3d n=%-6lld k=%-5lld %-5s [%s] bit for bit (%zu outputs)\n",
                   kind, m, (long long)n, (long long)k, accumulate ? "ADD" : "STORE",
                   variant_name(v), ny);
        free(y);
    }
    free(x), free(w), free(y0), free(sx), free(sw), free(want);
}

/* ---- 2. random values: the rounding interval ---- */
static void test_random(int fp8, int m, int64_t n, int64_t k, int accumulate, gtu_rng *r) {
    const size_t nx = (size_t)m * (size_t)k, nw = (size_t)n * (size_t)k, ny = (size_t)m * (size_t)n;
    float *xf, *wf, *yf;
    uint16_t *wb = gtu_randn_bf16(r, nw, 1.0f / sqrtf((float)k), 0.0f, &wf);
    uint16_t *xb = gtu_randn_bf16(r, nx, 1.0f, 0.0f, &xf);
    static const float row_scale[4] = {1.0f, 3.0f, 0.25f, 7.0f};
    for (int mm = 0; mm < m; mm++)
        for (int64_t i = 0; i < k; i++) {
            const size_t at = (size_t)mm * k + i;
            xb[at] = vox_f32_to_bf16(xf[at] * row_scale[mm % 4]);
            xf[at] = vox_bf16_to_f32(xb[at]);
        }
    uint16_t *y0 = gtu_randn_bf16(r, ny, 1.0f, 0.0f, &yf);
    float *sx = (float *)gtu_malloc((size_t)m * 4), *sw = (float *)gtu_malloc((size_t)n * 4);
    uint8_t *xq = NULL, *wq = NULL;
    if (fp8) { /* the scheme's codes, and the values they stand for (without the scales) */
        xq = (uint8_t *)gtu_malloc(nx), wq = (uint8_t *)gtu_malloc(nw);
        for (int mm = 0; mm < m; mm++) sx[mm] = vox_fp8_quantize_row(xf + (size_t)mm * k, (size_t)k, xq + (size_t)mm * k);
        for (int64_t j = 0; j < n; j++) sw[j] = vox_fp8_quantize_row(wf + (size_t)j * k, (size_t)k, wq + (size_t)j * k);
        for (size_t i = 0; i < nx; i++) xf[i] = vox_e4m3_to_f32(xq[i]);
        for (size_t i = 0; i < nw; i++) wf[i] = vox_e4m3_to_f32(wq[i]);
    }
    const gemm_case c = {fp8,  m,  accumulate, n, k, fp8 ? (const void *)xq : xb,
                         fp8 ? (const void *)wq : wb, sx, sw, y0};
    float *got = (float *)gtu_malloc(ny * 4), *ref = (float *)gtu_malloc(ny * 4);
    float *bound = (float *)gtu_malloc(ny * 4);
    const double chain = (double)(k / 32 + 48) * ldexp(1.0, -23);
    for (int mm = 0; mm < m; mm++)
        for (int64_t j = 0; j < n; j++) {
            const float *xr = xf + (size_t)mm * k, *wr = wf + (size_t)j * k;
            double p = 0, pabs = 0;
            for (int64_t i = 0; i < k; i++) {
                const double t = (double)(xr[i] * wr[i]); /* exact: two bf16 or E4M3 values */
                p += t;
                pabs += fabs(t);
            }
            double e = chain * pabs;
            if (fp8) {
                const double s = (double)sx[mm] * sw[j];
                p *= s;
                e = (e + ldexp(1.0, -12) * pabs) * s + ldexp(1.0, -22) * fabs(p);
            }
            const double base = accumulate ? (double)yf[(size_t)mm * n + j] : 0.0;
            /* the rounding of fp32 values around base + p, at the ends of the interval */
            const float cen = vox_bf16_to_f32(vox_f32_to_bf16((float)(base + p)));
            const float lo = vox_bf16_to_f32(vox_f32_to_bf16((float)(base + p - e)));
            const float hi = vox_bf16_to_f32(vox_f32_to_bf16((float)(base + p + e)));
            const size_t at = (size_t)mm * n + j;
            ref[at] = cen;
            bound[at] = fmaxf(hi - cen, cen - lo);
        }
    for (int v = -1; v < vox_k_skinny_gemm_variant_count(); v++) {
        uint16_t *y = run("random", v, &c);
        for (size_t i = 0; i < ny; i++) got[i] = vox_bf16_to_f32(y[i]);
        char what[96];
        snprintf(what, sizeof what, "random %s m=%d n=%lld k=%lld %s [%s]", fp8 ? "fp8" : "bf16",
                 m, (long long)n, (long long)k, accumulate ? "ADD" : "STORE", variant_name(v));
        gtu_compare_bound(what, got, ref, bound, ny);
        gtu_check_nonzero(what, got, ny);
        free(y);
    }
    free(xb), free(wb), free(y0), free(xf), free(wf), free(yf), free(sx), free(sw), free(xq),
        free(wq), free(got), free(ref), free(bound);
}

/* ---- 3. repeated runs, refusals ---- */
static void test_repeat_and_refusals(gtu_rng *r) {
    const int m = 37;
    const int64_t n = 3072, k = 4096; /* 24 tiles over every block: cut tiles */
    const size_t nx = (size_t)m * k, nw = (size_t)n * k, ny = (size_t)m * n;
    uint16_t *x = gtu_randn_bf16(r, nx, 1.0f, 0.0f, NULL);
    uint16_t *w = gtu_randn_bf16(r, nw, 0.02f, 0.0f, NULL);
    void *dx = gtu_dev_upload(x, nx * 2), *dw = gtu_dev_upload(w, nw * 2);
    void *dy = gtu_dev_alloc(ny * 2);
    float ones[64];
    for (int i = 0; i < 64; i++) ones[i] = 1.0f;
    float *dsc = (float *)gtu_dev_upload(ones, sizeof ones); /* scales for the refusals */
    ensure_workspace();
    uint16_t *first = (uint16_t *)gtu_malloc(ny * 2), *again = (uint16_t *)gtu_malloc(ny * 2);
    const vox_k_skinny_args a = {.y = dy, .x = dx, .w = dw, .m = m, .n = n, .k = k,
                                 .workspace = g_ws, .workspace_bytes = g_ws_bytes};
    for (int v = 0; v < vox_k_skinny_gemm_variant_count(); v++) {
        CHECK(vox_k_skinny_gemm_variant(v, &a, 0) == 1);
        gtu_download(first, dy, ny * 2);
        int same = 1;
        for (int rep = 0; rep < 5; rep++) {
            GTU_CUDA(cudaMemset(dy, 0xff, ny * 2));
            CHECK(vox_k_skinny_gemm_variant(v, &a, 0) == 1);
            gtu_download(again, dy, ny * 2);
            same &= memcmp(first, again, ny * 2) == 0;
        }
        CHECK_MSG(same, "[%s] repeated runs gave different bits", variant_name(v));
        if (same)
            printf("  ok 6 runs of m=%d n=%lld k=%lld [%s]: the same bits\n", m, (long long)n,
                   (long long)k, variant_name(v));
    }

    /* refusals: nothing launched, y untouched */
    GTU_CUDA(cudaMemset(dy, 0x5a, ny * 2));
    vox_k_skinny_args b;
    int refused = 0, cases = 0;
#define REFUSED(field_edit)                                                                    \
    do {                                                                                       \
        b = a;                                                                                 \
        field_edit;                                                                            \
        cases++;                                                                               \
        const int got_ = vox_k_skinny_gemm(&b, 0);                                             \
        CHECK_MSG(got_ == 0, "refusal case %d (%s) was taken", cases, #field_edit);            \
        refused += got_ == 0;                                                                  \
    } while (0)
    REFUSED(b.m = 0);
    REFUSED(b.m = VOX_K_SKINNY_MAX_M + 1);
    REFUSED(b.k = 4092);               /* bf16 rows of 8184 bytes: not whole 16-byte vectors */
    REFUSED(b.n = 3068);               /* not a multiple of 8 */
    REFUSED((b.x = (char *)dx + 2, b.k = k - 8)); /* x not 16-byte aligned */
    REFUSED(b.workspace_bytes = 1024); /* too small */
    REFUSED(b.workspace = NULL);
    REFUSED(b.x_scale = dsc);          /* scales for one side only */
    REFUSED(b.w_scale = dsc);
    REFUSED((b.x_scale = dsc, b.w_scale = dsc, b.k = 4088)); /* FP8 rows of 4088 codes */
    if (!g_fp8) REFUSED((b.x_scale = dsc, b.w_scale = dsc)); /* no FP8 tensor cores */
#undef REFUSED
    b = a;
    CHECK(vox_k_skinny_gemm_variant(vox_k_skinny_gemm_variant_count(), &b, 0) == 0);
    uint16_t *after = (uint16_t *)gtu_malloc(ny * 2);
    gtu_download(after, dy, ny * 2);
    int untouched = 1;
    for (size_t i = 0; i < ny; i++) untouched &= after[i] == 0x5a5a;
    CHECK_MSG(untouched, "a refused call wrote y");
    if (untouched && refused == cases)
        printf("  ok refusals: %d argument sets and an unknown configuration refused, y untouched\n",
               cases);
    gtu_dev_free(dx), gtu_dev_free(dw), gtu_dev_free(dy), gtu_dev_free(dsc);
    free(x), free(w), free(first), free(again), free(after);
}

/* ---- 4. timing ---- */
static void time_shapes(gtu_rng *r) {
    static const struct {
        const char *name;
        int64_t n, k;
    } shapes[] = {{"q|k|v", 6144, 3072}, {"o", 3072, 4096}, {"gate|up", 16384, 3072}, {"down", 3072, 8192}};
    static const int ms[] = {8, 16, 32, 64};
    printf("\ntiming (weights out of L2: copies in rotation; us a call, TB/s of weights)\n");
    printf("%-8s %-5s %-10s %6s %6s", "shape", "type", "config", "n", "k");
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) printf("   m=%-2d us  TB/s", ms[i]);
    printf("\n");
    for (int fp8 = 0; fp8 < 1 + g_fp8; fp8++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const int64_t n = shapes[s].n, k = shapes[s].k;
            const size_t wbytes = (size_t)n * (size_t)k * (fp8 ? 1 : 2);
            enum { COPIES = 4 };
            void *dw[COPIES];
            uint16_t *w = gtu_randn_bf16(r, (size_t)n * k, 0.02f, 0.0f, NULL); /* as bytes */
            for (int c = 0; c < COPIES; c++) dw[c] = gtu_dev_upload(w, wbytes);
            uint16_t *x = gtu_randn_bf16(r, (size_t)64 * k, 0.02f, 0.0f, NULL);
            float scales[16384];
            for (int i = 0; i < 16384; i++) scales[i] = 1.0f / 1024;
            void *dx = gtu_dev_upload(x, (size_t)64 * k * 2), *dy = gtu_dev_alloc((size_t)64 * n * 2);
            float *dsc = (float *)gtu_dev_upload(scales, sizeof scales);
            ensure_workspace();
            for (int v = 0; v < vox_k_skinny_gemm_variant_count(); v++) {
                printf("%-8s %-5s %-10s %6lld %6lld", shapes[s].name, fp8 ? "fp8" : "bf16",
                       variant_name(v), (long long)n, (long long)k);
                for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
                    vox_k_skinny_args a = {.y = dy, .x = dx, .x_scale = fp8 ? dsc : NULL,
                                           .w_scale = fp8 ? dsc : NULL, .m = ms[i], .n = n, .k = k,
                                           .workspace = g_ws, .workspace_bytes = g_ws_bytes};
                    int it = 0;
                    double us;
                    GTU_TIME_US(us, 40, (a.w = dw[(it++) % COPIES], vox_k_skinny_gemm_variant(v, &a, 0)));
                    printf("   %8.1f %5.2f", us, (double)wbytes / (us * 1e-6) / 1e12);
                }
                printf("\n");
            }
            for (int c = 0; c < COPIES; c++) gtu_dev_free(dw[c]);
            gtu_dev_free(dx), gtu_dev_free(dy), gtu_dev_free(dsc);
            free(w), free(x);
        }
}

int main(int argc, char **argv) {
    int timing = !(argc > 1 && strcmp(argv[1], "--no-timing") == 0);
    gtu_require_device();
    int major = 0, minor = 0;
    GTU_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    GTU_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
    g_fp8 = major * 10 + minor >= 89;
    if (!g_fp8) printf("no FP8 tensor cores (sm_%d%d): the FP8 cases are checked to be refused\n", major, minor);
    gtu_rng r = gtu_rng_seed(0x5c1a77);

    printf("1. small integers: bit for bit\n");
    static const struct {
        int m;
        int64_t n, k;
    } exact[] = {
        {1, 8, 16},      /* one unit, one row */
        {5, 136, 80},    /* a tile and 8 rows, a chunk and 16 columns */
        {16, 128, 64},   /* exactly one tile and bf16 chunk */
        {17, 392, 528},  /* m past 16, partial tile and chunk */
        {33, 1000, 208}, /* 8 tiles, a few chunks each */
        {48, 264, 2048}, /* 3 tiles of many chunks: cut into many pieces */
        {63, 2056, 640}, /* 17 tiles */
        {64, 3072, 2048},
        {29, 16384, 144}, /* many tiles, short rows */
        {8, 128, 2048},   /* one tile, every block a piece of it */
    };
    for (int fp8 = 0; fp8 < 1 + g_fp8; fp8++)
        for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
            for (int acc = 0; acc < 2; acc++)
                test_exact(fp8, exact[i].m, exact[i].n, exact[i].k, acc, &r);

    printf("2. random values: within the rounding interval of the exact sum\n");
    static const struct {
        int m;
        int64_t n, k;
    } shapes[] = {
        {5, 6144, 3072}, {64, 6144, 3072},  {8, 3072, 4096},  {32, 3072, 4096},
        {16, 16384, 3072}, {64, 16384, 3072}, {48, 3072, 8192}, {64, 3072, 8192},
        {13, 1032, 1008}, {31, 520, 4112},   {2, 3072, 3072},
    };
    for (int fp8 = 0; fp8 < 1 + g_fp8; fp8++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int acc = 0; acc < 2; acc++) {
                if (acc && shapes[i].n * shapes[i].m > 64 * 8192) continue; /* ADD on the smaller ones */
                test_random(fp8, shapes[i].m, shapes[i].n, shapes[i].k, acc, &r);
            }

    printf("3. repeated runs and refusals\n");
    test_repeat_and_refusals(&r);

    if (timing) time_shapes(&r);
    if (g_ws) gtu_dev_free(g_ws);
    return test_finish("test_kernels_skinny");
}
