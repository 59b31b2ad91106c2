/* How the CUDA backend describes its GEMMs to cuBLASLt (private to the backend, and to the tools
 * that must time exactly what it runs: tests/gpu/time_gemm_algos.c).
 *
 * The product y [M, N] = x [M, K] @ w [N, K]^T is, in cuBLAS's column-major view,
 * Y' [N, M] = W'^T X' with W' = w as [K, N] and X' = x as [K, M]: A transposed, B not, fp32
 * compute and scale type. Call only after vox_cublaslt_load() succeeded. */
#ifndef VOX_BACKEND_CUBLASLT_SETUP_H
#define VOX_BACKEND_CUBLASLT_SETUP_H

#include <stdbool.h>
#include <stddef.h>

#include <cublasLt.h>

/* The product's descriptor; with w_scale and x_scale (FP8 inputs), each element (n, m) of the
 * product is multiplied by w_scale[n] * x_scale[m] (outer-vector scaling). Destroy it with
 * cublasLtMatmulDescDestroy. */
cublasLtMatmulDesc_t vox_lt_product_desc(const float *w_scale, const float *x_scale);

/* The algorithm preference: at most workspace_bytes of workspace, and split-K partial sums only
 * in fp32 (a reduction in the output type, bf16, rounds every partial sum: measured at twice the
 * error of one rounding on K = 515); with split_k false, no algorithm that reduces partial sums
 * at all (no split-K GEMM and its separate reduction kernel). Destroy it with
 * cublasLtMatmulPreferenceDestroy. */
cublasLtMatmulPreference_t vox_lt_preference(size_t workspace_bytes, bool split_k);

#endif
