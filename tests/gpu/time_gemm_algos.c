/* Timing tool (not a test): how fast cuBLASLt runs the text decoder's projections at the row
 * counts of batched decode steps, with the algorithm its heuristic ranks first (what the backend
 * uses) against the best of the others it offers, and how close each gets to reading the weights
 * at the card's bandwidth. It decides whether timing the candidates once per shape (autotuning)
 * or a kernel of our own for skinny GEMMs is worth building (bench/NOTES-2026-12-02-*.md).
 *
 *   time_gemm_algos [--fp8 | --fp8-fp32] [--encoder] [--shape NAME] [--first] [--no-split]
 *                   [--workspace BYTES]
 *                   [M ...]   (default M: 8 16 32 64 128 206)
 *
 * --fp8: F8_E4M3 weights and inputs with outer-vector scales (the backend's fp8_gemm, issue 10's
 * scheme), bf16 out: whether cuBLASLt's FP8 GEMMs read half the bytes in less time at these row
 * counts. --fp8-fp32: F8_E4M3 without scales, float32 out (the backend's FP8_GEMM_EPILOGUE mode,
 * whose kernel then applies the row scales): the plain FP8 GEMMs, which cuBLASLt has more
 * candidates for. --encoder: the audio encoder's shapes instead (1280 wide; M = 1500 a chunk), e.g. to
 * run cuBLASLt's choices for an encoder group under compute-sanitizer on their own. --shape NAME: that
 * shape alone (e.g. gate|up); --first: the heuristic's first candidate alone; --workspace BYTES:
 * offer cuBLASLt that much workspace (the backend's VOX_GEMM_WORKSPACE; 0 rules out split-K and
 * stream-K), the three together being what a compute-sanitizer run of one GEMM wants. --no-split:
 * only algorithms that reduce no partial sums (the backend's VOX_GEMM_NO_SPLIT_ROWS).
 *
 * --k-slices S (bf16 only): the product as S slices of K in one strided-batched call (slice i:
 * columns i K/S .. of w and x), each slice's fp32 product written apart ([S, M, N]) and no split-K
 * reduction: whether o and down stream better that way, their partial sums left for a kernel of
 * ours to add (bench/NOTES-2026-12-06g.md section 4). The time is the GEMM's alone.
 *
 * Same call as the backend's lt_matmul (its descriptor and preference, cublaslt_setup.h): bf16
 * in and out, fp32 compute, W^T X in cuBLAS's column-major view, 32 MB workspace, fp32 split-K
 * reduction only. Weight copies rotate through
 * more than 512 MB so every call reads its weights from HBM, not L2. Prints one line per (shape,
 * M): the heuristic's first choice and the fastest candidate, us and GB/s of weights. */
#include <cublasLt.h>

#include "backend/cublaslt_loader.h"
#include "backend/cublaslt_setup.h"
#include "gpu_test_util.h"

#define WORKSPACE_BYTES (32u << 20)
#define MAX_ALGOS 16

typedef struct {
    const char *name;
    int64_t n, k;
} shape;

static const shape decoder_shapes[] = {
    {"qkv", 6144, 3072},    {"o", 3072, 4096},         {"gate|up", 16384, 3072},
    {"down", 3072, 8192},   {"lm_head", 131072, 3072},
};
static const shape encoder_shapes[] = {
    {"enc qkvo", 1280, 1280}, {"enc fc1", 5120, 1280}, {"enc fc2", 1280, 5120},
};
static bool fp8;      /* --fp8 or --fp8-fp32 */
static bool fp8_f32;  /* --fp8-fp32: no scales, float32 out */
static bool first_only;                       /* --first */
static bool no_split;                         /* --no-split: no split-K algorithms */
static size_t workspace_bytes = WORKSPACE_BYTES; /* --workspace */
static int k_slices;                          /* --k-slices S (0: off) */

static cublasLtHandle_t lt;
static void *workspace;

