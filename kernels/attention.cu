/* Attention: flash-style prefill / encoder attention and split-sequence (flash-decoding) decode.
 *
 * Four implementations of the same math, all bf16 in, fp32 scores, fp32 online softmax (running
 * max and sum, rescaled as the max grows), fp32 accumulation of P@V, output rounded to bf16 once:
 *
 *   simple   one warp per (sequence, head, query row), keys one at a time, P kept in fp32. The
 *            readable reference on the device, the fallback for shapes or alignments the tiled
 *            kernels do not take (head_dim other than 64/128, unaligned pointers, scale <= 0),
 *            and what the test holds the fast kernels against at full size.
 *   prefill  tensor cores (mma.sync m16n8k16 bf16 -> fp32, operands through ldmatrix). A block
 *            owns BM query rows of one head; each warp 16*MT of them. K/V tiles of BN keys stream
 *            through a cp.async ring of STAGES buffers in shared memory. S = Q K^T stays in
 *            registers, the softmax runs on the accumulator fragments, and P is rounded to bf16
 *            (as PyTorch's flash SDPA does) to become the A operand of P@V straight from
 *            registers. The row sum l adds the fp32 p (before rounding), as flash SDPA does.
 *   decode   one query row per sequence. A block owns (sequence, kv head, split): the query
 *            heads of the GQA group (up to 16) are the 16 rows of the mma tile, so K and V are
 *            read once for the group. The 4 warps take 16 keys each of a 64-key tile; their
 *            states are merged in shared memory at the end of the split. Splits are sized from
 *            the length read on the device, so one captured launch fits every length up to
 *            max_kv. The last split of a group to finish (an atomic count in the workspace)
 *            merges the splits' (max, sum, unnormalised O): one launch, no second kernel.
 *   sm90     (attention_sm90.cu) the encoder's bidirectional head_dim 64 attention on Hopper:
 *            wgmma from shared memory, a loader warpgroup, the same softmax_step; prefill_auto
 *            takes it on compute capability 9.0 (VOX_ATTN_SM90=0: not).
 *
 * Paged caches (continuous batching): K/V rows are found through a block table per sequence
 * (kv_row); only the addresses change, so paged and contiguous launches on the same keys give
 * the same bits. The lookup costs a table read per row a thread loads, and a division unless
 * block_size is a power of two (then shifts). H200, blocks of 16 against contiguous: decode of
 * 32K keys 54.0 against 51.1 us (blocks of 64: 51.5), 8 x 400 keys 11.7 against 10.8 us,
 * prefill of 4096 rows +9%; with a division for every block size it was +18% and +17%.
 *
 * Rows of K/V past the valid length are never read: cp.async zero-fills them (src-size 0), so
 * stale or NaN cache rows cannot leak into P@V through 0 * NaN. Masked scores are -inf; a row
 * whose keys are all masked so far keeps max -inf and uses 0 as the exponent base, so no
 * inf - inf arises. Grid: x = query head, y = query tile (heaviest first when causal), z = batch. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <stdint.h>

#include "attention_common.cuh"
#include "common.cuh"
#include "kernels.h"

#ifndef VOX_HAVE_ATTN_SM90
/* Built without sm_90 among the architectures: the Hopper kernel's entries take nothing. */
namespace vk_attn {
bool sm90_takes(const AttnParams &) { return false; }
bool sm90_prefill_takes(const AttnParams &) { return false; }
void sm90_launch(int, const AttnParams &, cudaStream_t) {}
void sm90_info(int, int *regs, int *smem_bytes, int *blocks) { *regs = *smem_bytes = *blocks = -1; }
} // namespace vk_attn
#endif

namespace {

using namespace vk_attn;

/* Lane offsets (in elements, row stride LD) for ldmatrix.x4 over a 16x16 block at (0, 0):
 * a_off: matrices (rows 0-7, cols 0-7), (rows 8-15, cols 0-7), (rows 0-7, cols 8-15),
 *        (rows 8-15, cols 8-15): the A fragment of a row-major tile, and with .trans the B
 *        fragments of V (rows = keys) for two 8-wide column tiles.
 * b_off: matrices (rows 0-7, cols 0-7), (rows 0-7, cols 8-15), (rows 8-15, cols 0-7),
 *        (rows 8-15, cols 8-15): the B fragments of K (rows = keys) for two 8-key tiles. */
template <int LD> __device__ __forceinline__ int a_off(int lane) {
    return ((lane & 7) + ((lane >> 3) & 1) * 8) * LD + (lane >> 4) * 8;
}
template <int LD> __device__ __forceinline__ int b_off(int lane) {
    return ((lane & 7) + (lane >> 4) * 8) * LD + ((lane >> 3) & 1) * 8;
}

/* ---- the simple kernel ----------------------------------------------------------------------- */

/* One warp per (b, h, i); lane holds dims lane + 32*j. kv_len (decode) overrides t_k and causal. */
template <int DPL>
__global__ void __launch_bounds__(128) attn_simple_kernel(const AttnParams p) {
    const int64_t wid = (int64_t)blockIdx.x * 4 + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (wid >= (int64_t)p.batch * p.n_heads * p.t_q) return;
    const int i = (int)(wid % p.t_q);
    const int h = (int)((wid / p.t_q) % p.n_heads);
    const int b = (int)(wid / ((int64_t)p.t_q * p.n_heads));
    const int kh = h / p.group, D = p.head_dim;

    int64_t n_keys;
    if (p.kv_len) {
        n_keys = p.kv_len[b];
        n_keys = n_keys < 0 ? 0 : (n_keys > p.max_kv ? p.max_kv : n_keys);
    } else {
        n_keys = p.t_k;
        if (p.causal && p.q_pos0 + i + 1 < n_keys) n_keys = p.q_pos0 + i + 1;
    }
    const bf16 *qr = p.q + ((int64_t)b * p.t_q + i) * p.q_stride + (int64_t)h * D;
    const bf16 *kb = p.k + (int64_t)kh * D, *vb = p.v + (int64_t)kh * D;
    float q[DPL], o[DPL];
#pragma unroll
    for (int j = 0; j < DPL; j++) {
        const int d = lane + 32 * j;
        q[j] = d < D ? __bfloat162float(qr[d]) : 0.0f;
        o[j] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int64_t key = 0; key < n_keys; key++) {
        const int64_t row = kv_row(p, b, key);
        const bf16 *kr = kb + row * p.kv_stride, *vr = vb + row * p.kv_stride;
        float dot = 0.0f;
#pragma unroll
        for (int j = 0; j < DPL; j++) {
            const int d = lane + 32 * j;
            if (d < D) dot += q[j] * __bfloat162float(kr[d]);
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
        const float s = dot * p.scale;
        const float m_new = fmaxf(m, s);
        const float corr = expf(m - m_new), pr = expf(s - m_new);
        l = l * corr + pr;
#pragma unroll
        for (int j = 0; j < DPL; j++) {
            const int d = lane + 32 * j;
            o[j] = o[j] * corr + (d < D ? pr * __bfloat162float(vr[d]) : 0.0f);
        }
        m = m_new;
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    bf16 *orow = p.out + ((int64_t)b * p.t_q + i) * p.q_stride + (int64_t)h * D;
#pragma unroll
    for (int j = 0; j < DPL; j++) {
        const int d = lane + 32 * j;
        if (d < D) orow[d] = __float2bfloat16_rn(o[j] * inv);
    }
}

/* ---- the prefill / encoder kernel ------------------------------------------------------------ */

template <int D, int BM, int BN, int WARPS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32) attn_prefill_kernel(const AttnParams p) {
    constexpr int MT = BM / (16 * WARPS); /* 16-row m-tiles per warp */
    static_assert(MT >= 1 && MT * 16 * WARPS == BM, "BM must be 16 * WARPS * MT");
    static_assert(BN % 16 == 0 && STAGES >= 2, "tile shape");
    constexpr int LD = D + 8; /* padded row: the 8 rows an ldmatrix reads hit distinct banks */
    constexpr int NT = BN / 8, DT = D / 8, KS = D / 16, CPR = D / 8, THREADS = WARPS * 32;

    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem_raw); /* [BM][LD] */
    bf16 *sK = sQ + BM * LD;                         /* [STAGES][BN][LD] */
    bf16 *sV = sK + STAGES * BN * LD;                /* [STAGES][BN][LD] */

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane >> 2, tig = lane & 3;
    const int h = blockIdx.x, b = blockIdx.z;
    const SeqTile sq = seq_tile(p, BM);
    if (!sq.ok) return;
    const int t_q = sq.t_q, m0 = sq.m0;
    const int64_t kv_end = sq.kv_end;
    const int kh = h / p.group;
    const int n_tiles = (int)((kv_end + BN - 1) / BN);

    const bf16 *qg = p.q + sq.q_row0 * p.q_stride + (int64_t)h * D;
    const bf16 *kg = p.k + (int64_t)kh * D, *vg = p.v + (int64_t)kh * D;

    for (int c = threadIdx.x; c < BM * CPR; c += THREADS) {
        const int r = c / CPR, col = (c % CPR) * 8;
        const bool ok = m0 + r < t_q;
        vk_cp_async16(vk_smem_u32(sQ + r * LD + col), qg + (ok ? (int64_t)(m0 + r) * p.q_stride + col : 0),
                   ok);
    }
    /* A fixed trip count, unrolled: the block-table reads of a paged cache are all issued before
     * the copies that need them, instead of one read's latency before each copy. */
    static_assert(BN * CPR % THREADS == 0, "K/V tile pieces per thread");
    auto load_kv = [&](int tile, int stage) {
        const int64_t n0 = (int64_t)tile * BN;
        bf16 *dk = sK + stage * BN * LD, *dv = sV + stage * BN * LD;
#pragma unroll
        for (int i = 0; i < BN * CPR / THREADS; i++) {
            const int c = threadIdx.x + i * THREADS;
            const int r = c / CPR, col = (c % CPR) * 8;
            const bool ok = n0 + r < kv_end;
            const int64_t off = ok ? kv_row(p, b, n0 + r) * p.kv_stride + col : 0;
            vk_cp_async16(vk_smem_u32(dk + r * LD + col), kg + off, ok);
            vk_cp_async16(vk_smem_u32(dv + r * LD + col), vg + off, ok);
        }
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < n_tiles) load_kv(s, s);
        vk_cp_async_commit(); /* Q rides in the first group */
    }

