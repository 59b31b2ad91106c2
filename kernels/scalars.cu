// Small device-side values written in stream order: positions and cache lengths that kernels
// read from device memory (so that a captured CUDA graph can replay with new values).
#include "kernels.h"

namespace {

__global__ void fill_i32_kernel(int32_t *dst, int32_t value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = value;
}

__global__ void set_i64_kernel(int64_t *dst, int64_t value) { *dst = value; }

__global__ void advance_kernel(int64_t *pos, int32_t *lens, int n) {
    int i = threadIdx.x;
    if (i < n) lens[i] += 1;
    if (i == 0) *pos += 1;
}

}  // namespace

extern "C" void vox_k_fill_i32(int32_t *dst, int32_t value, int n, cudaStream_t stream) {
    if (n <= 0) return;
    fill_i32_kernel<<<(n + 255) / 256, 256, 0, stream>>>(dst, value, n);
}

extern "C" void vox_k_set_i64(int64_t *dst, int64_t value, cudaStream_t stream) {
    set_i64_kernel<<<1, 1, 0, stream>>>(dst, value);
}

extern "C" void vox_k_advance_positions(int64_t *pos, int32_t *lens, int n, cudaStream_t stream) {
    advance_kernel<<<1, n > 0 ? ((n + 31) / 32) * 32 : 32, 0, stream>>>(pos, lens, n);
}
