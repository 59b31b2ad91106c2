// Row normalisations over the last dim: LayerNorm (mean, variance, weight and bias) and RMSNorm
// (LlamaRMSNorm: the normalised value is rounded to bf16 before the weight multiplies it).
//
// Vector path (C % 8 == 0, 16-byte aligned pointers, C <= 32768): a row is read once into
// registers (NV 16-byte vectors per thread), reduced in fp32 by warp shuffles, and written from
// the registers, so y may alias x. A row is one warp when C <= 2048 (4 rows per 128-thread block;
// the encoder's C = 1280 is 5 vectors a lane), else 2 to 32 warps holding at most 4 vectors a
// thread (the decoder's C = 3072 is 3 warps x 4 vectors: no idle lane). LayerNorm's variance is
// the two-pass sum of (x - mean)^2 over the registers, not E[x^2] - mean^2.
// Scalar path (any other C or alignment): one 128-thread block per row, three passes over x.
//
// Registers bound the vector path: a block may use at most 64K registers, so a 1024-thread block
// (32 warps a row) allows 64 a thread. With 5 to 8 vectors a thread the kernel needs 64 to 121
// (ptxas, sm_90), so those run only as 128-thread blocks (one warp a row), and rows wider than
// 32 warps x 4 vectors (C > 32768) take the scalar path. __launch_bounds__ makes ptxas keep each
// instantiation within the block size the launcher gives it, whatever the compiler version.
#include "common.cuh"
#include "kernels.h"

namespace {

// Sum over the threads of one row: a warp, or wpr consecutive warps of the block (then every
// thread of the block must call it, since it synchronises).
__device__ __forceinline__ float row_sum(float v, float *red, int wpr, int row_slot,
                                         int warp_in_row) {
    v = vk_warp_sum(v);
    if (wpr == 1) return v;
    __syncthreads(); // red may still be read by the previous call
    if ((threadIdx.x & 31) == 0) red[row_slot * wpr + warp_in_row] = v;
    __syncthreads();
    float s = 0.0f;
    for (int i = 0; i < wpr; i++) s += red[row_slot * wpr + i];
    return s;
}

// A row wider than one warp takes up to kMaxWarpsPerRow warps of at most kMaxVecWide vectors a
// thread; one-warp rows (up to 8 vectors a thread) go 4 to a 128-thread block.
constexpr int kMaxWarpsPerRow = 32, kMaxVecWide = 4, kOneWarpThreads = 128;
// The largest block an instantiation is launched with (see launch_norm).
constexpr int vec_max_threads(int nv) {
    return nv <= kMaxVecWide ? 32 * kMaxWarpsPerRow : kOneWarpThreads;
}

// blockDim.x = 32 * wpr * rows_per_block; thread t of a row holds vectors t, t + 32*wpr, ...
template <int NV, bool RMS>
__global__ void __launch_bounds__(vec_max_threads(NV))
    norm_vec_kernel(vk_bf16 *y, const vk_bf16 *x, const vk_bf16 *__restrict__ w,
                    const vk_bf16 *__restrict__ b, int64_t rows, int c, float eps, int wpr) {
    __shared__ float red[32];
    const int warp = threadIdx.x >> 5, row_slot = warp / wpr, warp_in_row = warp % wpr;
    const int tpr = 32 * wpr, t = warp_in_row * 32 + (threadIdx.x & 31);
    const int64_t row = (int64_t)blockIdx.x * (blockDim.x / tpr) + row_slot;
    const bool live = row < rows; // dead rows still join the block's barriers
    const int n_vec = c / 8;
    const vk_bf16 *xr = x + (live ? row : 0) * (int64_t)c;

    float v[NV][8];
#pragma unroll
    for (int j = 0; j < NV; j++) {
        const int vi = t + j * tpr;
        if (live && vi < n_vec) {
            vk_load8(xr + 8 * vi, v[j]);
        } else {
#pragma unroll
            for (int e = 0; e < 8; e++) v[j][e] = 0.0f;
        }
    }

    float s = 0.0f;
    if (RMS) {
#pragma unroll
        for (int j = 0; j < NV; j++)
#pragma unroll
            for (int e = 0; e < 8; e++) s += v[j][e] * v[j][e];
        const float inv = rsqrtf(row_sum(s, red, wpr, row_slot, warp_in_row) / c + eps);
#pragma unroll
        for (int j = 0; j < NV; j++) {
            const int vi = t + j * tpr;
            if (!live || vi >= n_vec) continue;
            float wf[8];
            vk_load8(w + 8 * vi, wf);
#pragma unroll
            for (int e = 0; e < 8; e++) v[j][e] = wf[e] * vk_round(v[j][e] * inv);
            vk_store8(y + row * (int64_t)c + 8 * vi, v[j]);
        }
    } else {
#pragma unroll
        for (int j = 0; j < NV; j++)
#pragma unroll
            for (int e = 0; e < 8; e++) s += v[j][e];
        const float mean = row_sum(s, red, wpr, row_slot, warp_in_row) / c;
        float d = 0.0f;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            if (t + j * tpr >= n_vec) continue; // padding zeros are not (0 - mean)^2
#pragma unroll
            for (int e = 0; e < 8; e++) d += (v[j][e] - mean) * (v[j][e] - mean);
        }
        const float rstd = rsqrtf(row_sum(d, red, wpr, row_slot, warp_in_row) / c + eps);
#pragma unroll
        for (int j = 0; j < NV; j++) {
            const int vi = t + j * tpr;
            if (!live || vi >= n_vec) continue;
            float wf[8], bf[8];
            vk_load8(w + 8 * vi, wf);
            vk_load8(b + 8 * vi, bf);
#pragma unroll
            for (int e = 0; e < 8; e++) v[j][e] = fmaf(wf[e], (v[j][e] - mean) * rstd, bf[e]);
            vk_store8(y + row * (int64_t)c + 8 * vi, v[j]);
        }
    }
}

