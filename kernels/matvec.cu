// Decode-step matrix-vector product with its neighbours fused: y[n] = dot(w[n, :], in(x)) for
// one input row, where in(x) is formed by each block in shared memory from x:
//   VOX_MV_PLAIN    in = x                                   (x [k])
//   VOX_MV_RMSNORM  in = bf16(g * bf16(x * rsqrt(mean(x^2) + eps)))   (x [k], g [k]: LlamaRMSNorm)
//   VOX_MV_SWIGLU   in = bf16(bf16(silu(x[i])) * x[k + i])   (x [2k] = gate | up)
// and the result is either written, y[n] = bf16(acc), or added to a residual stream,
// res[n] = bf16(res[n] + bf16(acc)) (torch rounds the projection, then the sum).
//
// Batch 1 decode reads every weight once per token, so this kernel is a stream over w: one warp
// per output row, 16-byte loads, four loads in flight a lane, fp32 accumulation, the input in
// shared memory as fp32. Blocks of 4 warps keep enough blocks for every SM at N = 3072.
#include "common.cuh"
#include "kernels.h"

namespace {

constexpr int kWarps = 4;

template <int MODE>
__global__ void __launch_bounds__(kWarps * 32)
    matvec_kernel(vk_bf16 *__restrict__ y, vk_bf16 *res, const vk_bf16 *__restrict__ x,
                  const vk_bf16 *__restrict__ w, const vk_bf16 *__restrict__ g, int64_t n, int k,
                  float eps) {
    extern __shared__ float in[];
    __shared__ float red[32];
    // ---- the input vector, transformed ----
    if (MODE == VOX_MV_RMSNORM) {
        float ss = 0.0f;
        for (int i = threadIdx.x; i < k; i += blockDim.x) {
            const float v = vk_f(x[i]);
            ss += v * v;
        }
        const float inv = rsqrtf(vk_block_sum(ss, red) / (float)k + eps);
        for (int i = threadIdx.x; i < k; i += blockDim.x)
            in[i] = vk_round(vk_f(g[i]) * vk_round(vk_f(x[i]) * inv));
    } else if (MODE == VOX_MV_SWIGLU) {
        for (int i = threadIdx.x; i < k; i += blockDim.x) {
            const float gate = vk_f(x[i]);
            in[i] = vk_round(vk_round(gate / (1.0f + expf(-gate))) * vk_f(x[k + i]));
        }
    } else {
        for (int i = threadIdx.x; i < k; i += blockDim.x) in[i] = vk_f(x[i]);
    }
    __syncthreads();
    // ---- one warp per row ----
    const int lane = threadIdx.x & 31;
    const int64_t row = (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (row >= n) return;
    const vk_bf16 *wr = w + row * (int64_t)k;
    float acc = 0.0f;
    int i = lane * 8;
    // four independent 16-byte loads per lane per iteration
    for (; i + 3 * 256 + 8 <= k; i += 4 * 256) {
        float a[4][8];
#pragma unroll
        for (int u = 0; u < 4; u++) vk_load8(wr + i + u * 256, a[u]);
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const float4 p = *(const float4 *)(in + i + u * 256), q = *(const float4 *)(in + i + u * 256 + 4);
            acc += a[u][0] * p.x + a[u][1] * p.y + a[u][2] * p.z + a[u][3] * p.w;
            acc += a[u][4] * q.x + a[u][5] * q.y + a[u][6] * q.z + a[u][7] * q.w;
        }
    }
    for (; i + 8 <= k; i += 256) {
        float a[8];
        vk_load8(wr + i, a);
#pragma unroll
        for (int j = 0; j < 8; j++) acc += a[j] * in[i + j];
    }
    acc = vk_warp_sum(acc);
    if (lane == 0) {
        if (res)
            res[row] = vk_bf(vk_f(res[row]) + vk_round(acc));
        else
            y[row] = vk_bf(acc);
    }
}

}  // namespace

extern "C" int vox_k_matvec_supported(int64_t k, const void *x, const void *w) {
    return k % 256 == 0 && k <= 12288 && vk_aligned16(x) && vk_aligned16(w);
}

extern "C" void vox_k_matvec(void *y, void *residual, const void *x, const void *w,
                             const void *norm_w, int64_t n, int64_t k, int mode, float eps,
                             cudaStream_t stream) {
    if (n <= 0) return;
    const unsigned blocks = (unsigned)vk_ceil_div(n, kWarps);
    const size_t smem = (size_t)k * sizeof(float);
    vk_bf16 *yy = (vk_bf16 *)y, *rr = (vk_bf16 *)residual;
    const vk_bf16 *xx = (const vk_bf16 *)x, *ww = (const vk_bf16 *)w, *gg = (const vk_bf16 *)norm_w;
    switch (mode) {
    case VOX_MV_RMSNORM:
        matvec_kernel<VOX_MV_RMSNORM><<<blocks, kWarps * 32, smem, stream>>>(yy, rr, xx, ww, gg, n, (int)k, eps);
        break;
    case VOX_MV_SWIGLU:
        matvec_kernel<VOX_MV_SWIGLU><<<blocks, kWarps * 32, smem, stream>>>(yy, rr, xx, ww, gg, n, (int)k, eps);
        break;
    default:
        matvec_kernel<VOX_MV_PLAIN><<<blocks, kWarps * 32, smem, stream>>>(yy, rr, xx, ww, gg, n, (int)k, eps);
    }
}