    const int row0 = m0 + warp * 16 * MT; /* this warp's first row */
    float o[MT][DT][4];
    float m_run[MT][2], l_run[MT][2];
    uint32_t qa[MT][KS][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int dt = 0; dt < DT; dt++) o[mt][dt][0] = o[mt][dt][1] = o[mt][dt][2] = o[mt][dt][3] = 0.0f;
        m_run[mt][0] = m_run[mt][1] = -INFINITY;
        l_run[mt][0] = l_run[mt][1] = 0.0f;
    }

    for (int it = 0; it < n_tiles; it++) {
        vk_cp_async_wait<STAGES - 2>(); /* tile it (and Q) landed for this thread... */
        __syncthreads();             /* ...and for all; everyone is done with tile it-1 */
        {
            const int nxt = it + STAGES - 1;
            if (nxt < n_tiles) load_kv(nxt, nxt % STAGES); /* into the buffer of tile it-1 */
            vk_cp_async_commit();
        }
        if (it == 0) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int ks = 0; ks < KS; ks++)
                    vk_ldmatrix_x4(qa[mt][ks],
                                vk_smem_u32(sQ + (warp * MT + mt) * 16 * LD + ks * 16 + a_off<LD>(lane)));
        }
        const bf16 *sKt = sK + (it % STAGES) * BN * LD, *sVt = sV + (it % STAGES) * BN * LD;

        float s[MT][NT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int nt = 0; nt < NT; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.0f;
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
#pragma unroll
            for (int np = 0; np < NT / 2; np++) {
                uint32_t kb[4];
                vk_ldmatrix_x4(kb, vk_smem_u32(sKt + np * 16 * LD + ks * 16 + b_off<LD>(lane)));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    vk_mma_bf16_16816(s[mt][2 * np], qa[mt][ks], kb[0], kb[1]);
                    vk_mma_bf16_16816(s[mt][2 * np + 1], qa[mt][ks], kb[2], kb[3]);
                }
            }
        }

        /* Mask keys at or past a row's limit (key_limit). The warp's first row has the smallest
         * limit; tiles wholly below it need no mask. */
        const int64_t n0 = (int64_t)it * BN;
        if (n0 + BN > key_limit(sq, p.causal, row0)) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                const int lim[2] = {key_limit(sq, p.causal, row0 + mt * 16 + g),
                                    key_limit(sq, p.causal, row0 + mt * 16 + g + 8)};
                mask_keys<NT>(s[mt], n0, lim, tig);
            }
        }

#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            float alpha[2];
            softmax_step<NT>(s[mt], m_run[mt], l_run[mt], alpha, p.scale_log2);
#pragma unroll
            for (int dt = 0; dt < DT; dt++) {
                o[mt][dt][0] *= alpha[0];
                o[mt][dt][1] *= alpha[0];
                o[mt][dt][2] *= alpha[1];
                o[mt][dt][3] *= alpha[1];
            }
        }

        /* O += P V: the score accumulators of key tiles 2kk, 2kk+1 are the A fragment of k-step kk. */
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
            uint32_t pa[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                pa[mt][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                pa[mt][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                pa[mt][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                pa[mt][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
            }
#pragma unroll
            for (int dp = 0; dp < D / 16; dp++) {
                uint32_t vb[4];
                vk_ldmatrix_x4_trans(vb, vk_smem_u32(sVt + kk * 16 * LD + dp * 16 + a_off<LD>(lane)));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    vk_mma_bf16_16816(o[mt][2 * dp], pa[mt], vb[0], vb[1]);
                    vk_mma_bf16_16816(o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
                }
            }
        }
    }
    vk_cp_async_wait<0>();

#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const float l = quad_sum(l_run[mt][hh]);
            const float inv = l > 0.0f ? 1.0f / l : 0.0f;
            const int row = row0 + mt * 16 + g + 8 * hh;
            if (row < t_q) {
                bf16 *orow = p.out + (sq.q_row0 + row) * p.q_stride + (int64_t)h * D;
#pragma unroll
                for (int dt = 0; dt < DT; dt++)
                    *reinterpret_cast<uint32_t *>(orow + dt * 8 + tig * 2) =
                        pack_bf16(o[mt][dt][2 * hh] * inv, o[mt][dt][2 * hh + 1] * inv);
            }
        }
}

