// Device-side positions: values kernels take from device memory so that a captured CUDA graph
// can replay a decode step at a new position.
#include "kernels.h"

namespace {

__global__ void fill_i32_kernel(int32_t *dst, int32_t value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = value;
}

__global__ void set_position_kernel(int64_t *pos, int32_t *lens, int64_t pos0, int32_t len, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) *pos = pos0;
    if (i < n) lens[i] = len;
}

}  // namespace

extern "C" void vox_k_fill_i32(int32_t *dst, int32_t value, int n, cudaStream_t stream) {
    if (n <= 0) return;
    fill_i32_kernel<<<(n + 255) / 256, 256, 0, stream>>>(dst, value, n);
}

extern "C" void vox_k_set_position(int64_t *pos_dev, int32_t *kv_len_dev, int64_t pos0,
                                   int32_t kv_len, int n, cudaStream_t stream) {
    int threads = n > 1 ? n : 1;
    set_position_kernel<<<(threads + 255) / 256, 256, 0, stream>>>(pos_dev, kv_len_dev, pos0,
                                                                   kv_len, n);
}
