/* Internal to kernels/attention*.cu: what the mma.sync kernels (attention.cu) and the Hopper
 * kernel (attention_sm90.cu) share: the launch parameters, the key-row lookup, cp.async and the
 * online-softmax step (so both round the same way), and the launchers' shared-memory and
 * occupancy helpers. Everything lives in namespace vk_attn; each .cu file is its own translation
 * unit (inline functions, no relocatable device code). */
#ifndef VOX_KERNELS_ATTENTION_COMMON_CUH
#define VOX_KERNELS_ATTENTION_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <math.h>
#include <stdint.h>

#include "common.cuh" /* vk_fast_exp2, vk_smem_u32 */

namespace vk_attn {

typedef __nv_bfloat16 bf16;

constexpr float kLog2e = 1.4426950408889634f;

struct AttnParams {
    const bf16 *q, *k, *v;
    bf16 *out;
    int batch, t_q, t_k, n_heads, n_kv_heads, group, head_dim;
    int64_t kv_seq_stride;      /* rows between sequences in k/v (not paged) */
    int64_t q_stride, kv_stride; /* elements per row: n_heads*D, n_kv_heads*D */
    float scale, scale_log2;
    int causal;
    int64_t q_pos0;
    /* paged cache (tables != NULL): k/v are pools of blocks of block_size rows; key j of
     * sequence b is row j % block_size of block tables[b * table_width + j / block_size] */
    const int32_t *tables;
    int table_width, block_size;
    int block_shift; /* log2(block_size) when a power of two (shifts for the division), else -1 */
    /* prefill of several sequences in one launch (seq_row0 != NULL, paged): sequence b's query
     * rows are q/out rows seq_row0[b] .. seq_row0[b + 1] - 1, at positions row_pos[seq_row0[b]]
     * onwards; it attends causally to its keys 0 .. its last position (t_q, t_k and q_pos0 are
     * then per sequence; p.t_q is the longest, which sizes the grid) */
    const int32_t *seq_row0, *row_pos;
    /* decode only */
    const int32_t *kv_len;
    int64_t max_kv;
    int s_max;       /* splits per sequence the grid and workspace are sized for */
    int write_final; /* s_max == 1: the split kernel writes bf16 out directly */
    float *ws_o;     /* [batch, n_heads, s_max, D] unnormalised partial outputs */
    float *ws_ml;    /* [batch, n_heads, s_max, 2] (max in log2 units, sum) */
    unsigned *ws_count; /* per (batch, kv head, row chunk): splits done (zero between launches) */
};

/* The row of k/v (counted from p.k, p.v) that holds key j of sequence b: row j of the sequence's
 * kv_seq_stride rows, or, paged, through the sequence's block table. Called for valid keys only,
 * so a table is read only where its sequence has keys. j < 2^31 (the launchers check it). */
__device__ __forceinline__ int64_t kv_row(const AttnParams &p, int b, int64_t j) {
    if (!p.tables) return (int64_t)b * p.kv_seq_stride + j;
    const int jj = (int)j;
    const int32_t *table = p.tables + (int64_t)b * p.table_width;
    if (p.block_shift >= 0)
        return ((int64_t)table[jj >> p.block_shift] << p.block_shift) + (jj & (p.block_size - 1));
    return (int64_t)table[jj / p.block_size] * p.block_size + jj % p.block_size;
}

/* The query tile a prefill block owns (grid: x = query head, y = query tile, z = sequence) and
 * what its sequence holds: the sequence's first q/out row, query rows, keys and first query
 * position (per sequence when seq_row0 is set), the tile's first row (when causal, blockIdx.y 0
 * takes the last, heaviest tile), and kv_end, the keys any row of the tile sees. ok is false for a
 * block past its sequence's tiles (the batched grid is sized for the longest sequence); nothing
 * else is set then, and row_pos is not read. */
struct SeqTile {
    int64_t q_row0, t_k, q_pos0, kv_end;
    int t_q, m0;
    bool ok;
};
__device__ __forceinline__ SeqTile seq_tile(const AttnParams &p, int bm) {
    SeqTile t;
    const int b = (int)blockIdx.z;
    t.q_row0 = (int64_t)b * p.t_q;
    t.t_k = p.t_k;
    t.q_pos0 = p.q_pos0;
    t.t_q = p.t_q;
    int m_tiles = (int)gridDim.y;
    t.ok = true;
    if (p.seq_row0) {
        const int r0 = p.seq_row0[b];
        t.t_q = p.seq_row0[b + 1] - r0;
        m_tiles = (t.t_q + bm - 1) / bm;
        t.ok = (int)blockIdx.y < m_tiles;
        if (!t.ok) return t;
        t.q_row0 = r0;
        t.q_pos0 = p.row_pos[r0];
        t.t_k = t.q_pos0 + t.t_q;
    }
    const int m_tile = p.causal ? m_tiles - 1 - (int)blockIdx.y : (int)blockIdx.y;
    t.m0 = m_tile * bm;
    const int m_end = min(t.m0 + bm, t.t_q);
    t.kv_end = t.t_k;
    if (p.causal && t.q_pos0 + m_end < t.kv_end) t.kv_end = t.q_pos0 + m_end;
    return t;
}

/* The keys query row `row` (of the tile's sequence) sees: t_k, and when causal q_pos0 + row + 1.
 * Never above t_k, so it fits an int wherever the launchers accept the keys. */
__device__ __forceinline__ int key_limit(const SeqTile &t, int causal, int64_t row) {
    int64_t lim = t.t_k;
    if (causal && t.q_pos0 + row + 1 < lim) lim = t.q_pos0 + row + 1;
    return (int)lim;
}

/* ---- PTX wrappers and the softmax step ------------------------------------------------------- */

/* Two floats as a bf16x2 register, lo in the low half (the lower column index). */
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

__device__ __forceinline__ float quad_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}


