/* The elementwise kernels (kernels/elementwise.cu) against the CPU backend.
 *
 * Inputs are random bf16 values (fixed seed); the CPU reference computes in float32 from the
 * same values, without the kernels' bf16 roundings. Sizes are awkward on purpose (1, 7, 127,
 * 3072*17+3: not multiples of the 8-wide vectors nor of the blocks; 1500*5120: the encoder's
 * FFN), each run aligned (vector path) and at a 1-element offset (scalar path), in place where
 * the header allows it. Every element is checked against atol + rtol*|ref|; each op's tolerance
 * is stated where it is used. Outputs must not be all zero.
 *
 * Tolerance unit: bf16 keeps 8 significant bits, so one round-to-nearest changes a value by at
 * most U = 2^-8 of itself. An op rounded once is within U*|ref| of the exact fp32 result, plus
 * whatever the fp32 computations of host and device differ by (atol). Ops that round twice
 * (silu_mul) get 2U. Beyond the tolerance, ops with a rounding sequence are also compared
 * bit for bit with a host emulation of that sequence. silu_mul's emulation uses the host expf,
 * which may differ from the device's in the last fp32 bit; silu is well conditioned, so that
 * moves a bf16 result only next to a rounding boundary: at most 1 + n/1000 mismatches. GELU's
 * emulation is the device's own erff (torch_cuda_erff below), and must match everywhere: its
 * 1 + erf(x/sqrt2) cancels for x < -3, where a last-bit difference of erff becomes one or more
 * bf16 steps of the result, so the host erff would not do. GELU is also run on every bf16
 * value. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kernels.h"

#define U_BF16 (1.0 / 256.0)

static vox_backend *cpu;
static gtu_rng rng;

static const int64_t sizes[] = {1, 7, 8, 64, 127, 1280, 3072 * 17 + 3, 1500 * 5120};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

/* Elements whose bf16 patterns differ (any NaN matches any NaN); with the inputs `in`, the
 * first few are printed (for checks that allow none). */
static size_t count_mismatch(const char *what, const float *got, const float *want,
                             const float *in, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i]) && isnan(want[i])) continue;
        if (vox_f32_to_bf16(got[i]) == vox_f32_to_bf16(want[i])) continue;
        if (bad++ < 5 && in)
            fprintf(stderr, "  %s[%zu]: input %.9g: got %.9g, emulated %.9g\n", what, i, in[i],
                    got[i], want[i]);
    }
    return bad;
}

/* erff as the device computes it, for the GELU emulation: a port of libdevice's __nv_erff
 * (nvvm/libdevice/libdevice.10.bc of CUDA 13.0), the erff that elementwise.cu calls and torch's
 * CUDA gelu calls through ::erf; the PTX of GeluOp inlines exactly this sequence. Every step is
 * one IEEE fp32 operation, the same on the host, except ex2.approx.ftz.f32, done here as a
 * correctly rounded exp2: over all bf16 inputs x, a relative error of up to 2^-18 in that exp2
 * (far more than ex2.approx's few fp32 ulps) moves no bf16 GELU result. If a toolkit changes
 * its erff, the checks below fail on the inputs whose result moved, and print them. */
static float f32_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static float torch_cuda_erff(float a) {
    /* |a| >= 1.00295: erf = 1 - 2^(-|a| (1 + p(|a|))); below: erf = a (1 + p(a^2)) */
    static const uint32_t c_big[7] = {0x38EB4C3A, 0xBAAE005B, 0x3C09919F, 0xBD24D99A,
                                      0x3E235519, 0x3F69B4F9, 0x3F210A14};
    static const uint32_t c_small[7] = {0x38B1E96A, 0xBA574D20, 0x3BAAD5EA, 0xBCDC1BE7,
                                        0x3DE718AF, 0xBEC093AC, 0x3E0375D3};
    const float t = fabsf(a);
    const int big = t >= f32_bits(0x3F8060FE);
    const uint32_t *c = big ? c_big : c_small;
    const float s = big ? t : a * a, m = big ? -t : a;
    float p = fmaf(f32_bits(c[0]), s, f32_bits(c[1]));
    for (int i = 2; i < 7; i++) p = fmaf(p, s, f32_bits(c[i]));
    const float r = fmaf(p, m, m);
    if (!big) return r;
    float e = (float)exp2((double)r);
    if (fabsf(e) < FLT_MIN) e = 0.0f; /* .ftz */
    return copysignf(1.0f - e, a);
}

