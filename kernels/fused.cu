// Fused decoder operations: fewer launches and passes over memory per decode step.
//
// qkv_rope_cache: the fused q|k|v projection output [t, (H + 2 Hkv) * D] is split into q (RoPE
// applied, to q_out) and k (RoPE applied) / v written straight into the KV cache rows at the
// position read on the device: it replaces two RoPE launches and two cache copies.
// RoPE numerics follow transformers' Llama path step by step: inv_freq_i = theta^(-2i/D)
// rounded to fp32 (computed in double, as the CPU backend does); angle = float(position) *
// inv_freq_i in fp32; cos, sin rounded to bf16 (.to(x.dtype)); out = bf16(bf16(x * cos) +
// bf16(rotate_half(x) * sin)) (three bf16 tensor ops; one rounding would differ by an ulp).
// With n_kv_heads = 0 it is RoPE alone, in place when q_out == qkv. The _rows form (continuous
// batching: rows of different sequences) reads each row's position and cache row from device
// arrays instead of *pos_dev + row; the arithmetic is the same.
//
// swiglu: y [t, F] = bf16(bf16(silu(gate)) * up) from the fused gate|up output [t, 2F], with
// silu rounded first as torch's act_fn(gate) * up does in bf16.

#include "common.cuh"
#include "kernels.h"

namespace {

template <int VEC>
__device__ __forceinline__ void rotate(const vk_bf16 *src, vk_bf16 *dst, int half, int i0,
                                       const float *cs, const float *sn) {
    float a[VEC], b[VEC];
    if (VEC == 8) {
        vk_load8(src + i0, a);
        vk_load8(src + i0 + half, b);
    } else {
        a[0] = vk_f(src[i0]);
        b[0] = vk_f(src[i0 + half]);
    }
#pragma unroll
    for (int j = 0; j < VEC; j++) vk_rope_rotate(a[j], b[j], cs[i0 + j], sn[i0 + j], &a[j], &b[j]);
    if (VEC == 8) {
        vk_store8(dst + i0, a);
        vk_store8(dst + i0 + half, b);
    } else {
        dst[i0] = vk_bf(a[0]);
        dst[i0 + half] = vk_bf(b[0]);
    }
}

template <int VEC>
// q_out may be qkv itself when there are no kv heads (RoPE in place): no __restrict__ on those.
// Row r is at position row_pos[r] (row_pos NULL: *pos_dev + r) and writes cache row
// row_slot[r] (row_slot NULL: its position).
__global__ void qkv_rope_cache_kernel(vk_bf16 *q_out, vk_bf16 *__restrict__ k_cache,
                                      vk_bf16 *__restrict__ v_cache, const vk_bf16 *qkv,
                                      int64_t t, int n_heads, int n_kv, int head_dim,
                                      const int64_t *__restrict__ pos_dev,
                                      const int32_t *__restrict__ row_pos,
                                      const int32_t *__restrict__ row_slot, double theta) {
    extern __shared__ float smem[]; // inv_freq, cos, sin: D/2 each
    const int half = head_dim / 2;
    float *inv_freq = smem, *cs = smem + half, *sn = smem + 2 * half;
    for (int i = threadIdx.x; i < half; i += blockDim.x)
        inv_freq[i] = vk_rope_inv_freq(i, head_dim, theta);
    const int64_t pos0 = row_pos ? 0 : *pos_dev;
    const int per_head = half / VEC;
    const int q_units = n_heads * per_head, k_units = n_kv * per_head;
    const int v_units = n_kv * head_dim / VEC;
    const int64_t qd = (int64_t)n_heads * head_dim, kd = (int64_t)n_kv * head_dim;
    for (int64_t r = blockIdx.x; r < t; r += gridDim.x) {
        __syncthreads();
        const int64_t at = row_pos ? (int64_t)row_pos[r] : pos0 + r;
        const int64_t slot = row_slot ? (int64_t)row_slot[r] : at;
        const float pos = (float)at;
        for (int i = threadIdx.x; i < half; i += blockDim.x) {
            float s, c;
            sincosf(pos * inv_freq[i], &s, &c);
            cs[i] = vk_round(c);
            sn[i] = vk_round(s);
        }
        __syncthreads();
        const vk_bf16 *src = qkv + r * (qd + 2 * kd);
        vk_bf16 *qr = q_out + r * qd, *kr = k_cache + slot * kd, *vr = v_cache + slot * kd;
        for (int u = threadIdx.x; u < q_units + k_units + v_units; u += blockDim.x) {
            if (u < q_units) {
                const int h = u / per_head, i0 = (u - h * per_head) * VEC;
                rotate<VEC>(src + h * head_dim, qr + h * head_dim, half, i0, cs, sn);
            } else if (u < q_units + k_units) {
                const int w = u - q_units, h = w / per_head, i0 = (w - h * per_head) * VEC;
                rotate<VEC>(src + qd + h * head_dim, kr + h * head_dim, half, i0, cs, sn);
            } else {
                const int e = (u - q_units - k_units) * VEC;
                if (VEC == 8)
                    *(uint4 *)(vr + e) = *(const uint4 *)(src + qd + kd + e);
                else
                    vr[e] = src[qd + kd + e];
            }
        }
    }
}

template <int VEC>
__global__ void swiglu_kernel(vk_bf16 *__restrict__ y, const vk_bf16 *__restrict__ gate_up,
                              int64_t rows, int64_t f) {
    const int64_t per_row = f / VEC;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * per_row) return;
    const int64_t r = i / per_row, c = (i - r * per_row) * VEC;
    const vk_bf16 *g = gate_up + r * 2 * f + c, *u = g + f;
    float gv[VEC], uv[VEC];
    if (VEC == 8) {
        vk_load8(g, gv);
        vk_load8(u, uv);
    } else {
        gv[0] = vk_f(*g);
        uv[0] = vk_f(*u);
    }
#pragma unroll
    for (int j = 0; j < VEC; j++) gv[j] = vk_swiglu(gv[j], uv[j]);
    if (VEC == 8)
        vk_store8(y + r * f + c, gv);
    else
        y[r * f + c] = vk_bf(gv[0]);
}

