// Device-side scalars: a fill of int32 values (the batch's positions, lengths and block tables
// reach the device through the backend's batch_set copy).
#include "kernels.h"

namespace {

__global__ void fill_i32_kernel(int32_t *dst, int32_t value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = value;
}

}  // namespace

extern "C" void vox_k_fill_i32(int32_t *dst, int32_t value, int n, cudaStream_t stream) {
    if (n <= 0) return;
    fill_i32_kernel<<<(n + 255) / 256, 256, 0, stream>>>(dst, value, n);
}