/* torch's CUDA gelu on a bf16 value x: x * 0.5 * (1 + erf(x * M_SQRT1_2)) in fp32, each
 * operation rounded as written (no fma can form here), then one rounding to bf16. */
static float torch_cuda_gelu_bf16(float x) {
    const float y = (x * 0.5f) * (1.0f + torch_cuda_erff(x * 0.70710678118654752f));
    return vox_bf16_to_f32(vox_f32_to_bf16(y));
}

/* ---- conversions: exact ---------------------------------------------------------------------- */

static void test_convert(int64_t n, int offset) {
    char what[96];
    /* buf[offset..] holds the data: with offset 1 the device pointers are misaligned for vectors */
    float *buf = (float *)gtu_malloc((size_t)(n + offset) * sizeof(float)), *src = buf + offset;
    buf[0] = 0;
    for (int64_t i = 0; i < n; i++) src[i] = gtu_normal(&rng) * 100.0f;
    /* values that stress the rounding: ties to even, denormals, overflow to inf, signed zero */
    const float special[] = {1.00390625f, 1.01171875f, -0.0f, 1e-40f, 3.4e38f, -3.39e38f, 0.0f};
    for (int64_t i = 0; i < n && i < 7; i++) src[i] = special[i];
    float *want = (float *)gtu_malloc((size_t)n * sizeof(float));
    memcpy(want, src, (size_t)n * sizeof(float));
    gtu_round_bf16_inplace(want, (size_t)n);

    float *d_src = (float *)gtu_dev_upload(buf, (size_t)(n + offset) * sizeof(float));
    uint16_t *d_bf = (uint16_t *)gtu_dev_alloc((size_t)(n + offset) * 2);
    float *d_back = (float *)gtu_dev_alloc((size_t)(n + offset) * sizeof(float));
    vox_k_f32_to_bf16(d_bf + offset, d_src + offset, n, 0);
    vox_k_bf16_to_f32(d_back + offset, d_bf + offset, n, 0);
    float *got = gtu_download_bf16_as_f32(d_bf + offset, (size_t)n);
    float *back = (float *)gtu_malloc((size_t)n * sizeof(float));
    gtu_download(back, d_back + offset, (size_t)n * sizeof(float));

    /* exact: the conversion is one round-to-nearest-even, bit for bit the host's */
    snprintf(what, sizeof what, "f32_to_bf16 n=%lld off=%d", (long long)n, offset);
    gtu_compare(what, got, want, (size_t)n, 0, 0);
    snprintf(what, sizeof what, "bf16_to_f32 n=%lld off=%d", (long long)n, offset);
    gtu_compare(what, back, want, (size_t)n, 0, 0);
    gtu_check_nonzero(what, back, (size_t)n);

    free(buf), free(want), free(got), free(back);
    gtu_dev_free(d_src), gtu_dev_free(d_bf), gtu_dev_free(d_back);
}

/* ---- gelu, silu_mul, add --------------------------------------------------------------------- */

typedef enum { OP_GELU, OP_SILU_MUL, OP_ADD } ew_op;
static const char *op_name[] = {"gelu", "swiglu", "add"};

