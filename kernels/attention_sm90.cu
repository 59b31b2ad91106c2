/* Prefill attention on Hopper (sm_90a), the FlashAttention-3 design: the encoder's (head_dim 64,
 * bidirectional, contiguous K/V) and the decoder's prompt (head_dim 128, causal from q_pos0, GQA,
 * K/V in the paged cache, one sequence or several sequences' chunks a launch). One template: the
 * d64 instances are compiled for the encoder's case alone (GENERAL false), the d128 ones for all.
 *
 * The same math as attention.cu's tiled kernels (its softmax_step, shared through
 * attention_common.cuh): fp32 scores, the scale folded into exp2, running max and sum in fp32,
 * P rounded to bf16 for P@V while the row sum adds the fp32 p, fp32 O, one rounding at the end.
 * What changes is how the tensor cores are fed: wgmma.mma_async, one 64-row instruction per
 * warpgroup, reads K and V (and Q) straight from shared memory, so no warp spends issue slots on
 * ldmatrix, and the MMAs run while the same warps compute the softmax.
 *
 *   block    (query tile of BM = 64 * CWG rows, head, sequence); the grid and the tile a block
 *            takes are attention.cu's prefill kernel's (seq_tile: x = query head, y = query tile,
 *            heaviest first when causal, z = sequence; per sequence from seq_row0 / row_pos in a
 *            batched launch). 1 + CWG warpgroups, one block an SM.
 *   producer warpgroup 0 (setmaxnreg down): loads the Q tile once, then K/V tiles of 128 keys
 *            into a ring of STAGES buffers, with cp.async (16-byte pieces; each key's row found
 *            by kv_row, through the block table when paged; rows at or past the keys the tile
 *            sees are zero-filled and never read, as in attention.cu). Each thread's copies
 *            arrive on the buffer's "full" mbarrier when they land (cp.async.mbarrier.arrive
 *            .noinc, 128 arrivals); before refilling a buffer it waits on its "empty" mbarrier.
 *            cp.async rather than TMA: the same row lookup and zero-fill as the other kernels,
 *            and no tensor map to build on the host. A causal tile loads only the key tiles its
 *            last row sees.
 *   consumers warpgroups 1..CWG (setmaxnreg up), 64 query rows each. Per key tile j:
 *              S_j+1 = Q K_j+1^T  wgmma m64n128k16 x D/16, both operands in shared memory
 *              O    += P_j V_j    wgmma m64nDk16 x 8, P_j from registers (A), V from shared
 *              (wait S_j+1) mask, softmax_step on S_j+1 while P_j V_j runs
 *              (wait P_j V_j) release buffer j, O *= alpha, P_j+1 = bf16(S_j+1)
 *            so the exp2 work of one tile overlaps the MMAs of the previous one inside a
 *            warpgroup, and the CWG warpgroups (plus the producer) overlap with each other.
 *            Masking (key_limit: t_k, causal q_pos0 + row + 1) touches only the tiles that reach
 *            past the warp's first row's limit.
 *
 * Shared memory layout: a tile of R rows and D columns is D/64 panels of 64 columns, one after
 * the other, each R rows of 64 bf16 = 128 bytes stored with the 128-byte swizzle (16-byte piece
 * c of row r at piece c ^ (r % 8)), tiles and panels 1024-byte aligned. That is the canonical
 * "K-major, 128B swizzle" layout for Q (A) and K (B of Q K^T: rows = keys, K dim = head dim), the
 * K dim split in 64-wide panels as CUTLASS tiles it, and, read the other way, the "MN-major, 128B
 * swizzle" layout for V (B of P V: rows = keys = the K dim, 64 contiguous head dims a panel = one
 * N block), so K and V are written the same way. Descriptors: start address >> 4 in bits 0-13,
 * leading byte offset >> 4 in 16-29, stride byte offset >> 4 in 32-45, layout 1 (128B swizzle) in
 * bits 62-63. Q, K: 8-row groups 1024 bytes apart (stride offset); K-step ks of 16 starts in
 * panel ks / 4, 32 * (ks % 4) bytes into the swizzled row; the leading offset is unused. V: the
 * stride offset is the distance of 8-key groups (1024), the leading offset that of the N blocks
 * (the 64-column panels, 128 * 128 bytes apart; PTX ISA, "canonical layouts", MN-major 128B:
 * ((T,8,m),(8,k)) : ((1,T,LBO),(8T,SBO))); a K-step of 16 keys advances the start by 2048 bytes.
 * Fragment layouts: the wgmma accumulator of warp w of a warpgroup holds rows 16w + g and
 * 16w + g + 8 (g = lane / 4) in the mma.sync m16n8 order, n8 block after n8 block, and the
 * register A operand is mma.sync's A fragment: exactly what softmax_step and the P packing of
 * attention.cu already work on.
 *
 * Registers: the producer needs few, the consumers hold S (64 floats), P (32 words) and O (D / 2
 * floats) at once, hence setmaxnreg: 40 for the producer and 2 x 232 for the consumers (d128:
 * S + P + O = 160 of them; ptxas keeps to the budgets, the producer spills at 24), or 32 and
 * 3 x 160 (d64 only).
 * Shared memory: Q 128 * D bytes a warpgroup + 512 * D bytes a stage; d128 fits 3 stages
 * (225 KB). Everything is compiled for sm_90a only (kernels/CMakeLists.txt); the body is guarded
 * so the file also compiles for any other target, and the takes functions check the device at
 * run time. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <stdint.h>

#include "attention_common.cuh"
#include "common.cuh"
#include "wgmma.cuh"

namespace vk_attn {
namespace {

constexpr int kBN = 128;         /* keys per tile */
constexpr uint32_t kRow = 128;   /* bytes a panel row: 64 bf16, one 128-byte swizzle row */
constexpr int kPanel = 64;       /* columns a panel */

