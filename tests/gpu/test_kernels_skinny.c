/* The GEMM of a few rows (kernels/skinny_gemm.cu) against a host reference.
 *
 * y [m, n] = x [m, k] @ w [n, k]^T (STORE) or y + that (ADD, one rounding), bf16, m = 1..64.
 *
 * 1. Fragment layout and stream-K fix-up, bit for bit: x and w hold small integers (|v| <= 3)
 *    and k <= 2048, so every partial sum is an integer below 2^24 and exact in fp32 whatever
 *    the order, the tensor cores' rounding, or how a tile is cut between blocks: the kernel must
 *    return bf16(exact) (ADD: bf16(y + exact)) bit for bit. Awkward shapes: m not a multiple of
 *    8 or 16, n and k not multiples of a tile (128) or chunk (64), one unit in all, more blocks'
 *    worth of tiles than chunks, a tile cut into many pieces (few tiles, long k).
 * 2. Random values at the decoder's shapes (q|k|v 6144 x 3072, o 3072 x 4096, gate|up
 *    16384 x 3072, down 3072 x 8192) and awkward ones: w N(0,1)/sqrt(k), x N(0,1) per row times
 *    1, 3, 0.25 or 7, y N(0,1) for ADD. Reference: the exact sum P in double, then the rounding
 *    bf16(P) or bf16(y + P). Tolerance: the kernel's fp32 sum differs from P by at most
 *    e = (k / 32 + 48) * 2^-23 * sum_i |x_i w_i|: the standard bound gamma_n * sum |terms| for
 *    a chain of n = k / 32 + 48 fp32 additions (a warp's k16 steps over half the columns, the
 *    16-term sum inside an mma, the two halves and at most ~20 partials of a cut tile), with
 *    2^-23 (not 2^-24) per addition since the tensor cores may truncate. The output must lie
 *    in [round(P - e), round(P + e)] (rounding is monotone): the bound per element is the
 *    distance from the reference to the farther end. For these inputs e is a fraction of a
 *    bf16 step, so most outputs have one admissible value.
 * Every case runs through the default entry and through each configuration (vox_k_skinny_gemm_
 * variant), all with one workspace, as the backend has, over shapes of growing and shrinking n.
 * 3. Every output buffer starts as NaN (ADD: the old y) with guard words behind it; the guard
 *    must keep its bits. Results are the same bits on repeated runs (workspace reuse: the
 *    tickets must be back to zero), and the kernel refuses what it does not take (m = 0 or 65,
 *    n or k not multiples of 8, unaligned x, a workspace too small), launching nothing.
 * 4. Timing (--no-timing skips it): each configuration at the decoder's shapes at m = 8, 16, 32,
 *    64 with the weights
 *    out of L2 (several copies in rotation), as TB/s of weights read; printed, not asserted.
 *    tests/gpu/time_gemm_algos times cuBLASLt at the same shapes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kernels.h"

#define GUARD 64 /* bf16 words behind y */

static void *g_ws;
static size_t g_ws_bytes;

/* One workspace for every call, as the backend has: a call must find it as the last left it. */
static void ensure_workspace(void) {
    if (g_ws) return;
    g_ws_bytes = vox_k_skinny_gemm_workspace_bytes();
    g_ws = gtu_dev_alloc(g_ws_bytes);
    GTU_CUDA(cudaMemset(g_ws, 0, g_ws_bytes));
}

/* Runs the kernel on host inputs (bf16 words); returns y (n*m words, malloc'd) and checks the
 * guard. y0: the initial y (ADD), or NULL for NaN. */
