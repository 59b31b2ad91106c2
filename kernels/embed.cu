// Embedding gather: y[i] = table[ids[i]] (ids on the device, so a captured decode graph replays
// with the id the previous step sampled). One block per id, copying the row with 16-byte
// accesses when C % 8 == 0 and both pointers are 16-byte aligned, else 2-byte ones.
// The ids are trusted (the tokenizer and the sampler produce them below the vocabulary size).
#include "common.cuh"
#include "kernels.h"

namespace {

constexpr int kThreads = 128;

__global__ void embed_vec8_kernel(uint4 *__restrict__ y, const uint4 *__restrict__ table,
                                  const int32_t *__restrict__ ids, int64_t c_vec) {
    const int64_t id = ids[blockIdx.x];
    const uint4 *src = table + id * c_vec;
    uint4 *dst = y + (int64_t)blockIdx.x * c_vec;
    for (int64_t j = threadIdx.x; j < c_vec; j += blockDim.x) dst[j] = src[j];
}

__global__ void embed_scalar_kernel(vk_bf16 *__restrict__ y, const vk_bf16 *__restrict__ table,
                                    const int32_t *__restrict__ ids, int64_t c) {
    const int64_t id = ids[blockIdx.x];
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
        y[(int64_t)blockIdx.x * c + j] = table[id * c + j];
}

} // namespace

extern "C" void vox_k_embed(void *y_bf16, const void *table_bf16, const int32_t *ids_dev,
                            int64_t n, int64_t c, cudaStream_t stream) {
    if (n <= 0 || c <= 0) return;
    if (c % 8 == 0 && vk_aligned16(y_bf16) && vk_aligned16(table_bf16))
        embed_vec8_kernel<<<(unsigned)n, kThreads, 0, stream>>>(
            (uint4 *)y_bf16, (const uint4 *)table_bf16, ids_dev, c / 8);
    else
        embed_scalar_kernel<<<(unsigned)n, kThreads, 0, stream>>>(
            (vk_bf16 *)y_bf16, (const vk_bf16 *)table_bf16, ids_dev, c);
    VOX_K_LAUNCH_CHECK();
}
