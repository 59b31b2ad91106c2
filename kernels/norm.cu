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
// FP8 (issue 10's scheme, common/fp8.h): the vector path can also quantize each row it produces
// to E4M3 codes with the row's own scale, from the registers, in the same pass: an FP8
// projection's input made by one kernel and one read of x where it took an RMSNorm, a write and a
// read of its bf16 output, and a two-pass quantizer (vox_k_rms_norm_fp8; with no norm weight it
// quantizes x's rows as they are, vox_k_fp8_quantize_rows's vector path). The codes are those of
// the bf16 values the norm writes, as the separate kernels give.
//
// Registers bound the vector path: a block may use at most 64K registers, so a 1024-thread block
// (32 warps a row) allows 64 a thread. With 5 to 8 vectors a thread the kernel needs 64 to 121
// (ptxas, sm_90), so those run only as 128-thread blocks (one warp a row), and rows wider than
// 32 warps x 4 vectors (C > 32768) take the scalar path. __launch_bounds__ makes ptxas keep each
// instantiation within the block size the launcher gives it, whatever the compiler version.
#include "common.cuh"
#include "fp8.cuh"
#include "kernels.h"

namespace {

// Sum (or, with MAX, maximum) over the threads of one row: a warp, or wpr consecutive warps of the
// block (then every thread of the block must call it, since it synchronises).
template <bool MAX = false>
__device__ __forceinline__ float row_reduce(float v, float *red, int wpr, int row_slot,
                                         int warp_in_row) {
    v = MAX ? vk_warp_max(v) : vk_warp_sum(v);
    if (wpr == 1) return v;
    __syncthreads(); // red may still be read by the previous call
    if ((threadIdx.x & 31) == 0) red[row_slot * wpr + warp_in_row] = v;
    __syncthreads();
    float s = 0.0f;
    for (int i = 0; i < wpr; i++) s = MAX ? fmaxf(s, red[row_slot * wpr + i]) : s + red[row_slot * wpr + i];
    return s;
}

// What the vector kernel computes of a row: LayerNorm, RMSNorm, or nothing (the row as it is,
// for the quantizer alone).
enum NormMode { kLayerNorm, kRmsNorm, kNoNorm };

// A row wider than one warp takes up to kMaxWarpsPerRow warps of at most kMaxVecWide vectors a
// thread; one-warp rows (up to 8 vectors a thread) go 4 to a 128-thread block.
constexpr int kMaxWarpsPerRow = 32, kMaxVecWide = 4, kOneWarpThreads = 128;
// The largest block an instantiation is launched with (see launch_norm).
constexpr int vec_max_threads(int nv) {
    return nv <= kMaxVecWide ? 32 * kMaxWarpsPerRow : kOneWarpThreads;
}

// blockDim.x = 32 * wpr * rows_per_block; thread t of a row holds vectors t, t + 32*wpr, ...
// y (bf16 rows) may be null when Q; with Q, q [rows, c] and qs [rows] get the E4M3 codes and
// scale of each row's bf16 values.
template <int NV, int MODE, bool Q>
__global__ void __launch_bounds__(vec_max_threads(NV))
    norm_vec_kernel(vk_bf16 *y, const vk_bf16 *x, const vk_bf16 *__restrict__ w,
                    const vk_bf16 *__restrict__ b, int64_t rows, int c, float eps, int wpr,
                    uint8_t *__restrict__ q, float *__restrict__ qs) {
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
    if (MODE == kRmsNorm) {
#pragma unroll
        for (int j = 0; j < NV; j++)
#pragma unroll
            for (int e = 0; e < 8; e++) s += v[j][e] * v[j][e];
        const float inv = rsqrtf(row_reduce(s, red, wpr, row_slot, warp_in_row) / c + eps);
#pragma unroll
        for (int j = 0; j < NV; j++) {
            const int vi = t + j * tpr;
            if (!live || vi >= n_vec) continue;
            float wf[8];
            vk_load8(w + 8 * vi, wf);
#pragma unroll
            for (int e = 0; e < 8; e++) v[j][e] = wf[e] * vk_round(v[j][e] * inv);
        }
    } else if (MODE == kLayerNorm) {
#pragma unroll
        for (int j = 0; j < NV; j++)
#pragma unroll
            for (int e = 0; e < 8; e++) s += v[j][e];
        const float mean = row_reduce(s, red, wpr, row_slot, warp_in_row) / c;
        float d = 0.0f;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            if (t + j * tpr >= n_vec) continue; // padding zeros are not (0 - mean)^2
#pragma unroll
            for (int e = 0; e < 8; e++) d += (v[j][e] - mean) * (v[j][e] - mean);
        }
        const float rstd = rsqrtf(row_reduce(d, red, wpr, row_slot, warp_in_row) / c + eps);
#pragma unroll
        for (int j = 0; j < NV; j++) {
            const int vi = t + j * tpr;
            if (!live || vi >= n_vec) continue;
            float wf[8], bf[8];
            vk_load8(w + 8 * vi, wf);
            vk_load8(b + 8 * vi, bf);
#pragma unroll
            for (int e = 0; e < 8; e++) v[j][e] = fmaf(wf[e], (v[j][e] - mean) * rstd, bf[e]);
        }
    }
    if (y && live)
#pragma unroll
        for (int j = 0; j < NV; j++) {
            const int vi = t + j * tpr;
            if (vi < n_vec) vk_store8(y + row * (int64_t)c + 8 * vi, v[j]);
        }
    if (Q) {
        // the codes of the bf16 values just written: max |value| over the row (exact in any
        // order; vectors past the row and dead rows hold zeros), then each value's code
        float mx = 0.0f;
#pragma unroll
        for (int j = 0; j < NV; j++)
#pragma unroll
            for (int e = 0; e < 8; e++) {
                v[j][e] = vk_round(v[j][e]);
                mx = fmaxf(mx, fabsf(v[j][e]));
            }
        const float scale = vk_fp8_scale(row_reduce<true>(mx, red, wpr, row_slot, warp_in_row));
        if (!live) return;
        if (t == 0) qs[row] = scale;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            const int vi = t + j * tpr;
            if (vi >= n_vec) continue;
            uint32_t lo = 0, hi = 0;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                lo |= (uint32_t)vk_fp8_quantize(v[j][e], scale) << (8 * e);
                hi |= (uint32_t)vk_fp8_quantize(v[j][e + 4], scale) << (8 * e);
            }
            *(uint2 *)(q + row * (int64_t)c + 8 * vi) = make_uint2(lo, hi);
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

// The vector path's shape: whether it takes rows of c (c % 8 == 0, at most 32 warps of 4
// vectors), and how (warps per row: one up to 8 vectors a lane, else enough for at most 4
// vectors a lane, so nv <= 4 whenever wpr > 1 and threads <= vec_max_threads(nv) in both cases).
struct VecShape {
    int wpr, nv, threads;
    unsigned blocks;
};
bool vec_shape(int64_t rows, int64_t c, VecShape *v) {
    const int64_t n_vec = c / 8;
    if (c % 8 != 0 || n_vec > 32 * kMaxWarpsPerRow * kMaxVecWide) return false;
    v->wpr = n_vec <= 32 * 8 ? 1 : (int)vk_ceil_div(n_vec, 32 * kMaxVecWide);
    v->nv = (int)vk_ceil_div(n_vec, 32 * v->wpr);
    const int rows_per_block = v->wpr == 1 ? kOneWarpThreads / 32 : v->wpr == 2 ? 2 : 1;
    v->blocks = (unsigned)vk_ceil_div(rows, rows_per_block);
    v->threads = 32 * v->wpr * rows_per_block;
    return true;
}

template <int MODE, bool Q>
void launch_vec(const VecShape &v, vk_bf16 *y, const vk_bf16 *x, const vk_bf16 *w,
                const vk_bf16 *b, int64_t rows, int64_t c, float eps, uint8_t *q, float *qs,
                cudaStream_t stream) {
#define VOX_NORM_CASE(NV)                                                                     \
    case NV:                                                                                  \
        norm_vec_kernel<NV, MODE, Q><<<v.blocks, v.threads, 0, stream>>>(y, x, w, b, rows,    \
                                                                         (int)c, eps, v.wpr, q, qs); \
        break;
    switch (v.nv) {
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
}

template <bool RMS>
void launch_norm(void *y, const void *x, const void *w, const void *b, int64_t rows, int64_t c,
                 float eps, cudaStream_t stream) {
    if (rows <= 0 || c <= 0) return;
    vk_bf16 *py = (vk_bf16 *)y;
    const vk_bf16 *px = (const vk_bf16 *)x, *pw = (const vk_bf16 *)w, *pb = (const vk_bf16 *)b;
    const bool aligned = vk_aligned16(y) && vk_aligned16(x) && vk_aligned16(w) &&
                         (RMS || vk_aligned16(b));
    VecShape v;
    if (aligned && vec_shape(rows, c, &v)) {
        launch_vec<RMS ? kRmsNorm : kLayerNorm, false>(v, py, px, pw, pb, rows, c, eps, nullptr,
                                                       nullptr, stream);
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

int vox_k_rms_norm_fp8(uint8_t *q, float *scale, void *y_bf16, const void *x_bf16,
                       const void *w_bf16, int64_t rows, int64_t c, float eps, cudaStream_t stream) {
    VecShape v;
    if (rows <= 0 || c <= 0) return 1;
    if (!q || !scale || !vk_aligned16(x_bf16) || (w_bf16 && !vk_aligned16(w_bf16)) ||
        (y_bf16 && !vk_aligned16(y_bf16)) || (uintptr_t)q % 8 || !vec_shape(rows, c, &v))
        return 0;
    vk_bf16 *y = (vk_bf16 *)y_bf16;
    const vk_bf16 *x = (const vk_bf16 *)x_bf16, *w = (const vk_bf16 *)w_bf16;
    if (w) launch_vec<kRmsNorm, true>(v, y, x, w, nullptr, rows, c, eps, q, scale, stream);
    else launch_vec<kNoNorm, true>(v, y, x, nullptr, nullptr, rows, c, eps, q, scale, stream);
    VOX_K_LAUNCH_CHECK();
    return 1;
}

} // extern "C"
