/* cuBLASLt loaded at run time (cublaslt_loader.h): the library's functions that cuda.c calls,
 * each forwarding to the one dlsym found. A function cuda.c starts to call needs a line in
 * FUNCTIONS and one below. */
#ifdef VOX_HAVE_CUDA

#include "backend/cublaslt_loader.h"

#include <cublasLt.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define FUNCTIONS(X)                                                                           \
    X(cublasLtCreate)                                                                          \
    X(cublasLtDestroy)                                                                         \
    X(cublasLtMatmul)                                                                          \
    X(cublasLtMatmulAlgoGetHeuristic)                                                          \
    X(cublasLtMatmulDescCreate)                                                                \
    X(cublasLtMatmulDescDestroy)                                                               \
    X(cublasLtMatmulDescSetAttribute)                                                          \
    X(cublasLtMatmulPreferenceCreate)                                                          \
    X(cublasLtMatmulPreferenceDestroy)                                                         \
    X(cublasLtMatmulPreferenceSetAttribute)                                                    \
    X(cublasLtMatrixLayoutCreate)                                                              \
    X(cublasLtMatrixLayoutDestroy)                                                             \
    X(cublasLtMatrixLayoutSetAttribute)

static struct {
#define FIELD(f) __typeof__(&f) f;
    FUNCTIONS(FIELD)
#undef FIELD
} lt;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static vox_status load_status = VOX_ERR_INTERNAL;
static char load_error[VOX_ERROR_MSG_MAX];

static void load(void) {
    char name[32];
    snprintf(name, sizeof name, "libcublasLt.so.%d", CUBLAS_VER_MAJOR);
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL); /* never closed: it serves until exit */
    if (!lib) {
        load_status = VOX_ERR_DEVICE;
        snprintf(load_error, sizeof load_error,
                 "cannot load %s (the CUDA Toolkit's cuBLAS; its directory must be on the "
                 "loader's path): %s", name, dlerror());
        return;
    }
    /* POSIX's way to assign dlsym's object pointer to a function pointer */
#define RESOLVE(f)                                                                             \
    if (!(*(void **)&lt.f = dlsym(lib, #f))) {                                                 \
        load_status = VOX_ERR_DEVICE;                                                          \
        snprintf(load_error, sizeof load_error, "%s has no %s", name, #f);                     \
        return;                                                                                \
    }
    FUNCTIONS(RESOLVE)
#undef RESOLVE
    load_status = VOX_OK;
}

vox_status vox_cublaslt_load(vox_error *err) {
    pthread_once(&once, load);
    if (load_status) return vox_fail(err, load_status, "%s", load_error);
    return VOX_OK;
}

const char *vox_cublas_status_name(int status) {
    switch (status) {
#define NAME(s)                                                                                \
    case s: return #s;
        NAME(CUBLAS_STATUS_SUCCESS)
        NAME(CUBLAS_STATUS_NOT_INITIALIZED)
        NAME(CUBLAS_STATUS_ALLOC_FAILED)
        NAME(CUBLAS_STATUS_INVALID_VALUE)
        NAME(CUBLAS_STATUS_ARCH_MISMATCH)
        NAME(CUBLAS_STATUS_MAPPING_ERROR)
        NAME(CUBLAS_STATUS_EXECUTION_FAILED)
        NAME(CUBLAS_STATUS_INTERNAL_ERROR)
        NAME(CUBLAS_STATUS_NOT_SUPPORTED)
        NAME(CUBLAS_STATUS_LICENSE_ERROR)
#undef NAME
    }
    static char other[32];
    snprintf(other, sizeof other, "cuBLAS status %d", status);
    return other;
}

/* ---- the forwarders: the prototypes are cublasLt.h's ---------------------------------------- */

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) { return lt.cublasLtCreate(h); }
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) { return lt.cublasLtDestroy(h); }

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                              cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                              cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
    return lt.cublasLtMatmul(h, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
                             workspace, workspace_bytes, stream);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t Adesc,
                                              cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc,
                                              cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *returned) {
    return lt.cublasLtMatmulAlgoGetHeuristic(h, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requested,
                                             results, returned);
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
    return lt.cublasLtMatmulDescCreate(desc, compute, scale);
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
    return lt.cublasLtMatmulDescDestroy(desc);
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t size) {
    return lt.cublasLtMatmulDescSetAttribute(desc, attr, buf, size);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
    return lt.cublasLtMatmulPreferenceCreate(pref);
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
    return lt.cublasLtMatmulPreferenceDestroy(pref);
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t size) {
    return lt.cublasLtMatmulPreferenceSetAttribute(pref, attr, buf, size);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
    return lt.cublasLtMatrixLayoutCreate(layout, type, rows, cols, ld);
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
    return lt.cublasLtMatrixLayoutDestroy(layout);
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t size) {
    return lt.cublasLtMatrixLayoutSetAttribute(layout, attr, buf, size);
}

#endif /* VOX_HAVE_CUDA */
