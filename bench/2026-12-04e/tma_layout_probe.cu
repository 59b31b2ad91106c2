// Probe for the next device session (bench/NOTES-2026-12-04e.md section 3): can one TMA copy put
// a page of 8 weight rows into shared memory in wgmma's "K-major, 128-byte swizzle" layout?
//
// The persistent decode kernel's ring holds a page as 8 rows of 2048 contiguous bytes, one bulk
// copy a row. wgmma (the only way to Hopper's FP8 tensor cores) wants B = 8 rows x K as 1024-byte
// atoms: for each 128-byte column block j, the 8 rows' 128 bytes, each row's 16-byte pieces
// swizzled (piece c of row r at c ^ r). A 3-D tensor map whose dimensions are (128 bytes of a
// row, row, column block), strides (K bytes, 128 bytes), box (128, 8, 16), lays a page out
// exactly so, in one copy. Its strides are not increasing, which cuda.h's description of
// cuTensorMapEncodeTiled does not promise to accept; this says whether the driver does, and
// whether the copy lands as expected, including a page that runs past the row's end (zeros).
// The 2-D map (K bytes, rows), box (128, 8), 16 copies a page, is the fallback and is checked too.
//
// Build: nvcc -arch=sm_90a -o tma_layout_probe bench/2026-12-04e/tma_layout_probe.cu
// Run: ./tma_layout_probe (prints one line a case and exits 1 on any mismatch).
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                    CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                    CUtensorMapFloatOOBfill);

constexpr int kRows = 16, kK = 3072; // two units of an FP8 row of K = 3072: 24 column blocks
constexpr int kPage = 16384;

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

// One page: (row0, block0) of the 3-D map in one copy, or 16 copies of the 2-D map.
// *landed: whether the mbarrier saw all kPage bytes (a box past the tensor's end is expected to
// count its zero-filled bytes too; if it does not, the wait gives up instead of hanging).
__global__ void copy_page(const __grid_constant__ CUtensorMap map, int dims, int row0, int block0,
                          unsigned char *out, int *landed) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    // the swizzle's 1024-byte period counts from address 0: the page aligned by hand (+1024 bytes)
    unsigned char *smem = (unsigned char *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    __shared__ __align__(8) uint64_t bar;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bar)));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&bar)), "r"(kPage)
                     : "memory");
        if (dims == 3) {
            asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_u32(smem)),
                         "l"(&map), "r"(0), "r"(row0), "r"(block0), "r"(smem_u32(&bar))
                         : "memory");
        } else {
            for (int j = 0; j < 16; j++)
                asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                             " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_u32(smem + j * 1024)),
                             "l"(&map), "r"((block0 + j) * 128), "r"(row0), "r"(smem_u32(&bar))
                             : "memory");
        }
        uint32_t done = 0;
        for (long spin = 0; !done && spin < (1l << 24); spin++)
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                         : "=r"(done)
                         : "r"(smem_u32(&bar))
                         : "memory");
        *landed = (int)done;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < kPage; i += blockDim.x) out[i] = smem[i];
#endif
}

static unsigned char value(int r, int k) { return (unsigned char)((r * 131 + k * 7 + (k >> 8)) & 0xff); }

// Expected byte at page offset o: block j, row r, swizzled piece.
static int expected(int o, int row0, int block0) {
    const int j = o / 1024, r = (o / 128) % 8, piece = (o / 16) % 8, b = o % 16;
    const int c = piece ^ r; // the piece stored here
    const int k = (block0 + j) * 128 + c * 16 + b;
    if (k >= kK) return 0; // past the row's end: zero-filled
    return value(row0 + r, k);
}

int main(void) {
    encode_tiled_fn encode = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&encode, 12000, cudaEnableDefault, &q) !=
            cudaSuccess ||
        !encode) {
        printf("no cuTensorMapEncodeTiled\n");
        return 1;
    }
    unsigned char *host = (unsigned char *)malloc(kRows * kK), *dev, *out;
    int *landed;
    cudaMalloc(&landed, sizeof(int));
    for (int r = 0; r < kRows; r++)
        for (int k = 0; k < kK; k++) host[r * kK + k] = value(r, k);
    cudaMalloc(&dev, kRows * kK);
    cudaMalloc(&out, kPage);
    cudaMemcpy(dev, host, kRows * kK, cudaMemcpyHostToDevice);
    cudaFuncSetAttribute(copy_page, cudaFuncAttributeMaxDynamicSharedMemorySize, kPage + 1024);
    int failures = 0;
    for (int dims = 3; dims >= 2; dims--) {
        CUtensorMap map;
        CUresult rc;
        if (dims == 3) {
            const cuuint64_t gdim[3] = {128, kRows, kK / 128}, gstride[2] = {kK, 128};
            const cuuint32_t box[3] = {128, 8, 16}, estride[3] = {1, 1, 1};
            rc = encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, dev, gdim, gstride, box, estride,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        } else {
            const cuuint64_t gdim[2] = {kK, kRows}, gstride[1] = {kK};
            const cuuint32_t box[2] = {128, 8}, estride[2] = {1, 1};
            rc = encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, dev, gdim, gstride, box, estride,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        }
        printf("%d-D map: encode %s (%d)\n", dims, rc == CUDA_SUCCESS ? "accepted" : "refused", (int)rc);
        if (rc != CUDA_SUCCESS) {
            failures += dims == 2; // the 2-D map must work
            continue;
        }
        const int cases[2][2] = {{8, 0}, {8, 16}}; // a full page; a page with 8 blocks past the end
        for (int c = 0; c < 2; c++) {
            const int row0 = cases[c][0], block0 = cases[c][1];
            unsigned char got[kPage];
            int ok = 0;
            copy_page<<<1, 128, kPage + 1024>>>(map, dims, row0, block0, out, landed);
            cudaError_t e = cudaMemcpy(got, out, kPage, cudaMemcpyDeviceToHost);
            if (e == cudaSuccess) e = cudaMemcpy(&ok, landed, sizeof ok, cudaMemcpyDeviceToHost);
            if (e == cudaSuccess && !ok) printf("%d-D map: the barrier did not see %d bytes (the tx count of a box past the end?)\n", dims, kPage);
            int bad = 0, first = -1;
            for (int o = 0; o < kPage && e == cudaSuccess; o++)
                if (got[o] != expected(o, row0, block0)) bad++, first = first < 0 ? o : first;
            printf("%d-D map, rows %d-%d, column blocks %d-%d: %s", dims, row0, row0 + 7, block0, block0 + 15,
                   e != cudaSuccess ? cudaGetErrorString(e) : bad ? "MISMATCH" : "as expected");
            if (bad) printf(" (%d bytes differ, first at %d: got %d, expected %d)", bad, first, got[first],
                            expected(first, row0, block0));
            printf("\n");
            failures += bad || e != cudaSuccess || !ok;
        }
    }
    return failures ? 1 : 0;
}