template <int D, int CWG, int STAGES> struct Sm90Cfg {
    static_assert(D == 64 || D == 128, "head_dim 64 or 128");
    static_assert(D == 64 || CWG == 2, "d128: two consumer warpgroups (S, P and O fill 160 registers)");
    static constexpr int BM = 64 * CWG;
    static constexpr int THREADS = 128 * (CWG + 1);
    static constexpr uint32_t Q_BYTES = (uint32_t)BM * D * 2;
    static constexpr uint32_t TILE_BYTES = (uint32_t)kBN * D * 2; /* one K or V tile */
    /* setmaxnreg budgets: 128 * producer + 128 * CWG * consumer <= 65536 (2 x 232 leaves 1024
     * registers spare; FlashAttention-3's 24 + 2 x 240 would spill our producer) */
    static constexpr int PRODUCER_REGS = CWG == 2 ? 40 : 32;
    static constexpr int CONSUMER_REGS = CWG == 2 ? 232 : 160;
    static_assert(128 * PRODUCER_REGS + 128 * CWG * CONSUMER_REGS <= 65536, "register budget");
    /* 1024 bytes of slack to align the tiles to the swizzle pattern's 1024-byte period */
    static constexpr size_t SMEM = 1024 + (size_t)Q_BYTES + (size_t)STAGES * 2 * TILE_BYTES;
    static_assert(SMEM + 256 <= 227 * 1024, "shared memory (the barriers take the 256)");
};

/* ---- PTX wrappers (sm_90) -------------------------------------------------------------------- */

/* The wgmma group protocol, the mbarrier wait before it and the K-major descriptor (Q, K):
 * wgmma.cuh; the cp.async arrival on an mbarrier: common.cuh. */

/* V (MN-major): 8-key groups 1024 bytes apart (stride offset), the 64-wide N blocks (panels of a
 * tile of kBN keys) kBN * 128 bytes apart (leading offset). d64 has one N block, so the leading
 * offset is unused there: 1024, the descriptor the d64-only kernel was measured with. */
template <int D> __device__ __forceinline__ uint64_t desc_mn_major(uint32_t addr) {
    return vk_desc_sw128(addr, D == 64 ? 1024 : kBN * kRow, 1024);
}

/* o += P V, 64 x 64, one k-step of 16 keys; P from registers (mma.sync's A fragment), V
 * MN-major (transposed: imm-trans-b 1). */
__device__ __forceinline__ void wgmma_pv(float (&o)[8][4], const uint32_t (&a)[4], uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"
        : "+f"(o[0][0]), "+f"(o[0][1]), "+f"(o[0][2]), "+f"(o[0][3]), "+f"(o[1][0]),
          "+f"(o[1][1]), "+f"(o[1][2]), "+f"(o[1][3]), "+f"(o[2][0]), "+f"(o[2][1]),
          "+f"(o[2][2]), "+f"(o[2][3]), "+f"(o[3][0]), "+f"(o[3][1]), "+f"(o[3][2]),
          "+f"(o[3][3]), "+f"(o[4][0]), "+f"(o[4][1]), "+f"(o[4][2]), "+f"(o[4][3]),
          "+f"(o[5][0]), "+f"(o[5][1]), "+f"(o[5][2]), "+f"(o[5][3]), "+f"(o[6][0]),
          "+f"(o[6][1]), "+f"(o[6][2]), "+f"(o[6][3]), "+f"(o[7][0]), "+f"(o[7][1]),
          "+f"(o[7][2]), "+f"(o[7][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db)
        : "memory");
#endif
}