/* alias: 0 y separate, 1 y = a (gate), 2 y = b. */
static void test_ew(ew_op op, int64_t n, int offset, int alias) {
    char what[96];
    snprintf(what, sizeof what, "%s n=%lld off=%d alias=%d", op_name[op], (long long)n, offset,
             alias);
    const size_t cap = (size_t)(n + offset);
    float *fa, *fb;
    uint16_t *ha = gtu_randn_bf16(&rng, cap, 3.0f, 0.0f, &fa);
    uint16_t *hb = gtu_randn_bf16(&rng, cap, 2.0f, 0.0f, &fb);
    uint16_t *d_a = (uint16_t *)gtu_dev_upload(ha, cap * 2);
    uint16_t *d_b = (uint16_t *)gtu_dev_upload(hb, cap * 2);
    uint16_t *d_y = alias == 1 ? d_a : alias == 2 ? d_b : (uint16_t *)gtu_dev_alloc(cap * 2);
    const float *a = fa + offset, *b = fb + offset;

    /* reference: the CPU backend on float32 copies of the same bf16 values */
    float *ref = (float *)gtu_malloc((size_t)n * sizeof(float));
    float *want = (float *)gtu_malloc((size_t)n * sizeof(float)); /* torch's rounding sequence */
    vox_tensor ty = gtu_cpu_tensor(ref, VOX_DTYPE_F32, 1, n);
    vox_tensor ta = gtu_cpu_tensor((void *)a, VOX_DTYPE_F32, 1, n);
    vox_tensor tb = gtu_cpu_tensor((void *)b, VOX_DTYPE_F32, 1, n);
    double atol = 0, rtol = U_BF16;
    switch (op) {
    case OP_GELU:
        memcpy(ref, a, (size_t)n * sizeof(float));
        cpu->gelu(cpu, &ty);
        VOX_ASSERT(alias == 1); /* in place only */
        vox_k_gelu(d_a + offset, n, 0);
        for (int64_t i = 0; i < n; i++) want[i] = torch_cuda_gelu_bf16(a[i]);
        /* one rounding (U); host erff and device erff differ by up to ~2 fp32 ulps of 1, times
         * 0.5*|x| <= 8 here: atol 2e-6 */
        atol = 2e-6;
        break;
    case OP_SILU_MUL: {
        /* the CPU backend's swiglu on one row (gate | up) */
        float *gu = (float *)gtu_malloc(2 * (size_t)n * sizeof(float));
        memcpy(gu, a, (size_t)n * sizeof(float));
        memcpy(gu + n, b, (size_t)n * sizeof(float));
        vox_tensor tgu = gtu_cpu_tensor(gu, VOX_DTYPE_F32, 1, 2 * n);
        cpu->swiglu(cpu, &ty, &tgu);
        free(gu);
        /* the kernel on one row (gate | up) laid out on the device from the two inputs, the
         * output at the test's offset (alias 0 only: the kernel takes no aliasing) */
        uint16_t *d_gu = (uint16_t *)gtu_dev_alloc(2 * (size_t)n * 2 + 16);
        uint16_t *gu_at = d_gu + (offset ? 1 : 0);
        GTU_CUDA(cudaMemcpy(gu_at, d_a + offset, (size_t)n * 2, cudaMemcpyDeviceToDevice));
        GTU_CUDA(cudaMemcpy(gu_at + n, d_b + offset, (size_t)n * 2, cudaMemcpyDeviceToDevice));
        vox_k_swiglu(d_y + offset, gu_at, 1, n, 0);
        GTU_SYNC_CHECK();
        gtu_dev_free(d_gu);
        for (int64_t i = 0; i < n; i++) {
            float s = vox_bf16_to_f32(vox_f32_to_bf16(a[i] / (1.0f + expf(-a[i]))));
            want[i] = vox_bf16_to_f32(vox_f32_to_bf16(s * b[i]));
        }
        /* two roundings (silu, then the product): 2U, plus 2^-20 for the product of the two
         * bounds; expf of host and device differ in the last fp32 bits: atol 1e-6 */
        rtol = 2 * U_BF16 + 1.0 / (1 << 20);
        atol = 1e-6;
        break;
    }
    case OP_ADD:
        cpu->add(cpu, &ty, &ta, &tb);
        vox_k_add(d_y + offset, d_a + offset, d_b + offset, n, 0);
        for (int64_t i = 0; i < n; i++) want[i] = ref[i];
        gtu_round_bf16_inplace(want, (size_t)n);
        /* the fp32 sum of two bf16 values is the same on both sides; one rounding: U, atol 0 */
        break;
    }
    float *got = gtu_download_bf16_as_f32(d_y + offset, (size_t)n);
    gtu_compare(what, got, ref, (size_t)n, atol, rtol);
    gtu_check_nonzero(what, got, (size_t)n);
    size_t mism = count_mismatch(what, got, want, op == OP_SILU_MUL ? NULL : a, (size_t)n);
    size_t allowed = op == OP_SILU_MUL ? 1 + (size_t)n / 1000 : 0;
    CHECK_MSG(mism <= allowed, "%s: %zu elements differ from the emulated torch rounding", what,
              mism);

    free(ha), free(hb), free(fa), free(fb), free(ref), free(want), free(got);
    if (d_y != d_a && d_y != d_b) gtu_dev_free(d_y);
    gtu_dev_free(d_a), gtu_dev_free(d_b);
}