static uint16_t *run(int variant, const uint16_t *x, const uint16_t *w, const uint16_t *y0, int m,
                     int64_t n, int64_t k, int accumulate, int *launched) {
    size_t ny = (size_t)m * (size_t)n;
    uint16_t *hy = (uint16_t *)gtu_malloc((ny + GUARD) * 2);
    for (size_t i = 0; i < ny + GUARD; i++) hy[i] = 0x7fc1; /* NaN */
    if (y0) memcpy(hy, y0, ny * 2);
    void *dx = gtu_dev_upload(x, (size_t)m * (size_t)k * 2);
    void *dw = gtu_dev_upload(w, (size_t)n * (size_t)k * 2);
    void *dy = gtu_dev_upload(hy, (ny + GUARD) * 2);
    ensure_workspace();
    *launched = variant < 0 ? vox_k_skinny_gemm(dy, dx, dw, m, n, k, accumulate, g_ws, g_ws_bytes, 0)
                            : vox_k_skinny_gemm_variant(variant, dy, dx, dw, m, n, k, accumulate,
                                                        g_ws, g_ws_bytes, 0);
    uint16_t *out = (uint16_t *)gtu_malloc((ny + GUARD) * 2);
    gtu_download(out, dy, (ny + GUARD) * 2);
    int guard_ok = 1;
    for (size_t i = ny; i < ny + GUARD; i++) guard_ok &= out[i] == 0x7fc1;
    CHECK_MSG(guard_ok, "m=%d n=%lld k=%lld: the guard behind y was written", m, (long long)n,
              (long long)k);
    gtu_dev_free(dx);
    gtu_dev_free(dw);
    gtu_dev_free(dy);
    free(hy);
    return out;
}

/* The name of configuration v (-1: the default entry). */
static const char *variant_name(int v) { return v < 0 ? "default" : vox_k_skinny_gemm_variant_name(v); }

/* run() through configuration v, checking that it took the case (`what` names the test). */
static uint16_t *run_checked(const char *what, int v, const uint16_t *x, const uint16_t *w,
                             const uint16_t *y0, int m, int64_t n, int64_t k, int accumulate) {
    int launched = 0;
    uint16_t *y = run(v, x, w, accumulate ? y0 : NULL, m, n, k, accumulate, &launched);
    CHECK_MSG(launched, "%s m=%d n=%lld k=%lld [%s]: not taken", what, m, (long long)n,
              (long long)k, variant_name(v));
    return y;
}

/* ---- 1. small integers: bit for bit ---- */
static void test_exact(int m, int64_t n, int64_t k, int accumulate, gtu_rng *r) {
    size_t nx = (size_t)m * (size_t)k, nw = (size_t)n * (size_t)k, ny = (size_t)m * (size_t)n;
    uint16_t *x = (uint16_t *)gtu_malloc(nx * 2), *w = (uint16_t *)gtu_malloc(nw * 2);
    uint16_t *y0 = (uint16_t *)gtu_malloc(ny * 2);
    for (size_t i = 0; i < nx; i++) x[i] = vox_f32_to_bf16((float)((int)(gtu_next_u64(r) % 7) - 3));
    for (size_t i = 0; i < nw; i++) w[i] = vox_f32_to_bf16((float)((int)(gtu_next_u64(r) % 7) - 3));
    for (size_t i = 0; i < ny; i++) y0[i] = vox_f32_to_bf16((float)((int)(gtu_next_u64(r) % 201) - 100));
    /* the exact sums, once */
    uint16_t *want = (uint16_t *)gtu_malloc(ny * 2);
    for (int mm = 0; mm < m; mm++)
        for (int64_t j = 0; j < n; j++) {
            int64_t sum = 0;
            for (int64_t i = 0; i < k; i++)
                sum += (int64_t)vox_bf16_to_f32(x[(size_t)mm * k + i]) *
                       (int64_t)vox_bf16_to_f32(w[(size_t)j * k + i]);
            float v = (float)sum + (accumulate ? vox_bf16_to_f32(y0[(size_t)mm * n + j]) : 0.0f);
            want[(size_t)mm * n + j] = vox_f32_to_bf16(v);
        }
    for (int v = -1; v < vox_k_skinny_gemm_variant_count(); v++) {
        const char *name = variant_name(v);
        uint16_t *y = run_checked("exact", v, x, w, y0, m, n, k, accumulate);
        size_t bad = 0;
        for (size_t i = 0; i < ny; i++)
            if (y[i] != want[i]) {
                if (bad < 5)
                    fprintf(stderr, "  exact m=%d n=%lld k=%lld %s [%s]: y[%zu][%zu] = %g, want %g\n",
                            m, (long long)n, (long long)k, accumulate ? "ADD" : "STORE", name,
                            i / (size_t)n, i % (size_t)n, vox_bf16_to_f32(y[i]),
                            vox_bf16_to_f32(want[i]));
                bad++;
            }
        CHECK_MSG(bad == 0, "exact m=%d n=%lld k=%lld %s [%s]: %zu of %zu outputs differ", m,
                  (long long)n, (long long)k, accumulate ? "ADD" : "STORE", name, bad, ny);
        if (!bad)
            printf("  ok exact   m=%-3d n=%-6lld k=%-5lld %-5s [%s] bit for bit (%zu outputs)\n", m,
                   (long long)n, (long long)k, accumulate ? "ADD" : "STORE", name, ny);
        free(y);
    }
    free(want);
    free(x), free(w), free(y0);
}

