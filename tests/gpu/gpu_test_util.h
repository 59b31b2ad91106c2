/* Helpers for the GPU tests (tests/gpu/test_*.c, compiled as C and linked to vox_pipeline).
 *
 *   gtu_require_device()        skip (exit 77) with "SKIPPED: no CUDA device: <reason>" when
 *                               cudaGetDeviceCount fails or finds none; prints the device used;
 *                               line-buffers stdout (call it before any output)
 *   GTU_CUDA(call)              abort the test (exit 1) on a CUDA error, with file:line
 *   gtu_rng / gtu_rand_*        a fixed-seed generator (splitmix64): uniform floats, bf16
 *                               buffers whose float mirror holds the exact bf16 values
 *   gtu_dev_upload/alloc/free   device buffers (cudaMalloc: tests only, never the product)
 *   gtu_download_bf16_as_f32    device bf16 -> host float (synchronises)
 *   gtu_compare                 every element |got - ref| <= atol + rtol*|ref|, NaN/Inf caught;
 *                               one CHECK per call, the worst elements printed on failure
 *   gtu_compare_bound           the same with a bound per element
 *   gtu_frac_exact              fraction of bit-identical bf16 values (rounding-sequence checks)
 *   gtu_check_nonzero           rejects an all-zero output (a kernel that wrote nothing)
 *   gtu_cpu_tensor              a vox_tensor descriptor over host memory, for the CPU backend
 *   GTU_TIME_US(us, iters, stmt) us = mean device time of stmt in microseconds (events)
 *
 * bf16 values are handled as raw uint16_t words on the host (common/dtype.h converts them). */
#ifndef VOX_GPU_TEST_UTIL_H
#define VOX_GPU_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "backend/backend.h"
#include "common/dtype.h"
#include "harness.h"

/* ---- device ---------------------------------------------------------------------------------- */

#define GTU_CUDA(call)                                                                       \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            fprintf(stderr, "%s:%d: CUDA error %s: %s (in %s)\n", __FILE__, __LINE__,        \
                    cudaGetErrorName(e_), cudaGetErrorString(e_), #call);                    \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

/* Launch errors, then execution errors, of everything enqueued so far. */
#define GTU_SYNC_CHECK()                                                                     \
    do {                                                                                     \
        GTU_CUDA(cudaGetLastError());                                                        \
        GTU_CUDA(cudaDeviceSynchronize());                                                   \
    } while (0)

static inline void gtu_require_device(void) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* a log cut by a crash still ends at the last line reached */
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) TEST_SKIP("no CUDA device: %s", cudaGetErrorString(e));
    if (n == 0) TEST_SKIP("no CUDA device: cudaGetDeviceCount found none");
    struct cudaDeviceProp p;
    GTU_CUDA(cudaGetDeviceProperties(&p, 0));
    GTU_CUDA(cudaSetDevice(0));
    printf("device 0: %s, sm_%d%d, %d SMs\n", p.name, p.major, p.minor, p.multiProcessorCount);
}

/* ---- deterministic random numbers ------------------------------------------------------------ */

typedef struct {
    uint64_t s;
} gtu_rng;

static inline gtu_rng gtu_rng_seed(uint64_t seed) {
    gtu_rng r = {seed};
    return r;
}