/* GELU of every bf16 value (the whole function: 65536 inputs, infinities and NaNs included),
 * bit for bit against the emulation of torch's CUDA gelu. */
static void test_gelu_all_bf16(void) {
    const size_t n = 65536;
    uint16_t *h = (uint16_t *)gtu_malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = (uint16_t)i;
    float *in = gtu_bf16_to_f32_host(h, n), *want = (float *)gtu_malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) want[i] = torch_cuda_gelu_bf16(in[i]);
    uint16_t *d = (uint16_t *)gtu_dev_upload(h, n * sizeof *h);
    vox_k_gelu(d, (int64_t)n, 0);
    float *got = gtu_download_bf16_as_f32(d, n);
    size_t mism = count_mismatch("gelu all bf16", got, want, in, n);
    CHECK_MSG(mism == 0, "gelu all bf16: %zu of %zu inputs differ from torch's CUDA gelu", mism, n);
    if (mism == 0) printf("  ok %-44s n=%-9zu bit-exact\n", "gelu all bf16", n);
    free(h), free(in), free(want), free(got);
    gtu_dev_free(d);
}

/* ---- add_rows_f32 (encoder positions) -------------------------------------------------------- */

static void test_add_rows(int64_t rows, int64_t t, int64_t c, int offset) {
    char what[96];
    snprintf(what, sizeof what, "add_rows_f32 rows=%lld t=%lld c=%lld off=%d", (long long)rows,
             (long long)t, (long long)c, offset);
    const size_t nx = (size_t)(rows * c), np = (size_t)(t * c);
    float *fx;
    uint16_t *hx = gtu_randn_bf16(&rng, nx + offset, 1.0f, 0.0f, &fx);
    float *p = gtu_rand_f32(&rng, np + offset, -1.0f, 1.0f);
    uint16_t *d_x = (uint16_t *)gtu_dev_upload(hx, (nx + offset) * 2);
    float *d_p = (float *)gtu_dev_upload(p, (np + offset) * sizeof(float));

    float *ref = (float *)gtu_malloc(nx * sizeof(float));
    memcpy(ref, fx + offset, nx * sizeof(float));
    vox_tensor tx = gtu_cpu_tensor(ref, VOX_DTYPE_F32, rows, c);
    vox_tensor tp = gtu_cpu_tensor(p + offset, VOX_DTYPE_F32, t, c);
    cpu->add_rows_f32(cpu, &tx, &tp);
    vox_k_add_rows_f32(d_x + offset, d_p + offset, rows, t, c, 0);

    float *got = gtu_download_bf16_as_f32(d_x + offset, nx);
    /* the same fp32 sum on both sides, rounded once: U, atol 0; and bit-exact to bf16(ref) */
    gtu_compare(what, got, ref, nx, 0, U_BF16);
    gtu_check_nonzero(what, got, nx);
    gtu_round_bf16_inplace(ref, nx);
    CHECK_MSG(count_mismatch(what, got, ref, fx + offset, nx) == 0,
              "%s: not bit-exact to bf16(fp32 sum)", what);

    free(hx), free(fx), free(p), free(ref), free(got);
    gtu_dev_free(d_x), gtu_dev_free(d_p);
}

