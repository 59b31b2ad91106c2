/* cuBLASLt loaded at run time (src/backend/cublaslt_loader.h), without a GPU: the library loads,
 * every function cuda.c calls forwards to it (the descriptor calls need no device), and loading
 * twice is loading once; the names of cuBLAS statuses in messages. Skips in a build without the
 * CUDA backend. */
#include "harness.h"

#ifdef VOX_HAVE_CUDA
#include <cublasLt.h>
#include <string.h>

#include "backend/cublaslt_loader.h"

int main(void) {
    /* the status names of the CUDA backend's messages (no library needed) */
    static const struct { int status; const char *name; } names[] = {
        {CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED"},
        {CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE"},
        {CUBLAS_STATUS_SUCCESS, "CUBLAS_STATUS_SUCCESS"},
        {12345, "cuBLAS status 12345"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        CHECK_MSG(strcmp(vox_cublas_status_name(names[i].status), names[i].name) == 0, "%d: %s",
                  names[i].status, vox_cublas_status_name(names[i].status));
    vox_error err = {0};
    CHECK_MSG(vox_cublaslt_load(&err) == VOX_OK, "%s", err.msg);
    CHECK(vox_cublaslt_load(&err) == VOX_OK);
    cublasLtMatmulDesc_t desc = NULL;
    cublasLtMatrixLayout_t layout = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasOperation_t op = CUBLAS_OP_T;
    size_t ws = 1 << 20;
    CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op, sizeof op) ==
          CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16BF, 64, 32, 64) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                               sizeof ws) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtMatmulPreferenceDestroy(pref) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtMatrixLayoutDestroy(layout) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtMatmulDescDestroy(desc) == CUBLAS_STATUS_SUCCESS);
    /* without a device it says so, through the forwarder */
    cublasLtHandle_t h = NULL;
    cublasStatus_t st = cublasLtCreate(&h);
    CHECK(st == CUBLAS_STATUS_SUCCESS || st == CUBLAS_STATUS_NOT_INITIALIZED);
    if (st == CUBLAS_STATUS_SUCCESS) CHECK(cublasLtDestroy(h) == CUBLAS_STATUS_SUCCESS);
    return test_finish("test_backend_cublaslt_loader");
}
#else
int main(void) { TEST_SKIP("built without the CUDA backend"); }
#endif