void launch_qkv_rope_cache(void *q_out, void *k_cache, void *v_cache, const void *qkv, int64_t t,
                           int n_heads, int n_kv_heads, int head_dim, const int64_t *pos_dev,
                           const int32_t *row_pos, const int32_t *row_slot, double theta,
                           cudaStream_t stream) {
    if (t <= 0) return;
    const bool vec = head_dim % 16 == 0 && vk_aligned16(q_out) && vk_aligned16(k_cache) &&
                     vk_aligned16(v_cache) && vk_aligned16(qkv);
    const int units = (n_heads + n_kv_heads) * (head_dim / 2) / (vec ? 8 : 1) +
                      n_kv_heads * head_dim / (vec ? 8 : 1);
    int threads = (int)vk_ceil_div(units, 32) * 32;
    threads = threads < 64 ? 64 : threads > 512 ? 512 : threads;
    const unsigned blocks = (unsigned)(t < 1024 ? t : 1024);
    const size_t smem = 3 * (size_t)(head_dim / 2) * sizeof(float);
    if (vec)
        qkv_rope_cache_kernel<8><<<blocks, threads, smem, stream>>>(
            (vk_bf16 *)q_out, (vk_bf16 *)k_cache, (vk_bf16 *)v_cache, (const vk_bf16 *)qkv, t,
            n_heads, n_kv_heads, head_dim, pos_dev, row_pos, row_slot, theta);
    else
        qkv_rope_cache_kernel<1><<<blocks, threads, smem, stream>>>(
            (vk_bf16 *)q_out, (vk_bf16 *)k_cache, (vk_bf16 *)v_cache, (const vk_bf16 *)qkv, t,
            n_heads, n_kv_heads, head_dim, pos_dev, row_pos, row_slot, theta);
}

}  // namespace

extern "C" void vox_k_qkv_rope_cache(void *q_out, void *k_cache, void *v_cache, const void *qkv,
                                     int64_t t, int n_heads, int n_kv_heads, int head_dim,
                                     const int64_t *pos_dev, double theta, cudaStream_t stream) {
    launch_qkv_rope_cache(q_out, k_cache, v_cache, qkv, t, n_heads, n_kv_heads, head_dim, pos_dev,
                          NULL, NULL, theta, stream);
}

extern "C" void vox_k_qkv_rope_cache_rows(void *q_out, void *k_pool, void *v_pool, const void *qkv,
                                          int64_t t, int n_heads, int n_kv_heads, int head_dim,
                                          const int32_t *row_pos, const int32_t *row_slot,
                                          double theta, cudaStream_t stream) {
    launch_qkv_rope_cache(q_out, k_pool, v_pool, qkv, t, n_heads, n_kv_heads, head_dim, NULL,
                          row_pos, row_slot, theta, stream);
}

extern "C" void vox_k_swiglu(void *y, const void *gate_up, int64_t rows, int64_t f,
                             cudaStream_t stream) {
    if (rows <= 0 || f <= 0) return;
    const bool vec = f % 8 == 0 && vk_aligned16(y) && vk_aligned16(gate_up);
    const int64_t n = rows * (vec ? f / 8 : f);
    const unsigned blocks = (unsigned)vk_ceil_div(n, 256);
    if (vec)
        swiglu_kernel<8><<<blocks, 256, 0, stream>>>((vk_bf16 *)y, (const vk_bf16 *)gate_up, rows, f);
    else
        swiglu_kernel<1><<<blocks, 256, 0, stream>>>((vk_bf16 *)y, (const vk_bf16 *)gate_up, rows, f);
}