/* One online-softmax step for the two rows (g, g+8) a thread holds in a 16 x (8*NT) score
 * fragment s (raw Q.K, -inf where masked): updates the running max m (log2 units) and the
 * thread's partial sum l, turns s into p = exp2(s*scale_log2 - m), and returns in alpha the
 * factor the running output rows must be multiplied by. */
template <int NT>
__device__ __forceinline__ void softmax_step(float (&s)[NT][4], float (&m)[2], float (&l)[2],
                                             float (&alpha)[2], float scale_log2) {
#pragma unroll
    for (int hh = 0; hh < 2; hh++) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) mx = fmaxf(mx, fmaxf(s[nt][2 * hh], s[nt][2 * hh + 1]));
        mx = quad_max(mx);
        const float base = vk_softmax_raise(m[hh], mx * scale_log2, alpha[hh]);
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const float p = vk_fast_exp2(fmaf(s[nt][2 * hh + e], scale_log2, -base));
                s[nt][2 * hh + e] = p;
                sum += p;
            }
        }
        l[hh] = l[hh] * alpha[hh] + sum;
    }
}

/* -inf for the keys at or past each row's limit in a 16 x (8*NT) score fragment (rows g and
 * g + 8: lim[0], lim[1]) whose first key is n0. */
template <int NT>
__device__ __forceinline__ void mask_keys(float (&s)[NT][4], int64_t n0, const int (&lim)[2],
                                          int tig) {
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            if (n0 + nt * 8 + tig * 2 + (e & 1) >= lim[e >> 1]) s[nt][e] = -INFINITY;
}

/* ---- launcher helpers ------------------------------------------------------------------------ */

/* Registers, dynamic shared memory and resident blocks per SM of a kernel (for the test's report). */
template <typename Kernel>
void kernel_info(Kernel kernel, int threads, size_t smem, int *regs, int *smem_bytes, int *blocks) {
    cudaFuncAttributes a;
    *regs = cudaFuncGetAttributes(&a, (const void *)kernel) == cudaSuccess ? a.numRegs : -1;
    *smem_bytes = (int)smem;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, kernel, threads, smem) != cudaSuccess)
        *blocks = -1;
}

/* The Hopper kernel (attention_sm90.cu, built for sm_90a only when 90 is among the CUDA
 * architectures; attention.cu has stubs otherwise): whether its configurations take p on the
 * current device, the launch of tiling `config`, and its registers / shared memory / resident blocks for the test's
 * report (-1 where it cannot run). */
bool sm90_takes(const AttnParams &p);         /* configs 0, 1: the encoder's d64 */
bool sm90_prefill_takes(const AttnParams &p); /* configs 2, 3: d128 prefill */
void sm90_launch(int config, const AttnParams &p, cudaStream_t stream);
void sm90_info(int config, int *regs, int *smem_bytes, int *blocks);

} // namespace vk_attn

#endif