constexpr int kScalarThreads = 128;

// One block per row; x is read in full before the barrier inside each block sum, and element i
// is read then written by the same thread, so y may alias x.
template <bool RMS>
__global__ void norm_scalar_kernel(vk_bf16 *y, const vk_bf16 *x, const vk_bf16 *__restrict__ w,
                                   const vk_bf16 *__restrict__ b, int c, float eps) {
    __shared__ float red[32];
    const vk_bf16 *xr = x + (int64_t)blockIdx.x * c;
    vk_bf16 *yr = y + (int64_t)blockIdx.x * c;
    float s = 0.0f;
    if (RMS) {
        for (int i = threadIdx.x; i < c; i += blockDim.x) s += vk_f(xr[i]) * vk_f(xr[i]);
        const float inv = rsqrtf(vk_block_sum(s, red) / c + eps);
        for (int i = threadIdx.x; i < c; i += blockDim.x)
            yr[i] = vk_bf(vk_f(w[i]) * vk_round(vk_f(xr[i]) * inv));
    } else {
        for (int i = threadIdx.x; i < c; i += blockDim.x) s += vk_f(xr[i]);
        const float mean = vk_block_sum(s, red) / c;
        float d = 0.0f;
        for (int i = threadIdx.x; i < c; i += blockDim.x) d += (vk_f(xr[i]) - mean) * (vk_f(xr[i]) - mean);
        const float rstd = rsqrtf(vk_block_sum(d, red) / c + eps);
        for (int i = threadIdx.x; i < c; i += blockDim.x)
            yr[i] = vk_bf(fmaf(vk_f(w[i]), (vk_f(xr[i]) - mean) * rstd, vk_f(b[i])));
    }
}

template <bool RMS>
void launch_norm(void *y, const void *x, const void *w, const void *b, int64_t rows, int64_t c,
                 float eps, cudaStream_t stream) {
    if (rows <= 0 || c <= 0) return;
    vk_bf16 *py = (vk_bf16 *)y;
    const vk_bf16 *px = (const vk_bf16 *)x, *pw = (const vk_bf16 *)w, *pb = (const vk_bf16 *)b;
    const int64_t n_vec = c / 8;
    const bool aligned = vk_aligned16(y) && vk_aligned16(x) && vk_aligned16(w) &&
                         (RMS || vk_aligned16(b));
    if (c % 8 == 0 && aligned && n_vec <= 32 * kMaxWarpsPerRow * kMaxVecWide) {
        // warps per row: one up to 8 vectors a lane, else enough for at most 4 vectors a lane
        // (so nv <= 4 whenever wpr > 1, and threads <= vec_max_threads(nv) in both cases)
        const int wpr = n_vec <= 32 * 8 ? 1 : (int)vk_ceil_div(n_vec, 32 * kMaxVecWide);
        const int nv = (int)vk_ceil_div(n_vec, 32 * wpr);
        const int rows_per_block = wpr == 1 ? kOneWarpThreads / 32 : wpr == 2 ? 2 : 1;
        const unsigned blocks = (unsigned)vk_ceil_div(rows, rows_per_block);
        const int threads = 32 * wpr * rows_per_block;
#define VOX_NORM_CASE(NV)                                                                     \
    case NV:                                                                                  \
        norm_vec_kernel<NV, RMS><<<blocks, threads, 0, stream>>>(py, px, pw, pb, rows, (int)c, \
                                                                 eps, wpr);                   \
        break;
        switch (nv) {
            VOX_NORM_CASE(1)
            VOX_NORM_CASE(2)
            VOX_NORM_CASE(3)
            VOX_NORM_CASE(4)
            VOX_NORM_CASE(5)
            VOX_NORM_CASE(6)
            VOX_NORM_CASE(7)
            VOX_NORM_CASE(8)
        }
#undef VOX_NORM_CASE
    } else {
        norm_scalar_kernel<RMS><<<(unsigned)rows, kScalarThreads, 0, stream>>>(py, px, pw, pb,
                                                                              (int)c, eps);
    }
    VOX_K_LAUNCH_CHECK();
}

} // namespace

extern "C" {

void vox_k_layer_norm(void *y_bf16, const void *x_bf16, const void *w_bf16, const void *b_bf16,
                      int64_t rows, int64_t c, float eps, cudaStream_t stream) {
    launch_norm<false>(y_bf16, x_bf16, w_bf16, b_bf16, rows, c, eps, stream);
}

void vox_k_rms_norm(void *y_bf16, const void *x_bf16, const void *w_bf16, int64_t rows, int64_t c,
                    float eps, cudaStream_t stream) {
    launch_norm<true>(y_bf16, x_bf16, w_bf16, nullptr, rows, c, eps, stream);
}

} // extern "C"