/* ---- 2. random values: the rounding interval ---- */
static void test_random(int m, int64_t n, int64_t k, int accumulate, gtu_rng *r) {
    size_t nx = (size_t)m * (size_t)k, nw = (size_t)n * (size_t)k, ny = (size_t)m * (size_t)n;
    float *xf, *wf, *yf;
    uint16_t *w = gtu_randn_bf16(r, nw, 1.0f / sqrtf((float)k), 0.0f, &wf);
    uint16_t *x = gtu_randn_bf16(r, nx, 1.0f, 0.0f, &xf);
    static const float row_scale[4] = {1.0f, 3.0f, 0.25f, 7.0f};
    for (int mm = 0; mm < m; mm++)
        for (int64_t i = 0; i < k; i++) {
            size_t at = (size_t)mm * k + i;
            x[at] = vox_f32_to_bf16(xf[at] * row_scale[mm % 4]);
            xf[at] = vox_bf16_to_f32(x[at]);
        }
    uint16_t *y0 = gtu_randn_bf16(r, ny, 1.0f, 0.0f, &yf);
    float *got = (float *)gtu_malloc(ny * 4), *ref = (float *)gtu_malloc(ny * 4);
    float *bound = (float *)gtu_malloc(ny * 4);
    const double unit = (double)(k / 32 + 48) * ldexp(1.0, -23);
    for (int mm = 0; mm < m; mm++)
        for (int64_t j = 0; j < n; j++) {
            const float *xr = xf + (size_t)mm * k, *wr = wf + (size_t)j * k;
            double p = 0, pabs = 0;
            for (int64_t i = 0; i < k; i++) {
                double t = (double)(xr[i] * wr[i]); /* exact: two bf16 values */
                p += t;
                pabs += fabs(t);
            }
            const double base = accumulate ? (double)yf[(size_t)mm * n + j] : 0.0;
            const double e = unit * pabs;
            /* the rounding of fp32 values around base + p, at the ends of the interval */
            float c = vox_bf16_to_f32(vox_f32_to_bf16((float)(base + p)));
            float lo = vox_bf16_to_f32(vox_f32_to_bf16((float)(base + p - e)));
            float hi = vox_bf16_to_f32(vox_f32_to_bf16((float)(base + p + e)));
            size_t at = (size_t)mm * n + j;
            ref[at] = c;
            bound[at] = fmaxf(hi - c, c - lo);
        }
    for (int v = -1; v < vox_k_skinny_gemm_variant_count(); v++) {
        const char *name = variant_name(v);
        uint16_t *y = run_checked("random", v, x, w, y0, m, n, k, accumulate);
        for (size_t i = 0; i < ny; i++) got[i] = vox_bf16_to_f32(y[i]);
        char what[96];
        snprintf(what, sizeof what, "random m=%d n=%lld k=%lld %s [%s]", m, (long long)n,
                 (long long)k, accumulate ? "ADD" : "STORE", name);
        gtu_compare_bound(what, got, ref, bound, ny);
        free(y);
    }
    free(x), free(w), free(y0), free(xf), free(wf), free(yf), free(got), free(ref), free(bound);
}