/* The same at d128: o += P V, 64 x 128. */
__device__ __forceinline__ void wgmma_pv(float (&o)[16][4], const uint32_t (&a)[4], uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, {%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"
        : "+f"(o[0][0]), "+f"(o[0][1]), "+f"(o[0][2]), "+f"(o[0][3]),
          "+f"(o[1][0]), "+f"(o[1][1]), "+f"(o[1][2]), "+f"(o[1][3]),
          "+f"(o[2][0]), "+f"(o[2][1]), "+f"(o[2][2]), "+f"(o[2][3]),
          "+f"(o[3][0]), "+f"(o[3][1]), "+f"(o[3][2]), "+f"(o[3][3]),
          "+f"(o[4][0]), "+f"(o[4][1]), "+f"(o[4][2]), "+f"(o[4][3]),
          "+f"(o[5][0]), "+f"(o[5][1]), "+f"(o[5][2]), "+f"(o[5][3]),
          "+f"(o[6][0]), "+f"(o[6][1]), "+f"(o[6][2]), "+f"(o[6][3]),
          "+f"(o[7][0]), "+f"(o[7][1]), "+f"(o[7][2]), "+f"(o[7][3]),
          "+f"(o[8][0]), "+f"(o[8][1]), "+f"(o[8][2]), "+f"(o[8][3]),
          "+f"(o[9][0]), "+f"(o[9][1]), "+f"(o[9][2]), "+f"(o[9][3]),
          "+f"(o[10][0]), "+f"(o[10][1]), "+f"(o[10][2]), "+f"(o[10][3]),
          "+f"(o[11][0]), "+f"(o[11][1]), "+f"(o[11][2]), "+f"(o[11][3]),
          "+f"(o[12][0]), "+f"(o[12][1]), "+f"(o[12][2]), "+f"(o[12][3]),
          "+f"(o[13][0]), "+f"(o[13][1]), "+f"(o[13][2]), "+f"(o[13][3]),
          "+f"(o[14][0]), "+f"(o[14][1]), "+f"(o[14][2]), "+f"(o[14][3]),
          "+f"(o[15][0]), "+f"(o[15][1]), "+f"(o[15][2]), "+f"(o[15][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db)
        : "memory");
#endif
}

/* ---- the kernel ------------------------------------------------------------------------------ */

/* Whether p is the plain case the non-GENERAL instances are compiled for: one sequence per grid
 * z, bidirectional, contiguous K/V, prefill. */
bool plain(const AttnParams &p) { return !p.causal && !p.tables && !p.seq_row0 && !p.kv_len; }

/* GENERAL: the decoder's prefill (seq_tile, causal key limits, kv_row through a block table).
 * Otherwise only plain(p) (the encoder's): the tile, the key limit (t_k) and the key rows are
 * plain arithmetic, so the instance compiles to what the d64-only kernel did; the general
 * case's lookups and compares made the encoder's attention 5% slower on the H200. */
template <int D, int CWG, int STAGES, bool GENERAL>
__global__ void __launch_bounds__(Sm90Cfg<D, CWG, STAGES>::THREADS, 1)
    attn_sm90_kernel(const AttnParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using Cfg = Sm90Cfg<D, CWG, STAGES>;
    constexpr int BM = Cfg::BM;
    constexpr uint32_t TILE = Cfg::TILE_BYTES;
    constexpr int PPR = D / 8;        /* 16-byte pieces a row */
    constexpr int RSTEP = 128 / PPR;  /* rows the producer's 128 threads copy at once */
    extern __shared__ __align__(16) unsigned char smem_raw[];
    /* [0] Q landed; [1 + s] buffer s full; [1 + STAGES + s] buffer s empty */
    __shared__ __align__(8) uint64_t bars[1 + 2 * STAGES];

    SeqTile sq;
    if constexpr (GENERAL) {
        sq = seq_tile(p, BM);
        if (!sq.ok) return; /* the whole block: before any barrier */
    } else {
        sq.t_q = p.t_q;
        sq.q_row0 = (int64_t)blockIdx.z * p.t_q;
        sq.m0 = (int)blockIdx.y * BM;
        sq.t_k = sq.kv_end = p.t_k;
        sq.q_pos0 = 0; /* unused: not causal */
        sq.ok = true;
    }
    const int causal = GENERAL ? p.causal : 0;
    const uint32_t sQ = (vk_smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t sK = sQ + Cfg::Q_BYTES, sV = sK + STAGES * TILE;
    const uint32_t q_full = vk_smem_u32(&bars[0]);
    auto full = [&](int s) { return vk_smem_u32(&bars[1 + s]); };
    auto empty = [&](int s) { return vk_smem_u32(&bars[1 + STAGES + s]); };

    const int h = blockIdx.x, b = blockIdx.z;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int n_tiles = GENERAL ? (int)((sq.kv_end + kBN - 1) / kBN) : (p.t_k + kBN - 1) / kBN;

    if (threadIdx.x == 0) {
        vk_mbar_init(q_full, 128);
        for (int s = 0; s < STAGES; s++) {
            vk_mbar_init(full(s), 128);        /* the producer's threads, through cp.async */
            vk_mbar_init(empty(s), 4 * CWG);   /* lane 0 of every consumer warp */
        }
    }
    __syncthreads();

    if (wg == 0) {
        /* ---- producer: thread tid copies piece tid % PPR of rows tid / PPR + i * RSTEP ---- */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Cfg::PRODUCER_REGS));
        const int kh = h / p.group, piece = tid % PPR, r1 = tid / PPR;
        const bf16 *qg = p.q + sq.q_row0 * p.q_stride + (int64_t)h * D + piece * 8;
        const bf16 *kg = p.k + (int64_t)kh * D + piece * 8, *vg = p.v + (int64_t)kh * D + piece * 8;
#pragma unroll
        for (int i = 0; i < BM / RSTEP; i++) {
            const int r = r1 + i * RSTEP;
            const bool ok = sq.m0 + r < sq.t_q;
            vk_cp_async16(sQ + vk_sw128_off(r, piece, BM), qg + (ok ? (int64_t)(sq.m0 + r) * p.q_stride : 0),
                       ok);
        }
        vk_cp_async_mbar_arrive(q_full);
        for (int it = 0; it < n_tiles; it++) {
            const int s = it % STAGES;
            if (it >= STAGES) vk_mbar_wait_warp(empty(s), (uint32_t)((it / STAGES - 1) & 1));
            const int64_t n0 = (int64_t)it * kBN;
            /* unrolled: a paged cache's table reads are all issued before the copies */
#pragma unroll
            for (int i = 0; i < kBN / RSTEP; i++) {
                const int r = r1 + i * RSTEP;
                const bool ok = n0 + r < sq.kv_end;
                /* a key's row only where it exists: a table is read only as far as it goes */
                const int64_t off = ok ? (GENERAL ? kv_row(p, b, n0 + r)
                                                  : b * p.kv_seq_stride + n0 + r) * p.kv_stride
                                       : 0;
                vk_cp_async16(sK + s * TILE + vk_sw128_off(r, piece, kBN), kg + off, ok);
                vk_cp_async16(sV + s * TILE + vk_sw128_off(r, piece, kBN), vg + off, ok);
            }
            vk_cp_async_mbar_arrive(full(s));
        }
        vk_cp_async_wait<0>(); /* leave no copy in flight behind an exited thread */
        return;
    }

    /* ---- consumers ---- */
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Cfg::CONSUMER_REGS));
    const int cw = wg - 1, warp = tid / 32, lane = tid % 32;
    const int g = lane >> 2, tig = lane & 3;
    const int row0 = sq.m0 + cw * 64 + warp * 16; /* this warp's first query row */
    /* this warpgroup's rows of Q's panel 0; the start address field takes the offsets of the
     * other K-steps (an 18-bit shared address, so the field never carries) */
    const uint64_t dq = vk_desc_k_major(sQ + cw * 64 * kRow);
    /* the keys rows g, g + 8 see, and the warp's first row (the smallest limit) */
    const int lim[2] = {key_limit(sq, causal, row0 + g), key_limit(sq, causal, row0 + g + 8)};
    const int lim_warp = key_limit(sq, causal, row0);

    float o[D / 8][4], s[16][4], m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
    uint32_t pa[8][4];
