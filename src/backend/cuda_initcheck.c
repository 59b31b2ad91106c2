/* NVTX memory marks for compute-sanitizer's initcheck (cuda_initcheck.h). */
#ifdef VOX_HAVE_CUDA

#include "backend/cuda_initcheck.h"

#include <pthread.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMemCudaRt.h>

static nvtxDomainHandle_t domain;
static pthread_once_t domain_once = PTHREAD_ONCE_INIT;

static void make_domain(void) { domain = nvtxDomainCreateA("voxtral_runner"); }

void vox_initcheck_mark(cudaStream_t stream, const void *ptr, size_t bytes) {
    if (!ptr || !bytes) return;
    pthread_once(&domain_once, make_domain);
    nvtxMemVirtualRangeDesc_t range = {.size = bytes, .ptr = ptr};
    nvtxMemMarkInitializedBatch_t batch = {
        .extCompatID = NVTX_EXT_COMPATID_MEM,
        .structSize = sizeof batch,
        .regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
        .regionDescCount = 1,
        .regionDescElementSize = sizeof range,
        .regionDescElements = &range,
    };
    nvtxMemCudaMarkInitialized(domain, stream, 0, &batch);
}

#endif /* VOX_HAVE_CUDA */