/* ---- 3. repeated runs, refusals ---- */
static void test_repeat_and_refusals(gtu_rng *r) {
    const int m = 37;
    const int64_t n = 3072, k = 4096; /* 24 tiles over every block: cut tiles */
    size_t nx = (size_t)m * k, nw = (size_t)n * k, ny = (size_t)m * n;
    uint16_t *x = gtu_randn_bf16(r, nx, 1.0f, 0.0f, NULL);
    uint16_t *w = gtu_randn_bf16(r, nw, 0.02f, 0.0f, NULL);
    void *dx = gtu_dev_upload(x, nx * 2), *dw = gtu_dev_upload(w, nw * 2);
    void *dy = gtu_dev_alloc(ny * 2);
    ensure_workspace();
    uint16_t *first = (uint16_t *)gtu_malloc(ny * 2), *again = (uint16_t *)gtu_malloc(ny * 2);
    for (int v = 0; v < vox_k_skinny_gemm_variant_count(); v++) {
        CHECK(vox_k_skinny_gemm_variant(v, dy, dx, dw, m, n, k, 0, g_ws, g_ws_bytes, 0) == 1);
        gtu_download(first, dy, ny * 2);
        int same = 1;
        for (int rep = 0; rep < 5; rep++) {
            GTU_CUDA(cudaMemset(dy, 0xff, ny * 2));
            CHECK(vox_k_skinny_gemm_variant(v, dy, dx, dw, m, n, k, 0, g_ws, g_ws_bytes, 0) == 1);
            gtu_download(again, dy, ny * 2);
            same &= memcmp(first, again, ny * 2) == 0;
        }
        CHECK_MSG(same, "[%s] repeated runs gave different bits", vox_k_skinny_gemm_variant_name(v));
        if (same)
            printf("  ok 6 runs of m=%d n=%lld k=%lld [%s]: the same bits\n", m, (long long)n,
                   (long long)k, vox_k_skinny_gemm_variant_name(v));
    }

    /* refusals: nothing launched, y untouched */
    GTU_CUDA(cudaMemset(dy, 0x5a, ny * 2));
    CHECK(vox_k_skinny_gemm(dy, dx, dw, 0, n, k, 0, g_ws, g_ws_bytes, 0) == 0);
    CHECK(vox_k_skinny_gemm(dy, dx, dw, VOX_K_SKINNY_MAX_M + 1, n, k, 0, g_ws, g_ws_bytes, 0) == 0);
    CHECK(vox_k_skinny_gemm(dy, dx, dw, m, n, 4092, 0, g_ws, g_ws_bytes, 0) == 0);
    CHECK(vox_k_skinny_gemm(dy, dx, dw, m, 3068, k, 0, g_ws, g_ws_bytes, 0) == 0);
    CHECK(vox_k_skinny_gemm(dy, (char *)dx + 2, dw, m, n, k - 8, 0, g_ws, g_ws_bytes, 0) == 0);
    CHECK(vox_k_skinny_gemm(dy, dx, dw, m, n, k, 0, g_ws, 1024, 0) == 0);
    CHECK(vox_k_skinny_gemm_variant(vox_k_skinny_gemm_variant_count(), dy, dx, dw, m, n, k, 0, g_ws,
                                    g_ws_bytes, 0) == 0);
    CHECK(vox_k_skinny_gemm(dy, dx, dw, m, n, k, 0, NULL, g_ws_bytes, 0) == 0);
    uint16_t *after = (uint16_t *)gtu_malloc(ny * 2);
    gtu_download(after, dy, ny * 2);
    int untouched = 1;
    for (size_t i = 0; i < ny; i++) untouched &= after[i] == 0x5a5a;
    CHECK_MSG(untouched, "a refused call wrote y");
    if (untouched) printf("  ok refusals: 8 argument sets refused, y untouched\n");
    gtu_dev_free(dx), gtu_dev_free(dw), gtu_dev_free(dy);
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
    printf("%-8s %-9s %6s %6s", "shape", "config", "n", "k");
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) printf("   m=%-2d us  TB/s", ms[i]);
    printf("\n");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t n = shapes[s].n, k = shapes[s].k;
        const size_t nw = (size_t)n * (size_t)k;
        enum { COPIES = 4 };
        void *dw[COPIES];
        uint16_t *w = gtu_randn_bf16(r, nw, 0.02f, 0.0f, NULL);
        for (int c = 0; c < COPIES; c++) dw[c] = gtu_dev_upload(w, nw * 2);
        uint16_t *x = gtu_randn_bf16(r, (size_t)64 * k, 1.0f, 0.0f, NULL);
        void *dx = gtu_dev_upload(x, (size_t)64 * k * 2), *dy = gtu_dev_alloc((size_t)64 * n * 2);
        ensure_workspace();
        for (int v = 0; v < vox_k_skinny_gemm_variant_count(); v++) {
            printf("%-8s %-9s %6lld %6lld", shapes[s].name, vox_k_skinny_gemm_variant_name(v),
                   (long long)n, (long long)k);
            for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
                const int m = ms[i];
                int it = 0;
                double us;
                GTU_TIME_US(us, 40, vox_k_skinny_gemm_variant(v, dy, dx, dw[(it++) % COPIES], m, n, k,
                                                              0, g_ws, g_ws_bytes, 0));
                printf("   %8.1f %5.2f", us, (double)nw * 2 / (us * 1e-6) / 1e12);
            }
            printf("\n");
        }
        for (int c = 0; c < COPIES; c++) gtu_dev_free(dw[c]);
        gtu_dev_free(dx), gtu_dev_free(dy);
        free(w), free(x);
    }
}

