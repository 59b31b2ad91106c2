/* LayerNorm and RMSNorm kernels (kernels/norm.cu) against the CPU backend.
 *
 * Random bf16 rows (fixed seed), rows 1, 3, 17, 1500 by widths that take every path of the
 * kernel: 1, 7, 127 (scalar), 64, 1280, 2048 (a warp per row, 1, 5 and 8 vectors a lane), 3072,
 * 5120 (3 and 5 warps per row), 16384 (16 warps), 32768 (the widest vector row: 32 warps x 4
 * vectors, a 1024-thread block), 32776, 40000, 70000 (wider: scalar; 40000 once failed to launch
 * as 32 warps x 5 vectors, more registers than a 1024-thread block has); each out of place and
 * in place (y = x), and once with x/y at a 1-element offset (misaligned: scalar path). Every
 * element is checked.
 *
 * Tolerances (U = 2^-8, the largest relative change of one bf16 rounding):
 * - LayerNorm: rtol U (one rounding of the output) + atol 1e-4. The kernel keeps its statistics
 *   in fp32 (per-thread sums, then a shuffle tree), the reference in double; for these inputs
 *   (|x| < 12, |w| < 1.5) the normalised value differs by well under 1e-5 relative, so 1e-4
 *   covers it with margin while staying 1/40 of a bf16 ulp at 1.
 * - RMSNorm: rtol 2U + 2^-20 (h = bf16(x * rstd), then bf16(w * h): two roundings; the
 *   reference is the fp32 w * x * rstd) + atol 1e-4 (fp32 vs double mean of squares, as above).
 *   Also compared bit for bit with a host emulation of transformers' rounding sequence (at most
 *   1 + n/100 mismatches, where the fp32 and double rstd land on either side of a bf16 rounding
 *   boundary; rounding once instead of twice differs in a large fraction of them). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kernels.h"

#define U_BF16 (1.0 / 256.0)
#define EPS 1e-5f

static vox_backend *cpu;
static gtu_rng rng;

/* offset: x and y start one element into their buffers (misaligned). */
static void test_norm(int rms, int64_t rows, int64_t c, int in_place, int offset) {
    char what[128];
    snprintf(what, sizeof what, "%s rows=%lld c=%lld%s%s", rms ? "rms_norm" : "layer_norm",
             (long long)rows, (long long)c, in_place ? " in-place" : "", offset ? " off=1" : "");
    const size_t n = (size_t)(rows * c), cap = n + (size_t)offset;
    float *fx, *fw, *fb;
    uint16_t *hx = rms ? gtu_randn_bf16(&rng, cap, 1.5f, 0.0f, &fx)
                       : gtu_randn_bf16(&rng, cap, 2.0f, 0.5f, &fx);
    uint16_t *hw = gtu_rand_bf16(&rng, (size_t)c, 0.5f, 1.5f, &fw);
    uint16_t *hb = gtu_rand_bf16(&rng, (size_t)c, -0.5f, 0.5f, &fb);
    uint16_t *d_x = (uint16_t *)gtu_dev_upload(hx, cap * 2);
    uint16_t *d_w = (uint16_t *)gtu_dev_upload(hw, (size_t)c * 2);
    uint16_t *d_b = (uint16_t *)gtu_dev_upload(hb, (size_t)c * 2);
    uint16_t *d_y = in_place ? d_x : (uint16_t *)gtu_dev_alloc(cap * 2);
    const float *x = fx + offset;

    float *ref = (float *)gtu_malloc(n * sizeof(float));
    vox_tensor ty = gtu_cpu_tensor(ref, VOX_DTYPE_F32, rows, c);
    vox_tensor tx = gtu_cpu_tensor((void *)x, VOX_DTYPE_F32, rows, c);
    vox_tensor tw = gtu_cpu_tensor(fw, VOX_DTYPE_F32, 1, c);
    vox_tensor tb = gtu_cpu_tensor(fb, VOX_DTYPE_F32, 1, c);
    if (rms) {
        cpu->rms_norm(cpu, &ty, &tx, &tw, EPS);
        vox_k_rms_norm(d_y + offset, d_x + offset, d_w, rows, c, EPS, 0);
    } else {
        cpu->layer_norm(cpu, &ty, &tx, &tw, &tb, EPS);
        vox_k_layer_norm(d_y + offset, d_x + offset, d_w, d_b, rows, c, EPS, 0);
    }
    float *got = gtu_download_bf16_as_f32(d_y + offset, n);
    if (rms)
        gtu_compare(what, got, ref, n, 1e-4, 2 * U_BF16 + 1.0 / (1 << 20));
    else
        gtu_compare(what, got, ref, n, 1e-4, U_BF16);
    gtu_check_nonzero(what, got, n);

    if (rms) { /* transformers: h = (x * rsqrt(mean(x^2) + eps)).to(bf16); w * h in bf16 */
        size_t mism = 0;
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = x + r * c;
            double ss = 0;
            for (int64_t i = 0; i < c; i++) ss += (double)xr[i] * xr[i];
            float inv = (float)(1.0 / sqrt(ss / (double)c + EPS));
            for (int64_t i = 0; i < c; i++) {
                float h = vox_bf16_to_f32(vox_f32_to_bf16(xr[i] * inv));
                mism += vox_f32_to_bf16(fw[i] * h) != vox_f32_to_bf16(got[r * c + i]);
            }
        }
        CHECK_MSG(mism <= 1 + n / 100, "%s: %zu of %zu elements differ from transformers' rounding",
                  what, mism, n);
    }

    free(hx), free(hw), free(hb), free(fx), free(fw), free(fb), free(ref), free(got);
    if (!in_place) gtu_dev_free(d_y);
    gtu_dev_free(d_x), gtu_dev_free(d_w), gtu_dev_free(d_b);
}