/* ---- the decode kernels ---------------------------------------------------------------------- */

constexpr int kDecodeTile = 64; /* keys a split's chunk is a multiple of (the plan's grain) */
constexpr int kDecodeMaxSplits = 64;

/* How sequence length L is cut: chunks of whole tiles, at most s_max of them, none empty. Shared
 * by the split kernel's blocks, so they always agree on who takes part in the merge. */
__host__ __device__ __forceinline__ void decode_plan(int64_t L, int s_max, int64_t *chunk,
                                                     int *n_active) {
    if (L <= 0) {
        *chunk = 0;
        *n_active = 0;
        return;
    }
    const int64_t per = (L + s_max - 1) / s_max;
    const int64_t c = (per + kDecodeTile - 1) / kDecodeTile * kDecodeTile;
    *chunk = c;
    *n_active = (int)((L + c - 1) / c);
}

__device__ __forceinline__ int64_t clamp_len(const AttnParams &p, int b) {
    int64_t L = p.kv_len[b];
    return L < 0 ? 0 : (L > p.max_kv ? p.max_kv : L);
}

/* grid (s_max, n_kv_heads * row_chunks, batch); row chunk rc covers query heads
 * kh*group + 16*rc .. +15 of the group. A pipeline stage holds 16 * WARPS keys, warp w takes keys
 * 16w .. 16w + 15 of each. WARP_PIPE: each warp copies its own 16 keys of a stage and waits for
 * them alone (no block barrier in the loop, so the warps' copies and math drift apart); else the
 * block copies whole stages together and meets at a barrier each stage. */
template <int D, int STAGES, int WARPS, bool WARP_PIPE>
__global__ void __launch_bounds__(WARPS * 32) attn_decode_split_kernel(const AttnParams p) {
    constexpr int LD = D + 8, KS = D / 16, DT = D / 8, CPR = D / 8, THREADS = WARPS * 32;
    constexpr int TILE = 16 * WARPS; /* keys a stage */
    constexpr int LDO = D + 4;       /* fp32 rows of the merge buffer */
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sK = reinterpret_cast<bf16 *>(smem_raw); /* [STAGES][TILE][LD] */
    bf16 *sV = sK + STAGES * TILE * LD;
    /* reused after the main loop: */
    float *sO = reinterpret_cast<float *>(smem_raw); /* [WARPS][16][LDO] */
    float *sM = sO + WARPS * 16 * LDO;               /* [WARPS][16] */
    float *sL = sM + WARPS * 16;                     /* [WARPS][16] */

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane >> 2, tig = lane & 3;
    const int b = blockIdx.z, split = blockIdx.x;
    const int row_chunks = (p.group + 15) / 16;
    vk_pdl_trigger(); /* launched by vk_launch: q is the previous kernel's output */
    vk_pdl_wait();
    const int kh = blockIdx.y / row_chunks, r0 = (blockIdx.y % row_chunks) * 16;
    const int nrows = min(16, p.group - r0);
    const int head0 = kh * p.group + r0; /* query head of tile row 0 */

    const int64_t L = clamp_len(p, b);
    int64_t chunk;
    int n_active;
    decode_plan(L, p.s_max, &chunk, &n_active);
    if (split >= n_active) {
        if (n_active == 0 && split == 0) /* empty cache: zeros, as the reference */
            for (int t = threadIdx.x; t < nrows * D; t += THREADS)
                p.out[(int64_t)b * p.q_stride + (int64_t)(head0 + t / D) * D + t % D] =
                    __float2bfloat16_rn(0.0f);
        return;
    }
    const int64_t k_begin = split * chunk;
    const int64_t k_end = k_begin + chunk < L ? k_begin + chunk : L;
    const int n_tiles = (int)((k_end - k_begin + TILE - 1) / TILE);

    const bf16 *kg = p.k + (int64_t)kh * D, *vg = p.v + (int64_t)kh * D;
    /* pieces of 16 bytes a thread copies a stage: of the whole stage, or of its warp's 16 keys */
    constexpr int PIECES = WARP_PIPE ? 16 * CPR / 32 : TILE * CPR / THREADS;
    static_assert(WARP_PIPE ? 16 * CPR % 32 == 0 : TILE * CPR % THREADS == 0,
                  "K/V tile pieces per thread");
    auto load_kv = [&](int tile, int stage) { /* unrolled, as the prefill kernel's */
        const int64_t n0 = k_begin + (int64_t)tile * TILE;
        bf16 *dk = sK + stage * TILE * LD, *dv = sV + stage * TILE * LD;
#pragma unroll
        for (int i = 0; i < PIECES; i++) {
            const int c = WARP_PIPE ? lane + i * 32 : threadIdx.x + i * THREADS;
            const int r = (WARP_PIPE ? warp * 16 : 0) + c / CPR, col = (c % CPR) * 8;
            const bool ok = n0 + r < k_end;
            const int64_t off = ok ? kv_row(p, b, n0 + r) * p.kv_stride + col : 0;
            vk_cp_async16(vk_smem_u32(dk + r * LD + col), kg + off, ok);
            vk_cp_async16(vk_smem_u32(dv + r * LD + col), vg + off, ok);
        }
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < n_tiles) load_kv(s, s);
        vk_cp_async_commit();
    }

    /* Q fragments straight from global memory (overlapping the first K/V loads); rows past the
     * group are zero. */
    uint32_t qa[KS][4];
    {
        const bf16 *qb = p.q + (int64_t)b * p.q_stride + (int64_t)head0 * D;
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int row = g + (j & 1) * 8, col = ks * 16 + tig * 2 + (j >> 1) * 8;
                qa[ks][j] = row < nrows
                                ? *reinterpret_cast<const uint32_t *>(qb + (int64_t)row * D + col)
                                : 0u;
            }
        }
    }

    float o[DT][4];
#pragma unroll
    for (int dt = 0; dt < DT; dt++) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};

    for (int it = 0; it < n_tiles; it++) {
        vk_cp_async_wait<STAGES - 2>();
        if (WARP_PIPE) /* the warp's own copies landed; its reads of the stage refilled next are done */
            __syncwarp();
        else
            __syncthreads();
        {
            const int nxt = it + STAGES - 1;
            if (nxt < n_tiles) load_kv(nxt, nxt % STAGES);
            vk_cp_async_commit();
        }
        /* this warp's 16 keys of the tile */
        const bf16 *sKt = sK + ((it % STAGES) * TILE + warp * 16) * LD;
        const bf16 *sVt = sV + ((it % STAGES) * TILE + warp * 16) * LD;
        float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            uint32_t kb[4];
            vk_ldmatrix_x4(kb, vk_smem_u32(sKt + ks * 16 + b_off<LD>(lane)));
            vk_mma_bf16_16816(s[0], qa[ks], kb[0], kb[1]);
            vk_mma_bf16_16816(s[1], qa[ks], kb[2], kb[3]);
        }
        const int64_t n0 = k_begin + (int64_t)it * TILE + warp * 16;
        if (n0 + 16 > k_end) {
#pragma unroll
            for (int nt = 0; nt < 2; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (n0 + nt * 8 + tig * 2 + (e & 1) >= k_end) s[nt][e] = -INFINITY;
        }
        float alpha[2];
        softmax_step<2>(s, m_run, l_run, alpha, p.scale_log2);
        uint32_t pa[4] = {pack_bf16(s[0][0], s[0][1]), pack_bf16(s[0][2], s[0][3]),
                          pack_bf16(s[1][0], s[1][1]), pack_bf16(s[1][2], s[1][3])};
#pragma unroll
        for (int dp = 0; dp < D / 16; dp++) {
            uint32_t vb[4];
            vk_ldmatrix_x4_trans(vb, vk_smem_u32(sVt + dp * 16 + a_off<LD>(lane)));
            o[2 * dp][0] *= alpha[0];
            o[2 * dp][1] *= alpha[0];
            o[2 * dp][2] *= alpha[1];
            o[2 * dp][3] *= alpha[1];
            o[2 * dp + 1][0] *= alpha[0];
            o[2 * dp + 1][1] *= alpha[0];
            o[2 * dp + 1][2] *= alpha[1];
            o[2 * dp + 1][3] *= alpha[1];
            vk_mma_bf16_16816(o[2 * dp], pa, vb[0], vb[1]);
            vk_mma_bf16_16816(o[2 * dp + 1], pa, vb[2], vb[3]);
        }
    }
    vk_cp_async_wait<0>();
    __syncthreads(); /* the pipeline buffers become the merge buffers */

    /* Merge the 4 warps' states (each saw a quarter of every tile). */