int main(int argc, char **argv) {
    int timing = !(argc > 1 && strcmp(argv[1], "--no-timing") == 0);
    gtu_require_device();
    gtu_rng r = gtu_rng_seed(0x5c1a77);

    printf("1. small integers (exact in fp32): bit for bit\n");
    static const struct {
        int m;
        int64_t n, k;
    } exact[] = {
        {1, 8, 8},       /* one unit, one row */
        {5, 136, 72},    /* a tile and 8 rows, a chunk and 8 columns */
        {16, 128, 64},   /* exactly one tile and chunk */
        {17, 392, 520},  /* m past 16, partial tile and chunk */
        {33, 1000, 200}, /* 8 tiles, 4 chunks each */
        {48, 264, 2048}, /* 3 tiles of 32 chunks: cut into many pieces */
        {63, 2056, 640}, /* 17 tiles */
        {64, 3072, 2048},
        {29, 16384, 136}, /* many tiles, short rows */
        {8, 128, 2048},   /* one tile, every block a piece of it */
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        for (int acc = 0; acc < 2; acc++) test_exact(exact[i].m, exact[i].n, exact[i].k, acc, &r);

    printf("2. random values: within the rounding interval of the exact sum\n");
    static const struct {
        int m;
        int64_t n, k;
    } shapes[] = {
        {5, 6144, 3072}, {64, 6144, 3072},  {8, 3072, 4096},  {32, 3072, 4096},
        {16, 16384, 3072}, {64, 16384, 3072}, {48, 3072, 8192}, {64, 3072, 8192},
        {13, 1032, 1000}, {31, 520, 4104},   {2, 3072, 3072},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int acc = 0; acc < 2; acc++) {
            if (acc && shapes[i].n * shapes[i].m > 64 * 8192) continue; /* ADD on the smaller ones */
            test_random(shapes[i].m, shapes[i].n, shapes[i].k, acc, &r);
        }

    printf("3. repeated runs and refusals\n");
    test_repeat_and_refusals(&r);

    if (timing) time_shapes(&r);
    if (g_ws) gtu_dev_free(g_ws);
    return test_finish("test_kernels_skinny");
}