static void time_norms(void) {
    const int64_t max_n = 6000 * 1280 > 4096 * 3072 ? 6000 * 1280 : 4096 * 3072;
    uint16_t *d_x = (uint16_t *)gtu_dev_alloc((size_t)max_n * 2);
    uint16_t *d_w = (uint16_t *)gtu_dev_alloc(5120 * 2);
    GTU_CUDA(cudaMemset(d_x, 0, (size_t)max_n * 2));
    GTU_CUDA(cudaMemset(d_w, 0, 5120 * 2));
    const struct {
        int rms;
        int64_t rows, c;
    } cases[] = {{0, 1500, 1280}, {0, 6000, 1280}, {1, 1, 3072}, {1, 17, 3072}, {1, 512, 3072},
                 {1, 4096, 3072}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double us;
        if (cases[i].rms)
            GTU_TIME_US(us, 50, vox_k_rms_norm(d_x, d_x, d_w, cases[i].rows, cases[i].c, EPS, 0));
        else
            GTU_TIME_US(us, 50, vox_k_layer_norm(d_x, d_x, d_w, d_w, cases[i].rows, cases[i].c, EPS, 0));
        printf("  time %-10s %5lld x %-5lld: %7.2f us, %6.0f GB/s\n",
               cases[i].rms ? "rms_norm" : "layer_norm", (long long)cases[i].rows,
               (long long)cases[i].c, us, 4.0 * cases[i].rows * cases[i].c / us / 1e3);
    }
    gtu_dev_free(d_x), gtu_dev_free(d_w);
}

int main(void) {
    gtu_require_device();
    cpu = gtu_cpu_backend();
    rng = gtu_rng_seed(424242);

    const int64_t rows[] = {1, 3, 17, 1500};
    const int64_t widths[] = {1,    7,     64,    127,   1280,  2048, 3072,
                              5120, 16384, 32768, 32776, 40000, 70000};
    for (int rms = 0; rms <= 1; rms++) {
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
            for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
                if (rows[r] > 17 && widths[w] > 5120) continue; /* keep the reference quick */
                test_norm(rms, rows[r], widths[w], 0, 0);
                test_norm(rms, rows[r], widths[w], 1, 0);
            }
        test_norm(rms, 17, 1280, 0, 1);
        test_norm(rms, 17, 3072, 1, 1);
    }
    time_norms();

    vox_backend_destroy(cpu);
    return test_finish("test_kernels_norm");
}