/* ---- timing ---------------------------------------------------------------------------------- */

static void time_ops(void) {
    const int64_t n = 1500 * 5120; /* one chunk's encoder FFN activations */
    uint16_t *d_a = (uint16_t *)gtu_dev_alloc((size_t)n * 2);
    uint16_t *d_b = (uint16_t *)gtu_dev_alloc((size_t)n * 2);
    float *d_f = (float *)gtu_dev_alloc((size_t)n * 4);
    GTU_CUDA(cudaMemset(d_a, 0, (size_t)n * 2));
    GTU_CUDA(cudaMemset(d_b, 0, (size_t)n * 2));
    GTU_CUDA(cudaMemset(d_f, 0, (size_t)n * 4));
    double us;
    GTU_TIME_US(us, 20, vox_k_gelu(d_a, n, 0));
    printf("  time gelu         n=%lld: %7.2f us, %6.0f GB/s\n", (long long)n, us, 4.0 * n / us / 1e3);
    GTU_TIME_US(us, 20, vox_k_swiglu(d_b, d_a, 1500, 5120 / 2, 0));
    printf("  time swiglu       n=%lld: %7.2f us, %6.0f GB/s\n", (long long)n / 2, us, 3.0 * n / us / 1e3);
    GTU_TIME_US(us, 20, vox_k_add(d_a, d_a, d_b, n, 0));
    printf("  time add          n=%lld: %7.2f us, %6.0f GB/s\n", (long long)n, us, 6.0 * n / us / 1e3);
    GTU_TIME_US(us, 20, vox_k_f32_to_bf16(d_a, d_f, n, 0));
    printf("  time f32_to_bf16  n=%lld: %7.2f us, %6.0f GB/s\n", (long long)n, us, 6.0 * n / us / 1e3);
    GTU_TIME_US(us, 20, vox_k_add_rows_f32(d_a, d_f, 6000, 1500, 1280, 0));
    printf("  time add_rows_f32 6000x1280: %7.2f us\n", us);
    GTU_TIME_US(us, 200, vox_k_add(d_a, d_a, d_b, 3072, 0));
    printf("  time add          n=3072 (decode residual): %5.2f us\n", us);
    gtu_dev_free(d_a), gtu_dev_free(d_b), gtu_dev_free(d_f);
}

int main(void) {
    gtu_require_device();
    cpu = gtu_cpu_backend();
    rng = gtu_rng_seed(20250601);

    for (size_t s = 0; s < N_SIZES; s++)
        for (int off = 0; off <= 1; off++) test_convert(sizes[s], off);
    for (size_t s = 0; s < N_SIZES; s++)
        for (int off = 0; off <= 1; off++) {
            test_ew(OP_GELU, sizes[s], off, 1);
            for (int alias = 0; alias <= 2; alias++) {
                test_ew(OP_ADD, sizes[s], off, alias);
                if (alias == 0) test_ew(OP_SILU_MUL, sizes[s], off, alias);
            }
        }
    test_gelu_all_bf16();
    const int64_t rows[] = {1, 3, 17, 1500, 3000}, widths[] = {1, 7, 64, 127, 1280};
    for (size_t r = 0; r < 5; r++)
        for (size_t w = 0; w < 5; w++) {
            int64_t t = rows[r] == 3000 ? 1500 : rows[r]; /* 3000 = two chunks of 1500 */
            test_add_rows(rows[r], t, widths[w], 0);
            if (widths[w] == 1280) test_add_rows(rows[r], t, widths[w], 1);
        }
    time_ops();

    vox_backend_destroy(cpu);
    return test_finish("test_kernels_elementwise");
}
