// im2col for the encoder's kernel-3, padding-1 convolutions: cols [batch*t_out, c_in*3] with
// cols[b*t_out + t, ci*3 + k] = x at time t*stride + k - 1 (zero outside [0, t_in)), so that
// conv = cols @ w[c_out, c_in*3]^T (+ bias) is one GEMM on the weight as stored.
//
// Time-major x [batch*t_in, c_in] (conv2 reads conv1's output): one thread per output row and 8
// channels: three 16-byte loads (times t*s-1, t*s, t*s+1), a register transpose to
// (ci, k) order, three 16-byte stores: both sides coalesced. Scalar fallback: a thread per
// output element.
// Channels-first x [batch, c_in, t_in] (conv1 reads the mel features): the transpose goes
// through shared memory, 32 channels x 32 output times a block: loads run along time, stores
// along cols' rows.
#include "common.cuh"
#include "kernels.h"

namespace {

constexpr int kThreads = 256;

__global__ void im2col_tm_vec8_kernel(vk_bf16 *__restrict__ cols, const vk_bf16 *__restrict__ x,
                                      int batch, int c_in, int t_in, int t_out, int stride) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int groups = c_in / 8;
    if (i >= (int64_t)batch * t_out * groups) return;
    const int64_t bt = i / groups;
    const int g = (int)(i - bt * groups);
    const int b = (int)(bt / t_out), t = (int)(bt - (int64_t)b * t_out);
    uint4 in[3];
#pragma unroll
    for (int k = 0; k < 3; k++) {
        const int ti = t * stride + k - 1;
        in[k] = (ti >= 0 && ti < t_in)
                    ? *(const uint4 *)(x + ((int64_t)b * t_in + ti) * c_in + 8 * g)
                    : make_uint4(0, 0, 0, 0);
    }
    // out[ci*3 + k] = in[k][ci] for the 8 channels: 24 values, three 16-byte words
    const unsigned short *s = (const unsigned short *)in;
    uint4 out[3];
    unsigned short *d = (unsigned short *)out;
#pragma unroll
    for (int ci = 0; ci < 8; ci++)
#pragma unroll
        for (int k = 0; k < 3; k++) d[ci * 3 + k] = s[k * 8 + ci];
    uint4 *dst = (uint4 *)(cols + bt * (3 * (int64_t)c_in) + 24 * g);
    dst[0] = out[0], dst[1] = out[1], dst[2] = out[2];
}

__global__ void im2col_tm_scalar_kernel(vk_bf16 *__restrict__ cols, const vk_bf16 *__restrict__ x,
                                        int batch, int c_in, int t_in, int t_out, int stride) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t width = 3 * (int64_t)c_in;
    if (i >= (int64_t)batch * t_out * width) return;
    const int64_t bt = i / width;
    const int j = (int)(i - bt * width), ci = j / 3, k = j - 3 * ci;
    const int b = (int)(bt / t_out), t = (int)(bt - (int64_t)b * t_out);
    const int ti = t * stride + k - 1;
    cols[i] = (ti >= 0 && ti < t_in) ? x[((int64_t)b * t_in + ti) * c_in + ci] : vk_bf(0.0f);
}

constexpr int kTileC = 32, kTileT = 32;             // channels x output times per block
constexpr int kSpanMax = (kTileT - 1) * 2 + 3;      // input times a tile reads at stride <= 2
constexpr int kSpanPitch = kSpanMax + 2;            // odd pitch: fewer bank conflicts

// grid (t_out tiles, c_in tiles, batch), 256 threads. Strides 1 and 2 only (the encoder's).
__global__ void im2col_cf_kernel(vk_bf16 *__restrict__ cols, const vk_bf16 *__restrict__ x,
                                 int c_in, int t_in, int t_out, int stride) {
    __shared__ float tile[kTileC][kSpanPitch];
    const int t0 = blockIdx.x * kTileT, c0 = blockIdx.y * kTileC, b = blockIdx.z;
    const int time0 = t0 * stride - 1, span = (kTileT - 1) * stride + 3;
    for (int e = threadIdx.x; e < kTileC * span; e += blockDim.x) {
        const int cl = e / span, tt = e - cl * span, ci = c0 + cl, ti = time0 + tt;
        tile[cl][tt] = (ci < c_in && ti >= 0 && ti < t_in)
                           ? vk_f(x[((int64_t)b * c_in + ci) * t_in + ti])
                           : 0.0f;
    }
    __syncthreads();
    const int width = 3 * kTileC;
    for (int e = threadIdx.x; e < kTileT * width; e += blockDim.x) {
        const int tl = e / width, j = e - tl * width, cl = j / 3, k = j - 3 * cl;
        if (t0 + tl >= t_out || c0 + cl >= c_in) continue;
        cols[((int64_t)b * t_out + t0 + tl) * (3 * (int64_t)c_in) + 3 * c0 + j] =
            vk_bf(tile[cl][tl * stride + k]);
    }
}

__global__ void im2col_cf_scalar_kernel(vk_bf16 *__restrict__ cols, const vk_bf16 *__restrict__ x,
                                        int batch, int c_in, int t_in, int t_out, int stride) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t width = 3 * (int64_t)c_in;
    if (i >= (int64_t)batch * t_out * width) return;
    const int64_t bt = i / width;
    const int j = (int)(i - bt * width), ci = j / 3, k = j - 3 * ci;
    const int b = (int)(bt / t_out), t = (int)(bt - (int64_t)b * t_out);
    const int ti = t * stride + k - 1;
    cols[i] = (ti >= 0 && ti < t_in) ? x[((int64_t)b * c_in + ci) * t_in + ti] : vk_bf(0.0f);
}

} // namespace

extern "C" void vox_k_im2col_k3(void *cols_bf16, const void *x_bf16, int channels_first,
                                int batch, int c_in, int t_in, int stride, cudaStream_t stream) {
    if (batch <= 0 || c_in <= 0 || t_in <= 0 || stride <= 0) return;
    const int t_out = (t_in - 1) / stride + 1;
    vk_bf16 *cols = (vk_bf16 *)cols_bf16;
    const vk_bf16 *x = (const vk_bf16 *)x_bf16;
    const int64_t n_out = (int64_t)batch * t_out * 3 * c_in;
    if (channels_first) {
        if (stride <= 2 && batch <= 65535) {
            dim3 grid((unsigned)vk_ceil_div(t_out, kTileT), (unsigned)vk_ceil_div(c_in, kTileC),
                      (unsigned)batch);
            im2col_cf_kernel<<<grid, kThreads, 0, stream>>>(cols, x, c_in, t_in, t_out, stride);
        } else {
            im2col_cf_scalar_kernel<<<(unsigned)vk_ceil_div(n_out, kThreads), kThreads, 0,
                                      stream>>>(cols, x, batch, c_in, t_in, t_out, stride);
        }
    } else if (c_in % 8 == 0 && vk_aligned16(cols) && vk_aligned16(x)) {
        const int64_t threads = (int64_t)batch * t_out * (c_in / 8);
        im2col_tm_vec8_kernel<<<(unsigned)vk_ceil_div(threads, kThreads), kThreads, 0, stream>>>(
            cols, x, batch, c_in, t_in, t_out, stride);
    } else {
        im2col_tm_scalar_kernel<<<(unsigned)vk_ceil_div(n_out, kThreads), kThreads, 0, stream>>>(
            cols, x, batch, c_in, t_in, t_out, stride);
    }
    VOX_K_LAUNCH_CHECK();
}