#pragma unroll
    for (int dt = 0; dt < D / 8; dt++) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;

    /* S = Q K^T of tile it into s (issued, not waited for). K-step ks: panel ks / 4. */
    auto issue_qk = [&](int it) {
        const int st = it % STAGES;
        vk_mbar_wait_warp(full(st), (uint32_t)((it / STAGES) & 1));
        vk_fence_proxy_async();
        vk_wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < D / 16; ks++) {
            const uint32_t k_off = (uint32_t)(ks * 16 / kPanel), in_row = (uint32_t)(ks % 4) * 32;
            const uint64_t dk = vk_desc_k_major(sK + st * TILE + k_off * kBN * kRow + in_row);
            vk_wgmma_m64n128k16_ss(s, dq + ((k_off * BM * kRow + in_row) >> 4), dk, ks);
        }
        vk_wgmma_commit();
    };
    /* Mask keys at or past each row's limit (only tiles past the warp's first row's have any),
     * then the online-softmax step. */
    auto softmax = [&](int it, float (&alpha)[2]) {
        const int64_t n0 = (int64_t)it * kBN;
        if (n0 + kBN > lim_warp) mask_keys<16>(s, n0, lim, tig);
        softmax_step<16>(s, m_run, l_run, alpha, p.scale_log2);
    };
    /* P = bf16(p): the score blocks 2kk, 2kk+1 are the A fragment of k-step kk. */
    auto pack_p = [&]() {
#pragma unroll
        for (int kk = 0; kk < 8; kk++) {
            pa[kk][0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
            pa[kk][1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
            pa[kk][2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            pa[kk][3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
        }
    };

    /* O += P V of tile it, issued (wgmma.fence: o was rescaled and pa rewritten by ordinary
     * instructions since the last wgmma). */
    auto issue_pv = [&](int it) {
        vk_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kBN / 16; kk++)
            wgmma_pv(o, pa[kk], desc_mn_major<D>(sV + (it % STAGES) * TILE + kk * 16 * kRow));
        vk_wgmma_commit();
    };

    /* No branch lies between a wgmma and its wait (a value merged from two paths would be
     * copied out of the accumulators while the MMA runs, and ptxas would then serialise every
     * wgmma): the last tile's P V is peeled off the loop. */
    vk_mbar_wait_warp(q_full, 0);
    if (n_tiles > 0) {
        float alpha[2]; /* o is still 0: nothing to rescale */
        issue_qk(0);
        vk_wgmma_wait<0>();
        vk_wgmma_pin(s);
        softmax(0, alpha);
        pack_p();
    }
    for (int it = 0; it + 1 < n_tiles; it++) {
        issue_qk(it + 1);
        issue_pv(it);
        float alpha[2];
        vk_wgmma_wait<1>(); /* S of tile it + 1 */
        vk_wgmma_pin(s);
        softmax(it + 1, alpha);
        vk_wgmma_wait<0>(); /* P V of tile it: its buffer and pa are free again */
        vk_wgmma_pin(o);
        vk_wgmma_pin(s);
        if (lane == 0) vk_mbar_arrive(empty(it % STAGES));
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++) {
            o[dt][0] *= alpha[0];
            o[dt][1] *= alpha[0];
            o[dt][2] *= alpha[1];
            o[dt][3] *= alpha[1];
        }
        pack_p();
    }
    if (n_tiles > 0) {
        issue_pv(n_tiles - 1);
        vk_wgmma_wait<0>();
        vk_wgmma_pin(o);
    }

#pragma unroll
    for (int hh = 0; hh < 2; hh++) {
        const float l = quad_sum(l_run[hh]);
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        const int row = row0 + g + 8 * hh;
        if (row < sq.t_q) {
            bf16 *orow = p.out + (sq.q_row0 + row) * p.q_stride + (int64_t)h * D;
#pragma unroll
            for (int dt = 0; dt < D / 8; dt++)
                *reinterpret_cast<uint32_t *>(orow + dt * 8 + tig * 2) =
                    pack_bf16(o[dt][2 * hh] * inv, o[dt][2 * hh + 1] * inv);
        }
    }
#else
    (void)p;
#endif
}

/* ---- launchers ------------------------------------------------------------------------------- */

/* Whether the current device runs this file's sm_90a code, asked once per device: compute
 * capability exactly 9.0 (sm_90a code runs nowhere else), and the kernel's image loads there
 * (cudaFuncGetAttributes fails if the build has no such image). The attribute query is enough:
 * the file is built for sm_90a alone, so an image that loads is the real kernel, never an empty
 * stand-in from another target. */
bool device_ok() {
    /* 0 unknown, 1 yes, -1 no; atomic: engines on different devices ask from their threads */
    static std::atomic<signed char> cached[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return false;
    if (!cached[dev].load()) {
        bool ok = vk_compute_capability() == 90;
        if (ok) {
            cudaFuncAttributes a;
            ok = cudaFuncGetAttributes(&a, (const void *)attn_sm90_kernel<64, 2, 4, false>) ==
                 cudaSuccess;
            if (!ok) (void)cudaGetLastError(); /* the failed query is not the caller's error */
        }
        cached[dev].store(ok ? 1 : -1);
    }
    return cached[dev].load() > 0;
}

template <int D, int CWG, int STAGES, bool GENERAL>
void launch(const AttnParams &p, cudaStream_t stream) {
    using Cfg = Sm90Cfg<D, CWG, STAGES>;
    static std::atomic<uint64_t> done{0};
    auto kernel = attn_sm90_kernel<D, CWG, STAGES, GENERAL>;
    vk_ensure_smem(kernel, Cfg::SMEM, done);
    dim3 grid((unsigned)p.n_heads, (unsigned)((p.t_q + Cfg::BM - 1) / Cfg::BM), (unsigned)p.batch);
    /* a plain instance given what it was not compiled for fails (an empty grid: invalid
     * configuration) rather than computing something else; sm90_takes keeps this from happening */
    if (!GENERAL && !plain(p)) grid.x = 0;
    kernel<<<grid, Cfg::THREADS, Cfg::SMEM, stream>>>(p);
    VOX_K_LAUNCH_CHECK();
}

template <int D, int CWG, int STAGES, bool GENERAL>
void info(int *regs, int *smem_bytes, int *blocks) {
    using Cfg = Sm90Cfg<D, CWG, STAGES>;
    if (!device_ok()) {
        *regs = *smem_bytes = *blocks = -1;
        return;
    }
    static std::atomic<uint64_t> done{0};
    auto kernel = attn_sm90_kernel<D, CWG, STAGES, GENERAL>;
    vk_ensure_smem(kernel, Cfg::SMEM, done);
    kernel_info(kernel, Cfg::THREADS, Cfg::SMEM, regs, smem_bytes, blocks);
}

} // namespace

/* Bidirectional head_dim 64 attention over a contiguous K/V (the encoder's; GQA groups are
 * fine), on a device that runs sm_90a code. The rest (alignment, a positive scale) is tiled_ok's.
 * The d64 instances are compiled for exactly this (plain, GENERAL false). */
bool sm90_takes(const AttnParams &p) {
    return p.head_dim == 64 && plain(p) && p.t_k >= 0 && device_ok();
}

/* Head_dim 128 prefill: causal or not, any q_pos0, GQA, contiguous or paged K/V, one sequence or
 * a batch of chunks (seq_row0); not decode (kv_len). */
bool sm90_prefill_takes(const AttnParams &p) {
    return p.head_dim == 128 && !p.kv_len && p.t_k >= 0 && device_ok();
}

/* config 0: d64, 128 query rows (2 consumer warpgroups), 1: d64, 192 rows (3); both 4 buffers of
 * 128 keys. Buffer j + 1 is refilled only once buffer j + 1 - STAGES is released, at the end of
 * iteration j + 1 - STAGES, and S_j+1 is issued at the start of iteration j: STAGES - 2
 * iterations (about 1 us each at this shape) to hide a load's latency, hence 4 rather than 2.
 * config 2: d128, 128 rows, 3 buffers (one iteration of slack; 4 do not fit in 227 KB);
 * config 3: d128, 128 rows, 2 buffers (no slack: for timing against 2). */
void sm90_launch(int config, const AttnParams &p, cudaStream_t stream) {
    switch (config) {
    case 0: launch<64, 2, 4, false>(p, stream); break;
    case 1: launch<64, 3, 4, false>(p, stream); break;
    case 2: launch<128, 2, 3, true>(p, stream); break;
    default: launch<128, 2, 2, true>(p, stream); break;
    }
}
void sm90_info(int config, int *regs, int *smem_bytes, int *blocks) {
    switch (config) {
    case 0: info<64, 2, 4, false>(regs, smem_bytes, blocks); break;
    case 1: info<64, 3, 4, false>(regs, smem_bytes, blocks); break;
    case 2: info<128, 2, 3, true>(regs, smem_bytes, blocks); break;
    default: info<128, 2, 2, true>(regs, smem_bytes, blocks); break;
    }
}

} // namespace vk_attn
