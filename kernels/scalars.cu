// Device-side positions and the KV-cache append that reads them: values kernels take from
// device memory so that a captured CUDA graph can replay a decode step at a new position.
#include <cuda_bf16.h>

#include "kernels.h"

namespace {

__global__ void fill_i32_kernel(int32_t *dst, int32_t value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = value;
}

__global__ void set_i64_kernel(int64_t *dst, int64_t value) { *dst = value; }

__global__ void set_position_kernel(int64_t *pos, int32_t *lens, int64_t pos0, int32_t len, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) *pos = pos0;
    if (i < n) lens[i] = len;
}

__global__ void advance_kernel(int64_t *pos, int32_t *lens, int n) {
    int i = threadIdx.x;
    if (i < n) lens[i] += 1;
    if (i == 0) *pos += 1;
}

// One thread per 16 bytes (8 bf16) when rows are a multiple of 8 elements, else per element.
__global__ void kv_append_vec_kernel(uint4 *cache, const uint4 *src, int64_t total_vec,
                                     int64_t row_vec, const int64_t *pos) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total_vec) cache[*pos * row_vec + i] = src[i];
}

__global__ void kv_append_kernel(__nv_bfloat16 *cache, const __nv_bfloat16 *src, int64_t total,
                                 int64_t row, const int64_t *pos) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) cache[*pos * row + i] = src[i];
}

}  // namespace

extern "C" void vox_k_fill_i32(int32_t *dst, int32_t value, int n, cudaStream_t stream) {
    if (n <= 0) return;
    fill_i32_kernel<<<(n + 255) / 256, 256, 0, stream>>>(dst, value, n);
}

extern "C" void vox_k_set_i64(int64_t *dst, int64_t value, cudaStream_t stream) {
    set_i64_kernel<<<1, 1, 0, stream>>>(dst, value);
}

extern "C" void vox_k_set_position(int64_t *pos_dev, int32_t *kv_len_dev, int64_t pos0,
                                   int32_t kv_len, int n, cudaStream_t stream) {
    int threads = n > 1 ? n : 1;
    set_position_kernel<<<(threads + 255) / 256, 256, 0, stream>>>(pos_dev, kv_len_dev, pos0,
                                                                   kv_len, n);
}

extern "C" void vox_k_advance_positions(int64_t *pos, int32_t *lens, int n, cudaStream_t stream) {
    advance_kernel<<<1, n > 0 ? ((n + 31) / 32) * 32 : 32, 0, stream>>>(pos, lens, n);
}

extern "C" void vox_k_kv_append(void *cache_bf16, const void *src_bf16, int64_t t, int64_t c,
                                const int64_t *pos_dev, cudaStream_t stream) {
    int64_t total = t * c;
    if (total <= 0) return;
    bool vec = c % 8 == 0 && ((uintptr_t)cache_bf16 % 16) == 0 && ((uintptr_t)src_bf16 % 16) == 0;
    if (vec) {
        int64_t total_vec = total / 8;
        kv_append_vec_kernel<<<(unsigned)((total_vec + 255) / 256), 256, 0, stream>>>(
            (uint4 *)cache_bf16, (const uint4 *)src_bf16, total_vec, c / 8, pos_dev);
    } else {
        kv_append_kernel<<<(unsigned)((total + 255) / 256), 256, 0, stream>>>(
            (__nv_bfloat16 *)cache_bf16, (const __nv_bfloat16 *)src_bf16, total, c, pos_dev);
    }
}