#pragma unroll
    for (int hh = 0; hh < 2; hh++) {
        const int row = g + 8 * hh;
        const float l = quad_sum(l_run[hh]);
        if (tig == 0) {
            sM[warp * 16 + row] = m_run[hh];
            sL[warp * 16 + row] = l;
        }
#pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            float *dst = sO + (warp * 16 + row) * LDO + dt * 8 + tig * 2;
            dst[0] = o[dt][2 * hh];
            dst[1] = o[dt][2 * hh + 1];
        }
    }
    __syncthreads();
    for (int t = threadIdx.x; t < nrows * D; t += THREADS) {
        const int row = t / D, d = t % D;
        float mx = -INFINITY;
#pragma unroll
        for (int w = 0; w < WARPS; w++) mx = fmaxf(mx, sM[w * 16 + row]);
        const float base = mx == -INFINITY ? 0.0f : mx;
        float acc = 0.0f, l = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; w++) {
            const float f = exp2f(sM[w * 16 + row] - base);
            acc += f * sO[(w * 16 + row) * LDO + d];
            l += f * sL[w * 16 + row];
        }
        const int head = head0 + row;
        if (p.write_final) {
            p.out[(int64_t)b * p.q_stride + (int64_t)head * D + d] =
                __float2bfloat16_rn(l > 0.0f ? acc / l : 0.0f);
        } else {
            const int64_t slot = ((int64_t)b * p.n_heads + head) * p.s_max + split;
            p.ws_o[slot * D + d] = acc;
            if (d == 0) {
                p.ws_ml[slot * 2] = mx;
                p.ws_ml[slot * 2 + 1] = l;
            }
        }
    }
    if (p.write_final) return;

    /* The last split of this (sequence, row chunk) to finish merges all of them, so no second
     * launch is needed: each block publishes its partials (fence), counts itself in, and the
     * one that completes the count reads the others' partials from L2 and resets the count. */
    __shared__ int s_last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned *count = p.ws_count + (int64_t)b * gridDim.y + blockIdx.y;
        s_last = atomicAdd(count, 1u) == (unsigned)(n_active - 1);
        if (s_last) *count = 0; /* the next launch is stream-ordered after this one */
    }
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    for (int t = threadIdx.x; t < nrows * D; t += THREADS) {
        const int row = t / D, d = t % D, head = head0 + row;
        const int64_t slot0 = ((int64_t)b * p.n_heads + head) * p.s_max;
        p.out[(int64_t)b * p.q_stride + (int64_t)head * D + d] =
            __float2bfloat16_rn(vk_merge_partials(p.ws_ml, p.ws_o, slot0, n_active, D, d));
    }
}

/* ---- launchers ------------------------------------------------------------------------------- */

/* An impossible launch, so that an unsupported shape surfaces at the caller's error check
 * (launchers cannot return errors). */
__global__ void attn_unsupported_kernel() {}
void launch_unsupported(cudaStream_t stream) { attn_unsupported_kernel<<<0, 0, 0, stream>>>(); }

void launch_simple(const AttnParams &p, cudaStream_t stream) {
    const int64_t warps = (int64_t)p.batch * p.n_heads * p.t_q;
    const unsigned blocks = (unsigned)((warps + 3) / 4);
    if (p.head_dim <= 64)
        attn_simple_kernel<2><<<blocks, 128, 0, stream>>>(p);
    else if (p.head_dim <= 128)
        attn_simple_kernel<4><<<blocks, 128, 0, stream>>>(p);
    else if (p.head_dim <= 256)
        attn_simple_kernel<8><<<blocks, 128, 0, stream>>>(p);
    else
        launch_unsupported(stream);
    VOX_K_LAUNCH_CHECK();
}

template <int D, int BM, int BN, int WARPS, int STAGES>
void launch_prefill(const AttnParams &p, cudaStream_t stream) {
    static std::atomic<uint64_t> done{0};
    constexpr size_t smem = (size_t)(BM + 2 * STAGES * BN) * (D + 8) * sizeof(bf16);
    auto kernel = attn_prefill_kernel<D, BM, BN, WARPS, STAGES>;
    vk_ensure_smem(kernel, smem, done);
    dim3 grid((unsigned)p.n_heads, (unsigned)((p.t_q + BM - 1) / BM), (unsigned)p.batch);
    kernel<<<grid, WARPS * 32, smem, stream>>>(p);
    VOX_K_LAUNCH_CHECK();
}

template <int D, int BM, int BN, int WARPS, int STAGES>
void info_prefill(int *regs, int *smem_bytes, int *blocks) {
    static std::atomic<uint64_t> done{0};
    constexpr size_t smem = (size_t)(BM + 2 * STAGES * BN) * (D + 8) * sizeof(bf16);
    auto kernel = attn_prefill_kernel<D, BM, BN, WARPS, STAGES>;
    vk_ensure_smem(kernel, smem, done);
    kernel_info(kernel, WARPS * 32, smem, regs, smem_bytes, blocks);
}
void info_simple(int *regs, int *smem_bytes, int *blocks) {
    kernel_info(attn_simple_kernel<4>, 128, 0, regs, smem_bytes, blocks);
}

/* The Hopper kernel's tilings (attention_sm90.cu) as table entries. */
template <int CONFIG> void launch_sm90(const AttnParams &p, cudaStream_t stream) {
    sm90_launch(CONFIG, p, stream);
}
template <int CONFIG> void info_sm90(int *regs, int *smem_bytes, int *blocks) {
    sm90_info(CONFIG, regs, smem_bytes, blocks);
}

struct PrefillConfig {
    int head_dim;
    const char *name;
    void (*launch)(const AttnParams &, cudaStream_t);
    void (*info)(int *, int *, int *);
    bool (*takes)(const AttnParams &); /* NULL: every shape tiled_ok accepts */
};
/* Index 0 is the simple kernel; the rest are the tiled variants the test times against each
 * other. Names: d<D> <BM>x<BN> w<warps> s<stages>. New entries go at the end, so that variant
 * numbers keep their meaning. */
