// Rotary position embedding, rotate-half pairing (dim i with i + D/2), in place on
// x [t, n_heads * head_dim]; row r has position *pos0_dev + r.
//
// Numerics follow transformers' Llama path step by step:
//   inv_freq_i = theta^(-2i/D) rounded to fp32 (computed in double, as the CPU backend does)
//   angle      = float(position) * inv_freq_i                      (fp32)
//   cos, sin   = cos(angle), sin(angle) rounded to bf16            (.to(x.dtype))
//   out        = bf16(bf16(x * cos) + bf16(rotate_half(x) * sin))  (three bf16 tensor ops)
// (x*cos + rotate_half(x)*sin rounded once would differ from transformers by up to an ulp.)
//
// A block owns whole rows (grid-stride over rows, at most 1024 blocks): inv_freq is computed
// once per block into shared memory, the D/2 (cos, sin) pairs of a row once per row and shared
// by all heads; then each thread rotates 8 pairs with 16-byte loads and stores (D % 16 == 0 and
// x 16-byte aligned; else one pair a thread).
#include "common.cuh"
#include "kernels.h"

namespace {

template <int VEC>
__global__ void rope_kernel(vk_bf16 *x, int64_t t, int n_heads, int head_dim,
                            const int64_t *__restrict__ pos0_dev, double theta) {
    extern __shared__ float smem[]; // inv_freq, cos, sin: D/2 each
    const int half = head_dim / 2;
    float *inv_freq = smem, *cs = smem + half, *sn = smem + 2 * half;
    for (int i = threadIdx.x; i < half; i += blockDim.x)
        inv_freq[i] = (float)(1.0 / pow(theta, (double)(2 * i) / head_dim));
    const int64_t pos0 = *pos0_dev;
    const int chunks_per_head = half / VEC, chunks = n_heads * chunks_per_head;
    const int64_t row_elems = (int64_t)n_heads * head_dim;

    for (int64_t r = blockIdx.x; r < t; r += gridDim.x) {
        __syncthreads(); // inv_freq written; the previous row's cos/sin no longer read
        const float pos = (float)(pos0 + r);
        for (int i = threadIdx.x; i < half; i += blockDim.x) {
            float s, c;
            sincosf(pos * inv_freq[i], &s, &c);
            cs[i] = vk_round(c);
            sn[i] = vk_round(s);
        }
        __syncthreads();
        vk_bf16 *xr = x + r * row_elems;
        for (int u = threadIdx.x; u < chunks; u += blockDim.x) {
            const int h = u / chunks_per_head, i0 = (u - h * chunks_per_head) * VEC;
            vk_bf16 *p1 = xr + (int64_t)h * head_dim + i0, *p2 = p1 + half;
            float a[VEC], b[VEC];
            if (VEC == 8) {
                vk_load8(p1, a);
                vk_load8(p2, b);
            } else {
                a[0] = vk_f(*p1);
                b[0] = vk_f(*p2);
            }
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                const float c = cs[i0 + j], s = sn[i0 + j];
                const float o1 = vk_round(a[j] * c) - vk_round(b[j] * s); // rotate_half: -x2
                const float o2 = vk_round(b[j] * c) + vk_round(a[j] * s); //              x1
                a[j] = o1;
                b[j] = o2;
            }
            if (VEC == 8) {
                vk_store8(p1, a);
                vk_store8(p2, b);
            } else {
                *p1 = vk_bf(a[0]);
                *p2 = vk_bf(b[0]);
            }
        }
    }
}

} // namespace

extern "C" void vox_k_rope(void *x_bf16, int64_t t, int n_heads, int head_dim,
                           const int64_t *pos0_dev, double theta, cudaStream_t stream) {
    if (t <= 0 || n_heads <= 0 || head_dim < 2) return;
    const bool vec = head_dim % 16 == 0 && vk_aligned16(x_bf16);
    const int chunks = n_heads * (head_dim / 2) / (vec ? 8 : 1);
    int threads = (int)vk_ceil_div(chunks, 32) * 32;
    threads = threads < 64 ? 64 : threads > 256 ? 256 : threads;
    const unsigned blocks = (unsigned)(t < 1024 ? t : 1024);
    const size_t smem = 3 * (size_t)(head_dim / 2) * sizeof(float);
    if (vec)
        rope_kernel<8><<<blocks, threads, smem, stream>>>((vk_bf16 *)x_bf16, t, n_heads, head_dim,
                                                          pos0_dev, theta);
    else
        rope_kernel<1><<<blocks, threads, smem, stream>>>((vk_bf16 *)x_bf16, t, n_heads, head_dim,
                                                          pos0_dev, theta);
    VOX_K_LAUNCH_CHECK();
}
