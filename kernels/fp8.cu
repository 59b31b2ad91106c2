// The FP8 scheme's kernels around cuBLASLt's FP8 GEMMs (prefill and batched decode):
//   vox_k_fp8_quantize_rows   bf16 rows -> E4M3 codes and one scale per row (the activations)
//   vox_k_fp8_scale_rows      y = bf16(acc * (s_x[row] * s_w[col])): the scales applied to a
//                             float32 GEMM result, where cuBLASLt has no outer-vector scaling
// Both give exactly the CPU reference's values for the same inputs (common/fp8.h, cpu.c).
#include "common.cuh"
#include "fp8.cuh"
#include "kernels.h"

namespace {

constexpr int kThreads = 256;

// Rows the vector path does not take: one block a row, its max |x| (exact in any order), then
// every element's code.
__global__ void __launch_bounds__(kThreads)
    quantize_rows_kernel(uint8_t *__restrict__ q, float *__restrict__ scale,
                         const vk_bf16 *__restrict__ x, int64_t k) {
    __shared__ float red[kThreads / 32];
    const int64_t row = blockIdx.x;
    const vk_bf16 *xr = x + row * k;
    float mx = 0.0f;
    for (int64_t i = threadIdx.x; i < k; i += kThreads) mx = fmaxf(mx, fabsf(vk_f(xr[i])));
    mx = vk_warp_max(mx);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
    __syncthreads();
    float amax = 0.0f;
    for (int w = 0; w < kThreads / 32; w++) amax = fmaxf(amax, red[w]);
    const float s = vk_fp8_scale(amax);
    if (threadIdx.x == 0) scale[row] = s;
    uint8_t *qr = q + row * k;
    for (int64_t i = threadIdx.x; i < k; i += kThreads) qr[i] = vk_fp8_quantize(vk_f(xr[i]), s);
}

__global__ void scale_rows_kernel(vk_bf16 *__restrict__ y, const float *__restrict__ acc,
                                  const float *__restrict__ x_scale,
                                  const float *__restrict__ w_scale, int64_t m, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m * n) return;
    const int64_t r = i / n, c = i % n;
    y[i] = vk_bf(acc[i] * (x_scale[r] * w_scale[c]));
}

} // namespace

extern "C" {

void vox_k_fp8_quantize_rows(uint8_t *q, float *scale, const void *x_bf16, int64_t rows, int64_t k,
                             cudaStream_t stream) {
    if (rows <= 0) return;
    // rows read once into registers, 16-byte loads (norm.cu's vector path), where it takes them
    if (vox_k_rms_norm_fp8(q, scale, nullptr, x_bf16, nullptr, rows, k, 0.0f, stream)) return;
    quantize_rows_kernel<<<(unsigned)rows, kThreads, 0, stream>>>(q, scale, (const vk_bf16 *)x_bf16, k);
    VOX_K_LAUNCH_CHECK();
}

void vox_k_fp8_scale_rows(void *y_bf16, const float *acc, const float *x_scale,
                          const float *w_scale, int64_t m, int64_t n, cudaStream_t stream) {
    if (m * n <= 0) return;
    scale_rows_kernel<<<(unsigned)vk_ceil_div(m * n, kThreads), kThreads, 0, stream>>>(
        (vk_bf16 *)y_bf16, acc, x_scale, w_scale, m, n);
    VOX_K_LAUNCH_CHECK();
}

} // extern "C"