const PrefillConfig kPrefill[] = {
    {0, "simple", launch_simple, info_simple},
    {64, "d64 64x64 w4 s2", launch_prefill<64, 64, 64, 4, 2>,
     info_prefill<64, 64, 64, 4, 2>},
    {64, "d64 128x64 w4 s2", launch_prefill<64, 128, 64, 4, 2>,
     info_prefill<64, 128, 64, 4, 2>},
    {64, "d64 128x64 w8 s2", launch_prefill<64, 128, 64, 8, 2>,
     info_prefill<64, 128, 64, 8, 2>},
    {64, "d64 128x128 w8 s2", launch_prefill<64, 128, 128, 8, 2>,
     info_prefill<64, 128, 128, 8, 2>},
    {64, "d64 128x64 w4 s3", launch_prefill<64, 128, 64, 4, 3>,
     info_prefill<64, 128, 64, 4, 3>},
    {128, "d128 64x64 w4 s2", launch_prefill<128, 64, 64, 4, 2>,
     info_prefill<128, 64, 64, 4, 2>},
    {128, "d128 128x64 w8 s2", launch_prefill<128, 128, 64, 8, 2>,
     info_prefill<128, 128, 64, 8, 2>},
    {128, "d128 64x32 w4 s3", launch_prefill<128, 64, 32, 4, 3>,
     info_prefill<128, 64, 32, 4, 3>},
    {128, "d128 128x32 w8 s3", launch_prefill<128, 128, 32, 8, 3>,
     info_prefill<128, 128, 32, 8, 3>},
    {64, "d64 64x128 w4 s2", launch_prefill<64, 64, 128, 4, 2>,
     info_prefill<64, 64, 128, 4, 2>},
    {64, "d64 256x64 w8 s2", launch_prefill<64, 256, 64, 8, 2>,
     info_prefill<64, 256, 64, 8, 2>},
    {64, "d64 128x128 w8 s3", launch_prefill<64, 128, 128, 8, 3>,
     info_prefill<64, 128, 128, 8, 3>},
    /* wgmma (sm_90a only): bidirectional d64 on a contiguous cache; 128 or 192 query rows */
    {64, "sm90 d64 128x128 s4", launch_sm90<0>, info_sm90<0>, sm90_takes},
    {64, "sm90 d64 192x128 s4", launch_sm90<1>, info_sm90<1>, sm90_takes},
    /* wgmma (sm_90a only): d128 prefill (causal from q_pos0, GQA, paged, batched chunks);
     * 128 query rows, 3 or 2 buffers of 128 keys */
    {128, "sm90 d128 128x128 s3", launch_sm90<2>, info_sm90<2>, sm90_prefill_takes},
    {128, "sm90 d128 128x128 s2", launch_sm90<3>, info_sm90<3>, sm90_prefill_takes},
};
constexpr int kPrefillSm90 = 13;     /* the first sm90 entry (d64) */
constexpr int kPrefillSm90D128 = 15; /* the first d128 sm90 entry */
constexpr int kNumPrefill = (int)(sizeof kPrefill / sizeof kPrefill[0]);
static_assert(kNumPrefill == kPrefillSm90D128 + 2 && kPrefillSm90D128 == kPrefillSm90 + 2,
              "kPrefillSm90 and kPrefillSm90D128 name the first sm90 entries");

bool aligned(const void *ptr, uintptr_t a) { return ((uintptr_t)ptr & (a - 1)) == 0; }

AttnParams make_params(void *out, const void *q, const void *k, const void *v, int batch, int t_q,
                       int t_k, int64_t kv_seq_stride, int n_heads, int n_kv_heads, int head_dim,
                       float scale, int causal, int64_t q_pos0) {
    AttnParams p = {};
    p.q = (const bf16 *)q;
    p.k = (const bf16 *)k;
    p.v = (const bf16 *)v;
    p.out = (bf16 *)out;
    p.batch = batch;
    p.t_q = t_q;
    p.t_k = t_k;
    p.n_heads = n_heads;
    p.n_kv_heads = n_kv_heads;
    p.group = n_kv_heads > 0 ? n_heads / n_kv_heads : 1;
    if (p.group < 1) p.group = 1;
    p.head_dim = head_dim;
    p.kv_seq_stride = kv_seq_stride;
    p.q_stride = (int64_t)n_heads * head_dim;
    p.kv_stride = (int64_t)n_kv_heads * head_dim;
    p.scale = scale;
    p.scale_log2 = scale * kLog2e;
    p.causal = causal != 0;
    p.q_pos0 = q_pos0;
    return p;
}

/* Whether the tensor-core kernels take these tensors: cp.async moves 16-byte pieces, the GQA
 * group must be whole, and the softmax folds a positive scale into exp2. */
bool tiled_ok(const AttnParams &p) {
    return (p.head_dim == 64 || p.head_dim == 128) && p.scale > 0.0f && p.n_kv_heads > 0 &&
           p.n_heads % p.n_kv_heads == 0 && aligned(p.q, 16) && aligned(p.k, 16) &&
           aligned(p.v, 16) && aligned(p.out, 4);
}

/* Whether prefill_auto may pick the Hopper kernels where they run (the encoder's d64 and the
 * decoder's d128 prompts): yes unless VOX_ATTN_SM90=0 in the environment (for A/B runs against
 * the mma.sync kernels; read once). */
bool sm90_auto_enabled() {
    static const bool on = [] {
        const char *e = getenv("VOX_ATTN_SM90");
        return !(e && e[0] == '0' && e[1] == 0);
    }();
    return on;
}

int prefill_auto(const AttnParams &p) {
    if (!tiled_ok(p)) return 0;
    /* VOX_ATTN_PREFILL=N forces tiled configuration N where it takes the shape (its head_dim,
     * and its takes()): A/B runs of the prompt and encoder attention in the product */
    static int forced = -2;
    const int env = vk_env_variant("VOX_ATTN_PREFILL", 1, kNumPrefill, 0, forced);
    if (env > 0 && kPrefill[env].head_dim == p.head_dim && (!kPrefill[env].takes || kPrefill[env].takes(p)))
        return env;
    /* Hopper, d128 (the decoder's prompts, paged or not, batched or not). H200, causal, 32/8
     * heads: 2048 rows 123.6 us against 149.9 (mma.sync 64x64), 4096 rows 416 against 545,
     * 32768 rows 23.3 against 33.4 ms (bench/NOTES-2026-12-02-encoder-pdecode.md). */
    if (p.head_dim == 128 && sm90_auto_enabled() && sm90_prefill_takes(p)) return kPrefillSm90D128;
    /* Hopper, d64 bidirectional (the encoder): 192-row tiles once they fill four waves, else
     * 128-row ones. H200, 1500 x 1500, 20 heads: one chunk 44.5 us (128 rows) against 53.3
     * (192) and 49.0 (mma.sync); 8 chunks 255 us (192 rows, 361 TFLOP/s) against 314 (128)
     * and 367 (mma.sync). */
    if (p.head_dim == 64 && sm90_auto_enabled() && sm90_takes(p)) {
        const int64_t blocks192 = (int64_t)p.batch * p.n_heads * ((p.t_q + 191) / 192);
        return blocks192 >= 4 * vk_sm_count() ? kPrefillSm90 + 1 : kPrefillSm90;
    }
    if (p.head_dim == 64) return 2; /* d64 128x64 w4 s2: the encoder's best (bench/NOTES-2026-12-01-kernels.md) */
    /* d128: 128-row tiles when they still give two blocks per SM, else 64-row ones */
    const int64_t blocks128 = (int64_t)p.batch * p.n_heads * ((p.t_q + 127) / 128);
    return blocks128 >= 2 * vk_sm_count() ? 7 : 6;
}