static inline uint64_t gtu_next_u64(gtu_rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static inline float gtu_uniform(gtu_rng *r, float lo, float hi) {
    double u = (double)(gtu_next_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(lo + (hi - lo) * u);
}

/* Standard normal (Box-Muller), for activations shaped like a model's. */
static inline float gtu_normal(gtu_rng *r) {
    double u1 = ((double)(gtu_next_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (double)(gtu_next_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static inline void *gtu_malloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* n bf16 words uniform in [lo, hi); when mirror is not NULL, *mirror gets a malloc'd float copy
 * holding exactly the bf16 values (the CPU reference's input). Free both with free(). */
static inline uint16_t *gtu_rand_bf16(gtu_rng *r, size_t n, float lo, float hi, float **mirror) {
    uint16_t *h = (uint16_t *)gtu_malloc(n * sizeof *h);
    float *f = mirror ? (float *)gtu_malloc(n * sizeof *f) : NULL;
    for (size_t i = 0; i < n; i++) {
        h[i] = vox_f32_to_bf16(gtu_uniform(r, lo, hi));
        if (f) f[i] = vox_bf16_to_f32(h[i]);
    }
    if (mirror) *mirror = f;
    return h;
}

/* The same with normal values times `scale` (plus `shift`). */
static inline uint16_t *gtu_randn_bf16(gtu_rng *r, size_t n, float scale, float shift,
                                       float **mirror) {
    uint16_t *h = (uint16_t *)gtu_malloc(n * sizeof *h);
    float *f = mirror ? (float *)gtu_malloc(n * sizeof *f) : NULL;
    for (size_t i = 0; i < n; i++) {
        h[i] = vox_f32_to_bf16(shift + scale * gtu_normal(r));
        if (f) f[i] = vox_bf16_to_f32(h[i]);
    }
    if (mirror) *mirror = f;
    return h;
}

static inline float *gtu_rand_f32(gtu_rng *r, size_t n, float lo, float hi) {
    float *f = (float *)gtu_malloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++) f[i] = gtu_uniform(r, lo, hi);
    return f;
}

static inline float *gtu_bf16_to_f32_host(const uint16_t *h, size_t n) {
    float *f = (float *)gtu_malloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++) f[i] = vox_bf16_to_f32(h[i]);
    return f;
}

/* Rounds every element of f to bf16 in place (the torch rounding the kernels reproduce). */
static inline void gtu_round_bf16_inplace(float *f, size_t n) {
    for (size_t i = 0; i < n; i++) f[i] = vox_bf16_to_f32(vox_f32_to_bf16(f[i]));
}

/* ---- device buffers -------------------------------------------------------------------------- */

static inline void *gtu_dev_alloc(size_t bytes) {
    void *d = NULL;
    GTU_CUDA(cudaMalloc(&d, bytes ? bytes : 1));
    return d;
}

static inline void *gtu_dev_upload(const void *host, size_t bytes) {
    void *d = gtu_dev_alloc(bytes);
    if (bytes) GTU_CUDA(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    return d;
}

static inline void gtu_dev_free(void *d) { GTU_CUDA(cudaFree(d)); }

/* Synchronises, reports any pending kernel error, then copies back. */
static inline void gtu_download(void *host, const void *dev, size_t bytes) {
    GTU_SYNC_CHECK();
    if (bytes) GTU_CUDA(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
}

/* n bf16 elements of device memory as a malloc'd float array. */
static inline float *gtu_download_bf16_as_f32(const void *dev, size_t n) {
    uint16_t *h = (uint16_t *)gtu_malloc(n * sizeof *h);
    gtu_download(h, dev, n * sizeof *h);
    float *f = gtu_bf16_to_f32_host(h, n);
    free(h);
    return f;
}

/* ---- comparison ------------------------------------------------------------------------------ */

/* The check behind gtu_compare and gtu_compare_bound: element i passes when |got - ref| <= its
 * tolerance, bound[i] when bound is given, else atol + rtol*|ref[i]| (a NaN or Inf in got where
 * ref is finite fails). */
static inline int gtu_compare_impl(const char *what, const float *got, const float *ref, size_t n,
                                   double atol, double rtol, const float *bound) {
    size_t bad = 0, worst = 0;
    double worst_ratio = 0, max_abs = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i], d = fabs(g - r);
        double tol = bound ? (double)bound[i] : atol + rtol * fabs(r);
        int ok = (d <= tol) || (g == r); /* g == r also covers equal infinities */
        if (isnan(g) || (isinf(g) && g != r)) ok = 0;
        double ratio = isfinite(d) ? d / (tol > 0 ? tol : 1e-300) : INFINITY;
        if (!ok) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: got %.9g, ref %.9g, |diff| %.3g > %s %.3g\n", what, i,
                        g, r, d, bound ? "bound" : "tol", tol);
            bad++;
        }
        if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
        if (isfinite(d) && d > max_abs) max_abs = d;
    }
    vox_test_checks++;
    if (bad) {
        vox_test_failures++;
        if (bound)
            fprintf(stderr, "%s: %zu of %zu elements outside their bound (worst [%zu])\n", what, bad,
                    n, worst);
        else
            fprintf(stderr, "%s: %zu of %zu elements outside atol %.3g + rtol %.3g*|ref| (worst "
                            "[%zu]: got %.9g ref %.9g)\n",
                    what, bad, n, atol, rtol, worst, n ? got[worst] : 0.0, n ? ref[worst] : 0.0);
        return 0;
    }
    printf("  ok %-44s n=%-9zu max|diff| %.3g, worst at %.2f of tolerance\n", what, n, max_abs,
           worst_ratio);
    return 1;
}

/* Checks |got[i] - ref[i]| <= atol + rtol*|ref[i]| for every i (a NaN or Inf in got where ref is
 * finite fails). Counts as one CHECK; on failure prints how many elements failed and the worst
 * few, by excess over the tolerance. Returns 1 when all passed. Always reports the largest error
 * relative to the tolerance, so a passing run shows its margin. */
static inline int gtu_compare(const char *what, const float *got, const float *ref, size_t n,
                              double atol, double rtol) {
    return gtu_compare_impl(what, got, ref, n, atol, rtol, NULL);
}

/* The same with a tolerance per element: |got[i] - ref[i]| <= bound[i] (for ops whose error
 * scales with intermediate terms rather than with the result, such as a rotation). */
static inline int gtu_compare_bound(const char *what, const float *got, const float *ref,
                                    const float *bound, size_t n) {
    return gtu_compare_impl(what, got, ref, n, 0.0, 0.0, bound);
}

/* Fraction of elements whose bf16 patterns agree exactly (got and want both hold bf16 values):
 * for checking that a kernel reproduces a rounding sequence, against a host emulation of it. */
static inline double gtu_frac_exact(const float *got, const float *want, size_t n) {
    size_t same = 0;
    for (size_t i = 0; i < n; i++) same += vox_f32_to_bf16(got[i]) == vox_f32_to_bf16(want[i]);
    return n ? (double)same / (double)n : 1.0;
}

/* Fails when every element is zero (or n is 0): a kernel that never wrote its output. */
static inline int gtu_check_nonzero(const char *what, const float *got, size_t n) {
    size_t nz = 0;
    for (size_t i = 0; i < n; i++) nz += got[i] != 0.0f;
    CHECK_MSG(nz > 0, "%s: all %zu elements are zero", what, n);
    return nz > 0;
}

/* ---- CPU reference tensors ------------------------------------------------------------------- */

/* A descriptor over host memory (no allocation) for the CPU backend's operations. */
static inline vox_tensor gtu_cpu_tensor(void *data, vox_dtype dtype, int64_t rows, int64_t cols) {
    vox_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.ndim = 2;
    t.shape[0] = rows;
    t.shape[1] = cols;
    return t;
}

static inline vox_backend *gtu_cpu_backend(void) {
    vox_backend *be = NULL;
    vox_error err;
    memset(&err, 0, sizeof err);
    if (vox_backend_cpu_create(&be, &err) != VOX_OK) {
        fprintf(stderr, "cannot create the CPU backend\n");
        exit(1);
    }
    return be;
}

/* ---- timing ---------------------------------------------------------------------------------- */

/* us = mean device microseconds of `stmt` (enqueued on the default stream) over `iters` runs,
 * after one warm-up run. */
#define GTU_TIME_US(us, iters, stmt)                                                         \
    do {                                                                                     \
        cudaEvent_t a_, b_;                                                                  \
        GTU_CUDA(cudaEventCreate(&a_));                                                      \
        GTU_CUDA(cudaEventCreate(&b_));                                                      \
        stmt;                                                                                \
        GTU_CUDA(cudaEventRecord(a_, 0));                                                    \
        for (int it_ = 0; it_ < (iters); it_++) stmt;                                        \
        GTU_CUDA(cudaEventRecord(b_, 0));                                                    \
        GTU_SYNC_CHECK();                                                                    \
        float ms_ = 0;                                                                       \
        GTU_CUDA(cudaEventElapsedTime(&ms_, a_, b_));                                        \
        GTU_CUDA(cudaEventDestroy(a_));                                                      \
        GTU_CUDA(cudaEventDestroy(b_));                                                      \
        (us) = (double)ms_ * 1000.0 / (iters);                                               \
    } while (0)

#endif