static float time_algo(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t la,
                       cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                       const cublasLtMatmulAlgo_t *algo, void **w, int copies, const void *x,
                       void *y) {
    const float one = 1.0f, zero = 0.0f;
    const int iters = 20;
    float best = 1e30f;
    cudaEvent_t a, b;
    GTU_CUDA(cudaEventCreate(&a));
    GTU_CUDA(cudaEventCreate(&b));
    for (int rep = 0; rep < 4; rep++) { /* the first repetition warms up */
        GTU_CUDA(cudaEventRecord(a, 0));
        for (int i = 0; i < iters; i++)
            if (cublasLtMatmul(lt, desc, &one, w[(rep * iters + i) % copies], la, x, lb, &zero, y,
                               lc, y, lc, algo, workspace, workspace_bytes, 0) !=
                CUBLAS_STATUS_SUCCESS)
                best = -1.0f;
        GTU_CUDA(cudaEventRecord(b, 0));
        GTU_CUDA(cudaEventSynchronize(b));
        float ms = 0.0f;
        GTU_CUDA(cudaEventElapsedTime(&ms, a, b));
        if (rep > 0 && best >= 0.0f && ms * 1000.0f / iters < best) best = ms * 1000.0f / iters;
    }
    GTU_CUDA(cudaEventDestroy(a));
    GTU_CUDA(cudaEventDestroy(b));
    return best;
}

/* A layout as a strided batch of `count` matrices, `stride` elements apart. */
static void set_batch(cublasLtMatrixLayout_t layout, int32_t count, int64_t stride) {
    cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
    cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                     sizeof stride);
}

static void run_shape(const shape *sh, int64_t M) {
    const size_t esize = fp8 ? 1 : 2; /* bytes an element of w and x */
    const size_t wbytes = (size_t)sh->n * sh->k * esize;
    int copies = (int)((512u << 20) / wbytes) + 2;
    if (copies > 64) copies = 64;
    void *w[64], *x, *y;
    for (int i = 0; i < copies; i++) {
        GTU_CUDA(cudaMalloc(&w[i], wbytes));
        GTU_CUDA(cudaMemset(w[i], 0x3c, wbytes)); /* bf16 ~0.011, E4M3 1.5: finite sums */
    }
    GTU_CUDA(cudaMalloc(&x, (size_t)M * sh->k * esize));
    GTU_CUDA(cudaMemset(x, 0x3c, (size_t)M * sh->k * esize));
    const int S = k_slices > 1 && sh->k % k_slices == 0 ? k_slices : 1;
    const bool sliced = k_slices > 0;
    const size_t ysize = fp8_f32 || sliced ? 4 : 2;
    GTU_CUDA(cudaMalloc(&y, (size_t)S * M * sh->n * ysize));
    float *w_scale = NULL, *x_scale = NULL; /* --fp8: row scales of w and x, all 1/1024 */
    if (fp8 && !fp8_f32) {
        const size_t ns = (size_t)(sh->n > M ? sh->n : M);
        float *ones = (float *)gtu_malloc(ns * sizeof(float));
        for (size_t i = 0; i < ns; i++) ones[i] = 1.0f / 1024;
        w_scale = (float *)gtu_dev_upload(ones, (size_t)sh->n * sizeof(float));
        x_scale = (float *)gtu_dev_upload(ones, (size_t)M * sizeof(float));
        free(ones);
    }
    const cudaDataType_t ab = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;

    /* the backend's description of the product (cublaslt_setup.h) */
    cublasLtMatmulDesc_t desc = vox_lt_product_desc(w_scale, x_scale);
    cublasLtMatrixLayout_t la, lb, lc;
    const uint64_t rows_k = (uint64_t)(sh->k / S);
    cublasLtMatrixLayoutCreate(&la, ab, rows_k, (uint64_t)sh->n, sh->k);
    cublasLtMatrixLayoutCreate(&lb, ab, rows_k, (uint64_t)M, sh->k);
    cublasLtMatrixLayoutCreate(&lc, fp8_f32 || sliced ? CUDA_R_32F : CUDA_R_16BF, (uint64_t)sh->n,
                               (uint64_t)M, sh->n);
    if (sliced) { /* slice i: K offset i * K/S in w and x, its own [M, N] of the fp32 output */
        set_batch(la, S, (int64_t)rows_k);
        set_batch(lb, S, (int64_t)rows_k);
        set_batch(lc, S, (int64_t)M * sh->n);
    }
    cublasLtMatmulPreference_t pref = vox_lt_preference(workspace_bytes, !no_split && !sliced);
    cublasLtMatmulHeuristicResult_t res[MAX_ALGOS];
    int found = 0;
    cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, first_only ? 1 : MAX_ALGOS, res,
                                   &found);

    float first = -1.0f, best = 1e30f;
    int best_i = -1;
    char all[2048] = "";
    for (int i = 0; i < found; i++) {
        float us = time_algo(desc, la, lb, lc, &res[i].algo, w, copies, x, y);
        if (i == 0) first = us;
        if (us > 0.0f && us < best) best = us, best_i = i;
        size_t len = strlen(all);
        snprintf(all + len, sizeof all - len, " %.1f (%.2f waves)", us, res[i].wavesCount);
    }
    const double gb = (double)wbytes / 1e9;
    if (found == 0) {
        printf("%-8s M=%-4lld %s: cuBLASLt offers no algorithm\n", sh->name, (long long)M,
               fp8_f32 ? "fp8 (fp32 out)" : fp8 ? "fp8" : "bf16");
        first = best = 1.0f;
    }
    if (sliced) printf("[%d K-slices, fp32 partials] ", S);
    printf("%-8s M=%-4lld heuristic %8.2f us %6.0f GB/s | best #%d of %d %8.2f us %6.0f GB/s "
           "(%+.1f%%) | all:%s\n",
           sh->name, (long long)M, first, gb / (first * 1e-6), best_i, found, best,
           gb / (best * 1e-6), 100.0 * (best - first) / first, all);
    fflush(stdout);

    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
    for (int i = 0; i < copies; i++) GTU_CUDA(cudaFree(w[i]));
    GTU_CUDA(cudaFree(x));
    GTU_CUDA(cudaFree(y));
    if (w_scale) gtu_dev_free(w_scale);
    if (x_scale) gtu_dev_free(x_scale);
}