/* Splits per sequence: about 1024 (sequence, head, split) triples, i.e. 256 blocks for 32 query
 * heads over 8 KV heads, two per SM, capped by the tiles max_kv has. Depends only on the
 * workspace function's arguments so both agree. */
int decode_s_max(int batch, int n_heads, int64_t max_kv) {
    if (batch <= 0 || n_heads <= 0 || max_kv <= kDecodeTile) return 1;
    const int64_t tiles = (max_kv + kDecodeTile - 1) / kDecodeTile;
    int64_t want = 1024 / ((int64_t)batch * n_heads);
    if (want < 1) want = 1;
    int64_t s = tiles < want ? tiles : want;
    if (s > kDecodeMaxSplits) s = kDecodeMaxSplits;
    return (int)(s < 1 ? 1 : s);
}

/* The split kernel for one configuration, its dynamic shared memory opted in (once a device):
 * the pipeline's stages, reused as the warps' merge buffers after the loop. */
template <int D, int STAGES, int WARPS> constexpr size_t decode_smem() {
    constexpr size_t pipe = (size_t)2 * STAGES * 16 * WARPS * (D + 8) * sizeof(bf16);
    constexpr size_t merge = (size_t)WARPS * 16 * ((D + 4) + 2) * sizeof(float);
    return pipe > merge ? pipe : merge;
}
template <int D, int STAGES, int WARPS, bool WARP_PIPE> auto decode_kernel() {
    static std::atomic<uint64_t> done{0};
    auto kernel = attn_decode_split_kernel<D, STAGES, WARPS, WARP_PIPE>;
    vk_ensure_smem(kernel, decode_smem<D, STAGES, WARPS>(), done);
    return kernel;
}

template <int D, int STAGES, int WARPS, bool WARP_PIPE>
void launch_decode(const AttnParams &p, cudaStream_t stream) {
    const int row_chunks = (p.group + 15) / 16;
    dim3 grid((unsigned)p.s_max, (unsigned)(p.n_kv_heads * row_chunks), (unsigned)p.batch);
    vk_launch(decode_kernel<D, STAGES, WARPS, WARP_PIPE>(), grid, dim3(WARPS * 32),
              decode_smem<D, STAGES, WARPS>(), stream, p);
    VOX_K_LAUNCH_CHECK();
}

template <int D, int STAGES, int WARPS, bool WARP_PIPE>
void info_decode(int *regs, int *smem_bytes, int *blocks) {
    kernel_info(decode_kernel<D, STAGES, WARPS, WARP_PIPE>(), WARPS * 32,
                decode_smem<D, STAGES, WARPS>(), regs, smem_bytes, blocks);
}

/* The split kernel's configurations, by decode variant (1..): pipeline stages, warps a block,
 * per-warp pipelines, and whether the variant runs one split a sequence (no merge). */
struct DecodeConfig {
    const char *name;
    void (*launch64)(const AttnParams &, cudaStream_t);
    void (*launch128)(const AttnParams &, cudaStream_t);
    void (*info64)(int *, int *, int *);
    void (*info128)(int *, int *, int *);
    bool one_split;
};
#define DECODE_CONFIG(name, S, W, WP, one)                                                     \
    {name, launch_decode<64, S, W, WP>, launch_decode<128, S, W, WP>, info_decode<64, S, W, WP>, \
     info_decode<128, S, W, WP>, one}
constexpr DecodeConfig kDecode[] = {
    {"simple", nullptr, nullptr, nullptr, nullptr, false},
    /* per-warp pipelines of 3 stages: H200, 450 keys, 32/8 heads, d128: batch 128 69.5 us
     * contiguous / 77.1 paged (blocks of 16) against 72.5 / 81.9 for the block-synchronous
     * pipeline; batch 32 19.8 / 21.1 against 20.5 / 22.3; 32768 keys 50.8 against 51.8 (bench/
     * NOTES-2026-12-02-decode-attention.md). Six stages (one block an SM) and two warps a block
     * measured 30-50% slower: this kernel wants warps more than bytes in flight. */
    DECODE_CONFIG("split", 3, 4, true, false),
    DECODE_CONFIG("one split", 3, 4, true, true),
    DECODE_CONFIG("split block-sync", 3, 4, false, false),
    DECODE_CONFIG("split block-sync s2", 2, 4, false, false),
    /* more resident warps for the same shared memory (not yet timed): 3 blocks an SM of 4 warps
     * with 2 per-warp stages (12 warps an SM), and of 2 warps with 4 stages */
    DECODE_CONFIG("split wp s2", 2, 4, true, false),
    DECODE_CONFIG("split w2 wp s4", 4, 2, true, false),
    /* one warp a block: a block is one (sequence, kv head, split) streamed by one warp, so no
     * merge between warps, 26 KB of shared memory (d128, 3 stages), 8 blocks an SM: at batch 128
     * the 1024 blocks fit in one wave instead of four of 264. H200, paged blocks of 16, 450 keys:
     * batch 128 66.8 us against 76.8 (four warps), batch 32 55.0 against 21.2, batch 8 30.0
     * against 11.6; 4 stages (6 blocks an SM) 101 us at batch 128. Two warps, 3 stages: 69.4 at
     * 128. decode_auto_variant takes it for large grids. */
    DECODE_CONFIG("split w1 s3", 3, 1, true, false),
    DECODE_CONFIG("split w1 s4", 4, 1, true, false),
    DECODE_CONFIG("split w2 s3", 3, 2, true, false),
};
#undef DECODE_CONFIG
constexpr int kNumDecode = (int)(sizeof kDecode / sizeof kDecode[0]);

} // namespace

/* ---- exported -------------------------------------------------------------------------------- */

