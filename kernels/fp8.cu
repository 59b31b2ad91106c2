// The FP8 scheme's kernels around cuBLASLt's FP8 GEMMs (prefill and batched decode):
//   vox_k_fp8_quantize_rows   bf16 rows -> E4M3 codes and one scale per row (the activations)
//   vox_k_fp8_scale_apply     P = bf16(acc * (s_x[row] * s_w[col])): the scales applied to a
//                             float32 GEMM result by the product's consumer (store, residual
//                             add or SwiGLU), in one pass
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

// VEC consecutive floats from p: two 16-byte loads when VEC is 8 (p then 16-byte aligned).
template <int VEC>
__device__ __forceinline__ void load_f32(const float *p, float v[VEC]) {
    if (VEC == 8) {
        const float4 a = reinterpret_cast<const float4 *>(p)[0], b = reinterpret_cast<const float4 *>(p)[1];
        v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    } else {
        for (int j = 0; j < VEC; j++) v[j] = p[j];
    }
}

// Product elements (r, c .. c + VEC) as the scheme rounds them: bf16(acc * (s_x * s_w)), the two
// scales multiplied first, then the accumulator (as vox_k_fp8_scale_apply's contract says).
template <int VEC>
__device__ __forceinline__ void scaled(const float *acc, float sx, const float *w_scale, int64_t n,
                                       int64_t r, int64_t c, float v[VEC]) {
    float a[VEC], w[VEC];
    load_f32<VEC>(acc + r * n + c, a);
    load_f32<VEC>(w_scale + c, w);
#pragma unroll
    for (int j = 0; j < VEC; j++) v[j] = vk_round(a[j] * (sx * w[j]));
}

// VEC consecutive outputs a thread (8: 16-byte bf16 stores; 1: any shape). For SWIGLU the
// outputs are the n/2 gate columns, each reading its up column n/2 further on.
template <int OP, int VEC>
__global__ void __launch_bounds__(kThreads)
    scale_apply_kernel(vk_bf16 *__restrict__ y, const float *__restrict__ acc,
                       const float *__restrict__ x_scale, const float *__restrict__ w_scale,
                       int64_t m, int64_t n) {
    const int64_t cols = OP == VOX_K_FP8_SWIGLU ? n / 2 : n;
    const int64_t per_row = cols / VEC;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m * per_row) return;
    const int64_t r = i / per_row, c = (i - r * per_row) * VEC;
    const float sx = x_scale[r];
    float v[VEC];
    scaled<VEC>(acc, sx, w_scale, n, r, c, v);
    if (OP == VOX_K_FP8_SWIGLU) {
        float up[VEC];
        scaled<VEC>(acc, sx, w_scale, n, r, cols + c, up);
#pragma unroll
        for (int j = 0; j < VEC; j++) v[j] = vk_swiglu(v[j], up[j]);
    }
    vk_bf16 *yr = y + r * cols + c;
    if (OP == VOX_K_FP8_ADD) {
        float old[VEC];
        if (VEC == 8) vk_load8(yr, old);
        else old[0] = vk_f(yr[0]);
#pragma unroll
        for (int j = 0; j < VEC; j++) v[j] += old[j];
    }
    if (VEC == 8) vk_store8(yr, v);
    else yr[0] = vk_bf(v[0]);
}

template <int OP>
void launch_scale_apply(vk_bf16 *y, const float *acc, const float *x_scale, const float *w_scale,
                        int64_t m, int64_t n, cudaStream_t stream) {
    const int64_t cols = OP == VOX_K_FP8_SWIGLU ? n / 2 : n;
    // 16-byte bf16 rows and 32-byte float rows: every row start stays aligned when cols % 8 == 0
    const bool vec = cols % 8 == 0 && vk_aligned16(y) && vk_aligned16(acc) && vk_aligned16(w_scale);
    const int64_t threads = m * (vec ? cols / 8 : cols);
    const unsigned blocks = (unsigned)vk_ceil_div(threads, kThreads);
    if (vec)
        scale_apply_kernel<OP, 8><<<blocks, kThreads, 0, stream>>>(y, acc, x_scale, w_scale, m, n);
    else
        scale_apply_kernel<OP, 1><<<blocks, kThreads, 0, stream>>>(y, acc, x_scale, w_scale, m, n);
    VOX_K_LAUNCH_CHECK();
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

void vox_k_fp8_scale_apply(vox_k_fp8_consumer op, void *y_bf16, const float *acc,
                           const float *x_scale, const float *w_scale, int64_t m, int64_t n,
                           cudaStream_t stream) {
    if (m <= 0 || n <= 0) return;
    vk_bf16 *y = (vk_bf16 *)y_bf16;
    switch (op) {
    case VOX_K_FP8_STORE: launch_scale_apply<VOX_K_FP8_STORE>(y, acc, x_scale, w_scale, m, n, stream); break;
    case VOX_K_FP8_ADD: launch_scale_apply<VOX_K_FP8_ADD>(y, acc, x_scale, w_scale, m, n, stream); break;
    case VOX_K_FP8_SWIGLU: launch_scale_apply<VOX_K_FP8_SWIGLU>(y, acc, x_scale, w_scale, m, n, stream); break;
    }
}

} // extern "C"