int main(int argc, char **argv) {
    gtu_require_device();
    vox_error err;
    if (vox_cublaslt_load(&err)) {
        fprintf(stderr, "time_gemm_algos: %s\n", err.msg);
        return 1;
    }
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "time_gemm_algos: cublasLtCreate failed\n");
        return 1;
    }
    GTU_CUDA(cudaMalloc(&workspace, WORKSPACE_BYTES));
    int64_t ms[32] = {8, 16, 32, 64, 128, 206};
    const char *only_shape = NULL;
    int n_m = 0;
    const shape *shapes = decoder_shapes;
    size_t n_shapes = sizeof decoder_shapes / sizeof decoder_shapes[0];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fp8") == 0) {
            fp8 = true;
        } else if (strcmp(argv[i], "--fp8-fp32") == 0) {
            fp8 = fp8_f32 = true;
        } else if (strcmp(argv[i], "--encoder") == 0) {
            shapes = encoder_shapes;
            n_shapes = sizeof encoder_shapes / sizeof encoder_shapes[0];
        } else if (strcmp(argv[i], "--no-split") == 0) {
            no_split = true;
        } else if (strcmp(argv[i], "--k-slices") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            k_slices = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--first") == 0) {
            first_only = true;
        } else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
            only_shape = argv[++i];
        } else if (strcmp(argv[i], "--workspace") == 0 && i + 1 < argc &&
                   strtoull(argv[i + 1], NULL, 10) <= WORKSPACE_BYTES) {
            workspace_bytes = (size_t)strtoull(argv[++i], NULL, 10);
        } else if (atoll(argv[i]) > 0 && n_m < 32) {
            ms[n_m++] = atoll(argv[i]);
        } else {
            fprintf(stderr, "usage: time_gemm_algos [--fp8 | --fp8-fp32] [--encoder] [--shape NAME] "
                            "[--first] [--no-split] [--k-slices S] [--workspace BYTES <= %u] [M ...]\n", WORKSPACE_BYTES);
            return 2;
        }
    }
    if (n_m == 0) n_m = 6;
    if (k_slices && fp8) {
        fprintf(stderr, "time_gemm_algos: --k-slices is for bf16 weights\n");
        return 2;
    }
    printf("%s weights and inputs%s\n",
           fp8_f32 ? "F8_E4M3 (no scales, float32 out)" : fp8 ? "F8_E4M3 (outer-vector scales)" : "bf16",
           shapes == encoder_shapes ? ", the audio encoder's shapes" : "");
    printf("workspace %zu bytes%s\n", workspace_bytes, first_only ? ", the heuristic's first candidate alone" : "");
    for (size_t s = 0; s < n_shapes; s++)
        for (int i = 0; i < n_m; i++)
            if (!only_shape || strcmp(only_shape, shapes[s].name) == 0) run_shape(&shapes[s], ms[i]);
    return 0;
}