extern "C" {

/* Test hooks (declared in tests/gpu/test_kernels_attention.c): run one implementation by index
 * (-1: what vox_k_attention picks, 0: simple, 1..: the tiled variants). Returns 0, launching
 * nothing, when the variant does not take this shape. */
int vox_k_attention_variant_count(void) { return kNumPrefill; }
const char *vox_k_attention_variant_name(int variant) {
    return variant >= 0 && variant < kNumPrefill ? kPrefill[variant].name : "auto";
}
int vox_k_decode_attention_variant_info(int variant, int head_dim, int *regs, int *smem_bytes,
                                        int *blocks_per_sm);
/* Registers per thread, dynamic shared memory and resident blocks per SM of a prefill variant
 * (decode: variant -64 / -128 for the default split kernel of that head_dim). Returns 0 if
 * unknown. */
int vox_k_attention_variant_info(int variant, int *regs, int *smem_bytes, int *blocks_per_sm) {
    if (variant == -64 || variant == -128)
        return vox_k_decode_attention_variant_info(1, -variant, regs, smem_bytes, blocks_per_sm);
    if (variant < 0 || variant >= kNumPrefill) return 0;
    kPrefill[variant].info(regs, smem_bytes, blocks_per_sm);
    return 1;
}

/* Decode variants (vox_k_decode_attention_variant): how many, their names, and the resources of
 * a split-kernel variant at head_dim 64 or 128 (0: unknown, or the simple kernel). */
int vox_k_decode_attention_variant_count(void) { return kNumDecode; }
const char *vox_k_decode_attention_variant_name(int variant) {
    return variant >= 0 && variant < kNumDecode ? kDecode[variant].name : "auto";
}
int vox_k_decode_attention_variant_info(int variant, int head_dim, int *regs, int *smem_bytes,
                                        int *blocks_per_sm) {
    if (variant < 1 || variant >= kNumDecode || (head_dim != 64 && head_dim != 128)) return 0;
    (head_dim == 64 ? kDecode[variant].info64 : kDecode[variant].info128)(regs, smem_bytes,
                                                                          blocks_per_sm);
    return 1;
}

static void set_paging(AttnParams &p, const int32_t *tables, int table_width, int block_size) {
    p.tables = tables;
    p.table_width = table_width;
    p.block_size = block_size;
    p.block_shift = -1;
    for (int s = 0; s < 31; s++)
        if (block_size == 1 << s) p.block_shift = s;
}

static int prefill_run(int variant, const AttnParams &p, cudaStream_t stream) {
    if (variant < 0) variant = prefill_auto(p);
    if (variant >= kNumPrefill) return 0;
    if (variant > 0 && (!tiled_ok(p) || kPrefill[variant].head_dim != p.head_dim ||
                        (kPrefill[variant].takes && !kPrefill[variant].takes(p))))
        return 0;
    kPrefill[variant].launch(p, stream);
    return 1;
}

int vox_k_attention_variant(int variant, void *out_bf16, const void *q_bf16, const void *k_bf16,
                            const void *v_bf16, int batch, int t_q, int t_k, int64_t kv_seq_stride,
                            int n_heads, int n_kv_heads, int head_dim, float scale, int causal,
                            int64_t q_pos0, cudaStream_t stream) {
    if (batch <= 0 || t_q <= 0 || n_heads <= 0) return 1; /* nothing to compute */
    AttnParams p = make_params(out_bf16, q_bf16, k_bf16, v_bf16, batch, t_q, t_k < 0 ? 0 : t_k,
                               kv_seq_stride, n_heads, n_kv_heads, head_dim, scale, causal, q_pos0);
    return prefill_run(variant, p, stream);
}

/* The same over a paged cache (vox_k_attention_paged; variants as vox_k_attention_variant). */
int vox_k_attention_paged_variant(int variant, void *out_bf16, const void *q_bf16,
                                  const void *k_pool, const void *v_pool, int t_q, int64_t q_pos0,
                                  const int32_t *table_dev, int block_size, int n_heads,
                                  int n_kv_heads, int head_dim, float scale, cudaStream_t stream) {
    if (t_q <= 0 || n_heads <= 0) return 1;
    const int64_t t_k = q_pos0 + t_q;
    if (!table_dev || block_size <= 0 || q_pos0 < 0 || t_k > INT32_MAX) {
        launch_unsupported(stream);
        return 1;
    }
    AttnParams p = make_params(out_bf16, q_bf16, k_pool, v_pool, 1, t_q, (int)t_k, 0, n_heads,
                               n_kv_heads, head_dim, scale, 1, q_pos0);
    set_paging(p, table_dev, (int)((t_k + block_size - 1) / block_size), block_size);
    return prefill_run(variant, p, stream);
}

/* Several sequences' prompt chunks in one launch (vox_k_attention_paged_batch); variants as
 * vox_k_attention_variant, the simple kernel excepted (it returns 0: the caller then launches
 * each sequence on its own). */
int vox_k_attention_paged_batch_variant(int variant, void *out_bf16, const void *q_bf16,
                                        const void *k_pool, const void *v_pool, int n_seqs,
                                        int max_t_q, const int32_t *seq_row0_dev,
                                        const int32_t *row_pos_dev, const int32_t *tables_dev,
                                        int table_width, int block_size, int n_heads,
                                        int n_kv_heads, int head_dim, float scale,
                                        cudaStream_t stream) {
    if (n_seqs <= 0 || max_t_q <= 0 || n_heads <= 0) return 1;
    if (!tables_dev || !seq_row0_dev || !row_pos_dev || block_size <= 0 || table_width <= 0 ||
        (int64_t)table_width * block_size > INT32_MAX) {
        launch_unsupported(stream);
        return 1;
    }
    AttnParams p = make_params(out_bf16, q_bf16, k_pool, v_pool, n_seqs, max_t_q, 0, 0, n_heads,
                               n_kv_heads, head_dim, scale, 1, 0);
    set_paging(p, tables_dev, table_width, block_size);
    p.seq_row0 = seq_row0_dev;
    p.row_pos = row_pos_dev;
    if (variant < 0) variant = prefill_auto(p);
    if (variant == 0) return 0; /* the simple kernel takes one sequence a launch */
    return prefill_run(variant, p, stream);
}

int vox_k_attention_paged_batch(void *out_bf16, const void *q_bf16, const void *k_pool,
                                const void *v_pool, int n_seqs, int max_t_q,
                                const int32_t *seq_row0_dev, const int32_t *row_pos_dev,
                                const int32_t *tables_dev, int table_width, int block_size,
                                int n_heads, int n_kv_heads, int head_dim, float scale,
                                cudaStream_t stream) {
    return vox_k_attention_paged_batch_variant(-1, out_bf16, q_bf16, k_pool, v_pool, n_seqs,
                                               max_t_q, seq_row0_dev, row_pos_dev, tables_dev,
                                               table_width, block_size, n_heads, n_kv_heads,
                                               head_dim, scale, stream);
}

void vox_k_attention(void *out_bf16, const void *q_bf16, const void *k_bf16, const void *v_bf16,
                     int batch, int t_q, int t_k, int64_t kv_seq_stride, int n_heads,
                     int n_kv_heads, int head_dim, float scale, int causal, int64_t q_pos0,
                     cudaStream_t stream) {
    vox_k_attention_variant(-1, out_bf16, q_bf16, k_bf16, v_bf16, batch, t_q, t_k, kv_seq_stride,
                            n_heads, n_kv_heads, head_dim, scale, causal, q_pos0, stream);
}

void vox_k_attention_paged(void *out_bf16, const void *q_bf16, const void *k_pool, const void *v_pool,
                           int t_q, int64_t q_pos0, const int32_t *table_dev, int block_size,
                           int n_heads, int n_kv_heads, int head_dim, float scale,
                           cudaStream_t stream) {
    vox_k_attention_paged_variant(-1, out_bf16, q_bf16, k_pool, v_pool, t_q, q_pos0, table_dev,
                                  block_size, n_heads, n_kv_heads, head_dim, scale, stream);
}

/* Workspace: first the split counters, one per (sequence, kv head, row chunk), at most
 * batch * n_heads of them (kept at the start so that they stay put whatever the shape), then
 * the partial results [batch, n_heads, s_max] x (D + 2) floats. */
static size_t ws_counters(int batch, int n_heads) {
    return ((size_t)batch * n_heads * sizeof(unsigned) + 15) / 16 * 16;
}
size_t vox_k_decode_attention_workspace(int batch, int n_heads, int head_dim, int64_t max_kv) {
    const int s = decode_s_max(batch, n_heads, max_kv);
    if (s <= 1) return 0;
    return ws_counters(batch, n_heads) + (size_t)batch * n_heads * s * ((size_t)head_dim + 2) * sizeof(float);
}
size_t vox_k_decode_attention_workspace_init(void *workspace, int batch, int n_heads,
                                             cudaStream_t stream) {
    const size_t bytes = ws_counters(batch, n_heads);
    if (workspace) cudaMemsetAsync(workspace, 0, bytes, stream);
    return bytes;
}

/* The split configuration vox_k_decode_attention runs, or VOX_ATTN_DECODE=N (1 <= N <
 * kNumDecode) for A/B runs. One warp a block ("split w1 s3") once the (sequence, kv head, split)
 * blocks fill six of its eight slots an SM: H200, 450 keys, 32/8 heads, paged blocks of 16,
 * batch 128 (1024 blocks) 66.8 us against 76.8 for four warps a block; at batch 32 (256 blocks)
 * 55.0 against 21.2, the GPU mostly idle (bench/NOTES-2026-12-02-step-trace.md). */
constexpr bool same_name(const char *a, const char *b) {
    return *a == *b && (*a == 0 || same_name(a + 1, b + 1));
}
/* the index of the configuration named `name` in kDecode (a compile-time error if none) */
constexpr int decode_config(const char *name, int i = 0) {
    return i < kNumDecode ? (kDecode[i].name && same_name(kDecode[i].name, name) ? i
                                                                                 : decode_config(name, i + 1))
                          : throw "no such decode configuration";
}
constexpr int kDecodeSplit = decode_config("split"), kDecodeOneWarp = decode_config("split w1 s3");
static_assert(kDecodeSplit == 1 && kDecodeOneWarp > 1, "decode configurations");
static int decode_auto_variant(const AttnParams &p, int s_max) {
    static int picked = -2;
    const int env = vk_env_variant("VOX_ATTN_DECODE", 1, kNumDecode, 0, picked);
    if (env > 0) return env;
    const int64_t blocks = (int64_t)s_max * p.n_kv_heads * ((p.group + 15) / 16) * p.batch;
    return blocks >= 6LL * vk_sm_count() ? kDecodeOneWarp : kDecodeSplit;
}

/* Runs decode variant `variant` (-1 what vox_k_decode_attention picks, 0 simple, 1.. the split
 * kernel's configurations in kDecode) on p, whose kv_len and max_kv are set. */
static int decode_run(int variant, AttnParams p, void *workspace, cudaStream_t stream) {
    const bool ok = tiled_ok(p);
    if (variant < 0)
        variant = ok ? decode_auto_variant(p, decode_s_max(p.batch, p.n_heads, p.max_kv)) : 0;
    if (variant == 0) {
        launch_simple(p, stream);
        return 1;
    }
    if (variant >= kNumDecode || !ok) return 0;
    const DecodeConfig &cfg = kDecode[variant];
    p.s_max = cfg.one_split ? 1 : decode_s_max(p.batch, p.n_heads, p.max_kv);
    p.write_final = p.s_max == 1;
    if (!p.write_final) {
        if (!workspace || !aligned(workspace, 8)) {
            launch_unsupported(stream);
            return 1;
        }
        p.ws_count = (unsigned *)workspace;
        p.ws_ml = (float *)((char *)workspace + ws_counters(p.batch, p.n_heads));
        p.ws_o = p.ws_ml + (size_t)p.batch * p.n_heads * p.s_max * 2;
    }
    (p.head_dim == 64 ? cfg.launch64 : cfg.launch128)(p, stream);
    return 1;
}

/* Decode variants: -1 what vox_k_decode_attention picks, 0 simple, 1.. kDecode's configurations
 * of the split kernel (1: the default, splits as the workspace allows; 2: one split a sequence,
 * writing the output itself; 3, 4: block-synchronous pipelines of 3 and 2 stages; 5, 6: more
 * resident warps). */
int vox_k_decode_attention_variant(int variant, void *out_bf16, const void *q_bf16,
                                   const void *k_bf16, const void *v_bf16, int batch,
                                   const int32_t *kv_len_dev, int64_t max_kv,
                                   int64_t kv_seq_stride, int n_heads, int n_kv_heads,
                                   int head_dim, float scale, void *workspace,
                                   cudaStream_t stream) {
    if (batch <= 0 || n_heads <= 0) return 1;
    AttnParams p = make_params(out_bf16, q_bf16, k_bf16, v_bf16, batch, 1, 0, kv_seq_stride,
                               n_heads, n_kv_heads, head_dim, scale, 0, 0);
    p.kv_len = kv_len_dev;
    p.max_kv = max_kv < 0 ? 0 : max_kv;
    return decode_run(variant, p, workspace, stream);
}

/* The same over a paged cache (vox_k_decode_attention_paged), max_kv = table_width * block_size. */
int vox_k_decode_attention_paged_variant(int variant, void *out_bf16, const void *q_bf16,
                                         const void *k_pool, const void *v_pool, int batch,
                                         const int32_t *kv_len_dev, const int32_t *tables_dev,
                                         int table_width, int block_size, int n_heads,
                                         int n_kv_heads, int head_dim, float scale,
                                         void *workspace, cudaStream_t stream) {
    if (batch <= 0 || n_heads <= 0) return 1;
    const int64_t max_kv = (int64_t)table_width * block_size;
    if (!tables_dev || block_size <= 0 || table_width < 0 || max_kv > INT32_MAX) {
        launch_unsupported(stream);
        return 1;
    }
    AttnParams p = make_params(out_bf16, q_bf16, k_pool, v_pool, batch, 1, 0, 0, n_heads,
                               n_kv_heads, head_dim, scale, 0, 0);
    p.kv_len = kv_len_dev;
    p.max_kv = max_kv;
    set_paging(p, tables_dev, table_width, block_size);
    return decode_run(variant, p, workspace, stream);
}

void vox_k_decode_attention(void *out_bf16, const void *q_bf16, const void *k_bf16,
                            const void *v_bf16, int batch, const int32_t *kv_len_dev,
                            int64_t max_kv, int64_t kv_seq_stride, int n_heads, int n_kv_heads,
                            int head_dim, float scale, void *workspace, cudaStream_t stream) {
    vox_k_decode_attention_variant(-1, out_bf16, q_bf16, k_bf16, v_bf16, batch, kv_len_dev, max_kv,
                                   kv_seq_stride, n_heads, n_kv_heads, head_dim, scale, workspace,
                                   stream);
}

void vox_k_decode_attention_paged(void *out_bf16, const void *q_bf16, const void *k_pool,
                                  const void *v_pool, int batch, const int32_t *kv_len_dev,
                                  const int32_t *tables_dev, int table_width, int block_size,
                                  int n_heads, int n_kv_heads, int head_dim, float scale,
                                  void *workspace, cudaStream_t stream) {
    vox_k_decode_attention_paged_variant(-1, out_bf16, q_bf16, k_pool, v_pool, batch, kv_len_dev,
                                         tables_dev, table_width, block_size, n_heads, n_kv_heads,
                                         head_dim, scale, workspace, stream);
}

} // extern "C"
