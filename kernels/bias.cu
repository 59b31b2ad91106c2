// Rounding a float32 GEMM result to bf16 with the bias added first: the single rounding that
// cuBLASLt's bias epilogue gives on aligned shapes, for the shapes where it does not.
#include <cuda_bf16.h>

#include "kernels.h"

namespace {

__global__ void add_bias_round_kernel(__nv_bfloat16 *y, const float *acc, const __nv_bfloat16 *bias,
                                      int64_t m, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m * n) return;
    float v = acc[i];
    if (bias) v += __bfloat162float(bias[i % n]);
    y[i] = __float2bfloat16_rn(v);
}

}  // namespace

extern "C" void vox_k_add_bias_round(void *y_bf16, const float *acc, const void *bias_bf16,
                                     int64_t m, int64_t n, cudaStream_t stream) {
    int64_t total = m * n;
    if (total <= 0) return;
    add_bias_round_kernel<<<(unsigned)((total + 255) / 256), 256, 0, stream>>>(
        (__nv_bfloat16 *)y_bf16, acc, (const __nv_bfloat16 *)bias_bf16, m, n);
}
