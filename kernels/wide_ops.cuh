// The projections of the wide persistent decode step (issue 9; bench/DESIGN-wide-persistent-
// decode.md, its sections 3 and 6), for up to 64 sequences: the copiers that stream a block's
// weight tiles op after op, the stagers that bring in (and RMSNorm) each op's input, the
// consumers that multiply them on the tensor cores, and the epilogues. sm_90a only (wgmma):
// include it only from code compiled for sm_90a. tests/gpu/test_kernels_wide_ops.cu checks it
// against a CPU reference, one op a launch and several in one, and times it streamed op after op
// as the step would run it (without the waits between ops). Not yet in the product: as measured
// (bench/NOTES-2026-12-07d.md) a streamed layer is still slower than the op-by-op cuBLASLt GEMMs.
//
// A block is 512 threads, four warpgroups: 0 and 1 consume (threads 0-255), 2 copies the
// weights, 3 stages the input and runs the epilogues and the ops without weights. The kernel
// that runs them gives the stagers 200 registers, the copiers 56, the consumers 128.
// Ops: projections with an epilogue (EPI_STORE, EPI_GLU, EPI_ADD, EPI_QKV: RoPE and the KV cache
// write), and two without weights, run by the stagers of every block: EPI_NORM (an RMSNorm once
// for all blocks) and EPI_ATTN (the decode attention over the paged cache).
//  - An op's work is cut into units: a tile of 128 weight rows (a gate|up tile holds 64 gate rows
//    and the same 64 up rows, so that its epilogue has both halves of each SwiGLU) times a
//    K-slice of whole k-blocks of 64 columns. Units are dealt round robin, from an offset carried
//    from op to op, so that no block is always first.
//  - The copiers copy, k-block after k-block, each unit's 128 x 64 weights (16 KB, L2
//    evict-first) into a ring of kWStages buffers with cp.async, in the 128-byte-swizzled K-major
//    layout wgmma reads. They wait only for a free buffer, never for an op: the next op's weights
//    arrive while the current op ends.
//  - The stagers copy the same k-blocks' input rows (cp.async, kAhead k-blocks ahead, so that
//    the L2 round trip hides behind the weights) into a ring of kABufs swizzled buffers, and
//    RMSNorm them in place where the op has a norm. In the step they are the ones that would wait
//    for the op before. (Staged by the consumers, the norm's conversions and a barrier a k-block
//    put the consumers behind the weights: 2.0 against 2.7 TB/s for gate|up on an H100.)
//  - The consumers wait for both buffers of a k-block, then warpgroup w multiplies the input with
//    tile rows 64w..64w+63 (wgmma m64n64k16: the sequences are m, the weight rows n), one
//    k-block's group in flight, and free both buffers when the group is done. No barrier a
//    k-block: the two warpgroups go at their own pace. At a unit's end they store its fp32 sums
//    as the slice's partials and signal the stagers (unit_done), without waiting for anything.
//  - The stagers, once an op is staged, finish its units: a unit's share of its tile (rows
//    slice, slice + S, ...) once every slice's partials are stored (the tile's ticket), the
//    slices added in slice order (the same bits on every run), then the epilogue: store, SwiGLU,
//    or the residual add with the rows' sums of squares over the tile (the next RMSNorm's, added
//    by its staging in tile order). Spread over the tile's S units, a tile's partials cross L2
//    once; gathered on its last unit they took ~6 us at 64 rows and 8 slices.
//
// Numerics: the rounding points of the op-by-op path (matvec.cuh's stage_input, fused.cu):
// RMSNorm as bf16(g * bf16(x * inv)), inv = rsqrt(sum(x^2) / K + eps); gate and up rounded to
// bf16 before SwiGLU, its result rounded; the product rounded to bf16 before the residual add,
// the sum rounded again. Only the order of the fp32 sums differs from that path.
#ifndef VOX_KERNELS_WIDE_OPS_CUH
#define VOX_KERNELS_WIDE_OPS_CUH

#include <cuda.h> // CUtensorMap (the types only: the encoder comes through the runtime's entry point)
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "wgmma.cuh"

namespace wide {

using bf16 = __nv_bfloat16;

constexpr int kTileRows = 128;        // weight rows a unit: 64 for each consumer warpgroup
constexpr int kHalfRows = kTileRows / 2;
constexpr int kBK = 64;               // columns a k-block: one 128-byte swizzled row of bf16
constexpr int kMaxRows = 64;          // sequences: wgmma's m
constexpr int kConsumers = 256;       // warpgroups 0 and 1
constexpr int kCopiers = 128;         // warps 8 to 11: the weights
constexpr int kStagers = 128;         // warps 12 to 15: the input
constexpr int kThreads = kConsumers + kCopiers + kStagers;
// The rings' depths (VOX_WIDE_* override them for a timing sweep): kABufs - kAhead is how far the
// stagers' RMSNorm may run ahead of the consumers (kABufs > kAhead, or the stagers would wait for
// a k-block they have not handed over).
#ifndef VOX_WIDE_WSTAGES
#define VOX_WIDE_WSTAGES 8
#endif
#ifndef VOX_WIDE_ABUFS
#define VOX_WIDE_ABUFS 7
#endif
#ifndef VOX_WIDE_AHEAD
#define VOX_WIDE_AHEAD 4
#endif
constexpr int kWStages = VOX_WIDE_WSTAGES; // weight buffers in the ring
constexpr int kABufs = VOX_WIDE_ABUFS;     // staged-input buffers in theirs
constexpr int kAhead = VOX_WIDE_AHEAD;     // k-blocks of input the stagers copy ahead of the one they stage
static_assert(kABufs > kAhead, "the stagers must be able to hand a k-block over before copying further");
constexpr int kMaxNormK = 4096;       // the largest K of an RMSNorm'd op (the norm weights' room)
constexpr uint32_t kWBytes = kTileRows * 128; // a k-block of a unit's weights, 16 KB
constexpr uint32_t kABytes = kMaxRows * 128;  // a k-block of the staged input, 8 KB
constexpr unsigned kBarStagers = 1;           // the stagers' named barrier
// Units of one op a block may hold at once (its units_of(op) <= kUnitSlots * gridDim.x): the
// consumers are at most one op's units ahead of the stagers' epilogues.
constexpr int kUnitSlots = 16;

// EPI_NORM is not a projection: y = RMSNorm(in), once for every block's use (no weights, no units;
// the stagers of all blocks share the rows' pieces), so that the ops after it copy their input
// instead of normalising it again in every block.
// EPI_QKV is q|k|v with RoPE and the cache write (fused.cu's qkv_rope_cache, whose rounding it
// keeps): tile h is head h (kTileRows = head_dim); q heads go RoPE'd to y, key heads RoPE'd and
// value heads as they are to the caches' row slot[r].
// EPI_ATTN is not a projection either: the decode attention of every row's queries over its cached
// keys and values (attention.cu's decode numerics), run by the stagers of every block, a warp a
// (row, kv head, split of the keys); the last split of a (row, kv head) merges the splits.
enum Epilogue { EPI_STORE = 0, EPI_GLU = 1, EPI_ADD = 2, EPI_NORM = 3, EPI_QKV = 4, EPI_ATTN = 5 };
constexpr int kAttnMaxGroup = 4;   // query heads a kv head serves, at most
constexpr int kAttnMaxSplits = 64; // splits of a row's keys, at most

// One projection y = epilogue(stage(in) @ w^T) over `rows` sequences.
struct Op {
    const bf16 *w;       // [n, k], row-major
    // w's tensor map (encode_weight_map, in device memory, 64-byte aligned), or NULL: with it the
    // copiers load each k-block's two boxes of 64 rows x 64 columns with one thread's tensor
    // copies (TMA, 128B swizzle) instead of 128 threads' cp.async. Every op of a launch has one,
    // or none has (shared_init's `tma`).
    const CUtensorMap *wmap;
    int n, k;            // k a multiple of 8; EPI_GLU: n = 2 * ffn, gate rows then up rows
    int slices, slice_kb; // K-slices a tile (wide_plan), k-blocks a slice (the last may hold fewer)
    int tiles;           // output tiles: n / 128, or ffn / 64 for EPI_GLU, rounded up
    int epi;             // Epilogue
    const bf16 *in;      // row r at in + r * in_stride (k values)
    int in_stride;
    const bf16 *norm;    // RMSNorm weights [k], or NULL: the input is copied
    const float *ssq;    // norm: row r's sum of squares is sum over i < ssq_parts of
    int ssq_parts;       //   ssq[i * kMaxRows + r], added in that order
    float eps;
    float *part;         // [tiles * slices][kMaxRows][kTileRows] fp32: the units' sums
    unsigned *tickets;   // slices > 1: [tiles], zero before, left zero
    const bf16 *resid;   // EPI_ADD: y = resid + bf16(product), row r at resid + r * y_stride
    bf16 *y;             // row r at y + r * y_stride; EPI_GLU: ffn SwiGLU values a row
    int y_stride;
    float *ssq_out;      // EPI_ADD, or NULL: [tiles][kMaxRows], the rows' sums of squares of y
    // The ops' order inside a launch, or NULL: the stagers wait until *after reaches gridDim.x
    // before reading the input (the op that writes it counts its blocks there), and add 1 to
    // *done once this block's units of the op are finished (zero before the launch).
    const unsigned *after;
    unsigned *done;
    // EPI_QKV: n = (heads + 2 kv_heads) x 128; row r at position pos[r], its key and value to
    // cache row slot[r] (kv_heads x 128 values a row); y: the RoPE'd queries, heads x 128 a row
    const int32_t *pos, *slot;
    bf16 *k_cache, *v_cache;
    int heads, kv_heads;
    double theta;
    // EPI_ATTN (also heads, kv_heads, k_cache, v_cache; in: the queries, in_stride apart; y: the
    // output, heads x 128 a row): row r's keys 0 .. len[r] - 1, key j in cache row
    // table[r * table_width + j / block_size] * block_size + j % block_size; softmax in base 2 with
    // scores times scale_log2; splits of attn_split keys (a multiple of 32), attn_splits of them
    // at most a row (<= kAttnMaxSplits). part: [rows][kv_heads][group][attn_splits] slots of 128
    // output sums, then the slots' (max, sum) pairs; tickets: [rows * kv_heads].
    const int32_t *len, *table;
    int table_width, block_size;
    float scale_log2;
    int attn_split, attn_splits;
};

// The tile and K-slice count of an op of n x k at `slices` slices (fewer where k has fewer
// k-blocks; one where k is 0): fills tiles, slices and slice_kb.
__host__ __device__ inline void wide_plan(Op &op, int slices) {
    const int n_kb = (op.k + kBK - 1) / kBK; // 0 for EPI_ATTN, which has no k-loop
    if (slices < 1) slices = 1;
    op.slice_kb = (n_kb + slices - 1) / slices;
    op.slices = op.slice_kb ? (n_kb + op.slice_kb - 1) / op.slice_kb : 1;
    op.tiles = op.epi == EPI_NORM || op.epi == EPI_ATTN ? 0
               : op.epi == EPI_GLU ? (op.n / 2 + kHalfRows - 1) / kHalfRows
                                   : (op.n + kTileRows - 1) / kTileRows;
}
__host__ __device__ inline int units_of(const Op &op) { return op.tiles * op.slices; }
// Whether these functions take the op (rows <= kMaxRows is the launch's to keep).
__host__ __device__ inline bool op_supported(const Op &op) {
    if (op.epi == EPI_NORM)
        return op.norm && op.k % 8 == 0 && op.k > 0 && op.k <= kMaxNormK && op.in_stride % 8 == 0 &&
               op.y_stride % 8 == 0;
    if (op.epi == EPI_ATTN)
        return op.kv_heads > 0 && op.heads % op.kv_heads == 0 && op.heads / op.kv_heads <= kAttnMaxGroup &&
               op.attn_split > 0 && op.attn_split % 32 == 0 && op.attn_splits > 0 &&
               op.attn_splits <= kAttnMaxSplits && op.block_size > 0 && op.len && op.table && op.k_cache &&
               op.v_cache && op.part && op.tickets && op.in_stride % 8 == 0;
    if (op.epi == EPI_QKV && (op.n != (op.heads + 2 * op.kv_heads) * kTileRows || op.heads < 1 || op.kv_heads < 1 ||
                              !op.pos || !op.slot || !op.k_cache || !op.v_cache))
        return false;
    return op.k % 8 == 0 && op.k > 0 && op.n > 0 && (op.epi != EPI_GLU || op.n % 2 == 0) &&
           (!op.norm || op.k <= kMaxNormK) && op.in_stride % 8 == 0;
}

// The tensor map of a bf16 weight matrix [n, k] (k a multiple of 8) in boxes of 64 rows x 64
// columns, 128-byte swizzled (the layout vk_sw128_off describes), zeros past its edges. The driver's
// encoder is reached through the runtime (cudaGetDriverEntryPointByVersion), so nothing links
// libcuda. Returns false where the driver or the arguments refuse it.
inline bool encode_weight_map(CUtensorMap *map, const void *w, int n, int k) {
    static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    if (!encode) {
        void *fn = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) !=
                cudaSuccess ||
            q != cudaDriverEntryPointSuccess || !fn)
            return false;
        encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
    }
    const cuuint64_t dims[2] = {(cuuint64_t)k, (cuuint64_t)n}, strides[1] = {(cuuint64_t)k * 2};
    const cuuint32_t box[2] = {kBK, kHalfRows}, elem[2] = {1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(w), dims, strides, box, elem,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Shared memory, from a 1024-byte-aligned base (the swizzle's period).
struct Shared {
    unsigned char w[kWStages][kWBytes];
    unsigned char a[kABufs][kABytes];
    float inv[kMaxRows];                // the op's rows' RMSNorm scales
    float inv_freq[kHalfRows];          // EPI_QKV: RoPE's inverse frequencies (head_dim 128)
    union {
        __align__(16) bf16 g[kMaxNormK];                   // the op's RMSNorm weights
        float q[kStagers / 32][kAttnMaxGroup][kTileRows]; // EPI_ATTN: each stager warp's queries
    };
    uint64_t full[kWStages], empty[kWStages];    // the weights' ring
    uint64_t a_full[kABufs], a_empty[kABufs];    // the staged input's
    uint64_t unit_done[kUnitSlots];     // a unit's partials stored: unit k of the block in slot k % kUnitSlots
};
constexpr size_t kSmemBytes = sizeof(Shared) + 1024;
static_assert(kSmemBytes <= 227 * 1024, "shared memory");

// The first unit of an op this block takes when units are dealt from `offset`; then + gridDim.x.
__device__ __forceinline__ int first_unit(int offset) {
    return (int)((blockIdx.x + gridDim.x - offset % gridDim.x) % gridDim.x);
}
__device__ __forceinline__ void unit_range(const Op &op, int u, int &tile, int &slice, int &kb0, int &kb1) {
    tile = u / op.slices;
    slice = u % op.slices;
    kb0 = slice * op.slice_kb;
    kb1 = min(kb0 + op.slice_kb, (op.k + kBK - 1) / kBK);
}
// Weight row of tile row r (< 128), or -1 past the matrix.
__device__ __forceinline__ int weight_row(const Op &op, int tile, int r) {
    if (op.epi == EPI_GLU) {
        const int half = op.n / 2, i = tile * kHalfRows + (r & (kHalfRows - 1));
        return i < half ? (r < kHalfRows ? i : half + i) : -1;
    }
    const int i = tile * kTileRows + r;
    return i < op.n ? i : -1;
}

// ---- the copiers (warpgroup 2: warps 8 to 11) ----
// A 64 x 64 box of a weight matrix (columns c0.., rows r0..) into shared memory at dst, its bytes
// counted on the mbarrier bar; L2 evict-first.
__device__ __forceinline__ void tma_box(uint32_t dst, const CUtensorMap *map, int c0, int r0, uint32_t bar,
                                        uint64_t policy) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
                 "l"(map), "r"(c0), "r"(r0), "r"(bar), "l"(policy)
                 : "memory");
}
// Stream the weights of this block's units of ops[0 .. n_ops) through the ring. `it` counts the
// k-blocks streamed so far (the stagers and consumers keep the same count).
__device__ void copy_weights(Shared &sm, const Op *ops, int n_ops) {
    constexpr int kRowStep = kCopiers / 8, kRowsEach = kTileRows / kRowStep;
    const int t = threadIdx.x - kConsumers, piece = t % 8, r0 = t / 8; // tile rows r0 + kRowStep i
    const uint64_t policy = vk_evict_first_policy();
    int it = 0, offset = 0;
    for (int o = 0; o < n_ops; o++) {
        const Op op = ops[o]; // a copy in registers: a reference would be reloaded from memory after every asm barrier
        const int units = units_of(op);
        for (int u = first_unit(offset); u < units; u += gridDim.x) {
            int tile, slice, kb0, kb1;
            unit_range(op, u, tile, slice, kb0, kb1);
            if (op.wmap) { // one thread: two boxes of 64 rows a k-block (a GLU tile's gate and up rows)
                const int row0 = op.epi == EPI_GLU ? tile * kHalfRows : tile * kTileRows;
                const int row1 = op.epi == EPI_GLU ? op.n / 2 + tile * kHalfRows : row0 + kHalfRows;
                for (int kb = kb0; t == 0 && kb < kb1; kb++) {
                    const int m = it + kb - kb0, s = m % kWStages;
                    if (m >= kWStages) vk_mbar_wait(vk_smem_u32(&sm.empty[s]), (uint32_t)((m / kWStages - 1) & 1));
                    const uint32_t bar = vk_smem_u32(&sm.full[s]), dst = vk_smem_u32(sm.w[s]);
                    vk_mbar_expect_tx(bar, kWBytes);
                    tma_box(dst, op.wmap, kb * kBK, row0, bar, policy);
                    tma_box(dst + kWBytes / 2, op.wmap, kb * kBK, row1, bar, policy);
                }
                it += kb1 - kb0;
                continue;
            }
            for (int kb = kb0; kb < kb1; kb++, it++) {
                const int s = it % kWStages;
                if (it >= kWStages) vk_mbar_wait(vk_smem_u32(&sm.empty[s]), (uint32_t)((it / kWStages - 1) & 1));
                const uint32_t dst = vk_smem_u32(sm.w[s]);
                const int col = kb * kBK + piece * 8;
#pragma unroll
                for (int i = 0; i < kRowsEach; i++) {
                    const int row = weight_row(op, tile, r0 + kRowStep * i); // recomputed: registers are few here
                    const bool ok = row >= 0 && col < op.k;
                    vk_cp_async16_hint(dst + vk_sw128_off(r0 + kRowStep * i, piece, kTileRows),
                                    op.w + (ok ? (int64_t)row * op.k + col : 0), ok, policy);
                }
                vk_cp_async_mbar_arrive(vk_smem_u32(&sm.full[s]));
            }
        }
        offset += units;
    }
    vk_cp_async_wait<0>();
}

// ---- the stagers (warpgroup 3: warps 12 to 15) ----
// The k-blocks of this block's units of one op, in order: unit u (first_unit, + G, ...), its
// k-blocks kb0 .. kb1 - 1.
struct KCursor {
    int u, kb, kb1;
    __device__ __forceinline__ bool valid() const { return kb < kb1; }
};
__device__ __forceinline__ KCursor cursor_at(const Op &op, int u) {
    KCursor c = {u, 0, 0};
    if (u < units_of(op)) {
        int tile, slice;
        unit_range(op, u, tile, slice, c.kb, c.kb1);
    }
    return c;
}
__device__ __forceinline__ void cursor_next(const Op &op, KCursor &c) {
    if (++c.kb == c.kb1) c = cursor_at(op, c.u + gridDim.x);
}
// Polls *c (acquire) until it reaches target. A wait of more than 10 s means blocks that are not
// all resident, or a bug: it says which counter and traps rather than hang the device.
__device__ __noinline__ void wait_at_least(const unsigned *c, unsigned target, const char *what) {
    if (vk_ld_acquire(c) >= target) return;
    const long long t0 = vk_global_ns();
    for (unsigned spin = 0;; spin++) {
        __nanosleep(32);
        if (vk_ld_acquire(c) >= target) return;
        if ((spin & 1023) == 1023 && vk_global_ns() - t0 > 10000000000ll) {
            printf("wide_ops: block %d waited 10 s for %s (%u of %u)\n", blockIdx.x, what, vk_ld_acquire(c), target);
            __trap();
        }
    }
}
__device__ __forceinline__ void stagers_sync() {
    asm volatile("bar.sync %0, %1;" ::"n"(kBarStagers), "n"(kStagers) : "memory");
}

// A stager's pieces of a k-block: 16 bytes (piece t % 8) of rows t / 8 + kStageRowStep i.
constexpr int kStageRowStep = kStagers / 8, kStageRowsEach = kMaxRows / kStageRowStep;

// The stagers copy k-block c's input rows into buffer `buf` with cp.async (rows past `rows`,
// columns past k: zeros) as one cp.async group; an empty group where c is past the op's k-blocks,
// so that every stager counts the same groups.
__device__ __forceinline__ void copy_input(Shared &sm, const Op &op, int rows, const KCursor &c, int buf) {
    if (c.valid()) {
        const int t = threadIdx.x - kConsumers - kCopiers, piece = t % 8, r0 = t / 8;
        const uint32_t dst = vk_smem_u32(sm.a[buf]);
        const int col = c.kb * kBK + piece * 8;
#pragma unroll
        for (int i = 0; i < kStageRowsEach; i++) {
            const int r = r0 + kStageRowStep * i;
            const bool ok = r < rows && col < op.k;
            vk_cp_async16(dst + vk_sw128_off(r, piece, kMaxRows), op.in + (ok ? (int64_t)r * op.in_stride + col : 0), ok);
        }
    }
    vk_cp_async_commit();
}
// RMSNorm of 8 bf16 values v (in place) with their norm weights gw and the row's scale:
// bf16(g * bf16(x * inv)). The conversions are what this costs: x * inv in fp32, rounded two
// values an instruction (cvt.rn.bf16x2.f32), then g times it as one bf16x2 multiply (the product
// of two bf16 values is exact in fp32, so its one rounding is bf16(g * h) exactly).
__device__ __forceinline__ void norm8(uint32_t (&v)[4], const uint32_t (&gw)[4], float inv) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const float2 xf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&v[j]));
        const __nv_bfloat162 h = __floats2bfloat162_rn(xf.x * inv, xf.y * inv);
        const __nv_bfloat162 y = __hmul2(*reinterpret_cast<const __nv_bfloat162 *>(&gw[j]), h);
        v[j] = *reinterpret_cast<const uint32_t *>(&y);
    }
}
// The RMSNorm of this stager's pieces of k-block kb in buffer `buf`, in place (its own cp.async
// copies, landed), rows below `rows`.
__device__ __forceinline__ void norm_input(Shared &sm, int rows, int kb, int buf) {
    const int t = threadIdx.x - kConsumers - kCopiers, piece = t % 8, r0 = t / 8;
    const uint32_t base = vk_smem_u32(sm.a[buf]);
    const uint4 gv = *reinterpret_cast<const uint4 *>(&sm.g[kb * kBK + piece * 8]);
    const uint32_t gw[4] = {gv.x, gv.y, gv.z, gv.w};
#pragma unroll 2
    for (int i = 0; i < kStageRowsEach; i++) {
        const int r = r0 + kStageRowStep * i;
        if (r >= rows) break;
        const uint32_t at = base + vk_sw128_off(r, piece, kMaxRows);
        uint32_t v[4];
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]) : "r"(at));
        norm8(v, gw, sm.inv[r]);
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(at), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
                     : "memory");
    }
}

// The op's RMSNorm, before its first staging: the rows' scales into sm.inv and the norm weights
// into sm.g, between two stager barriers (the first: every stager done with the op before's).
__device__ __forceinline__ void norm_setup(Shared &sm, const Op &op, int rows) {
    if (!op.norm) return;
    const int t = threadIdx.x - kConsumers - kCopiers;
    stagers_sync();
    if (t < rows) {
        float ss = 0.0f;
        for (int i = 0; i < op.ssq_parts; i++) ss += __ldcg(op.ssq + (size_t)i * kMaxRows + t);
        sm.inv[t] = rsqrtf(ss / (float)op.k + op.eps);
    }
    const int k_pad = (op.k + kBK - 1) / kBK * kBK; // zeros past k: x * g there must be 0, not NaN
    for (int e = t * 8; e < k_pad; e += kStagers * 8)
        *(uint4 *)&sm.g[e] = e < op.k ? __ldg((const uint4 *)(op.norm + e)) : make_uint4(0u, 0u, 0u, 0u);
    stagers_sync();
}

__device__ void finish_units(Shared &sm, const Op &op, int rows, int offset, int &k);
__device__ void stage_op(Shared &sm, const Op &op, int rows, int &m, int offset, int &units_finished);
__device__ void norm_rows(Shared &sm, const Op &op, int rows);
__device__ void attention_units(Shared &sm, const Op &op, int rows);

// Stage the input of this block's k-blocks of ops[0 .. n_ops), in the consumers' order: k-block
// m (the m-th of the block) into buffer m % kABufs once the consumers have freed it, copied
// kAhead k-blocks before it is normalised and handed over (a_full), never across ops (the next
// op's input may not be ready before its wait: Op::after).
__device__ void stage_inputs(Shared &sm, const Op *ops, int n_ops, int rows) {
    int m = 0, offset = 0, units_finished = 0; // k-blocks staged, units dealt, units of the block finished
    for (int o = 0; o < n_ops; o++) {
        const Op op = ops[o]; // a copy in registers: a reference would be reloaded after every asm
        if (op.after) { // the op this one reads: every block's share finished
            if (threadIdx.x == kConsumers + kCopiers)
                wait_at_least(op.after, gridDim.x, "the op before");
            stagers_sync(); // what the poll acquired, to every stager
        }
        norm_setup(sm, op, rows);
        if (op.epi == EPI_QKV) { // the table its epilogue reads (the barrier: every stager done with the last)
            stagers_sync();
            const int t = threadIdx.x - kConsumers - kCopiers;
            if (t < kHalfRows) sm.inv_freq[t] = vk_rope_inv_freq(t, kTileRows, op.theta);
            stagers_sync();
        }
        if (op.epi == EPI_NORM) {
            norm_rows(sm, op, rows);
        } else if (op.epi == EPI_ATTN) {
            attention_units(sm, op, rows);
        } else {
            stage_op(sm, op, rows, m, offset, units_finished);
        }
        if (op.done) {
            stagers_sync(); // every stager's stores of the op, released by the add
            if (threadIdx.x == kConsumers + kCopiers) vk_red_release_add(op.done, 1u);
        }
        offset += units_of(op);
    }
}

// The stagers' part of a projection: its k-blocks' input into the ring, then its units finished.
__device__ void stage_op(Shared &sm, const Op &op, int rows, int &m, int offset, int &units_finished) {
    KCursor pre = cursor_at(op, first_unit(offset)), cur = pre;
    int ahead = m; // the k-block the next copy is of
    auto copy_next = [&]() {
        if (pre.valid() && ahead >= kABufs) // its buffer free: k-block ahead - kABufs consumed
            vk_mbar_wait(vk_smem_u32(&sm.a_empty[ahead % kABufs]), (uint32_t)((ahead / kABufs - 1) & 1));
        copy_input(sm, op, rows, pre, ahead % kABufs);
        if (pre.valid()) {
            cursor_next(op, pre);
            ahead++;
        }
    };
    for (int d = 0; d < kAhead; d++) copy_next();
    for (; cur.valid(); cursor_next(op, cur), m++) {
        copy_next();
        vk_cp_async_wait<kAhead>(); // this stager's copies of k-block m have landed
        if (op.norm) norm_input(sm, rows, cur.kb, m % kABufs);
        vk_fence_proxy_async(); // the copies and the norm's stores before wgmma's reads
        vk_mbar_arrive(vk_smem_u32(&sm.a_full[m % kABufs]));
    }
    vk_cp_async_wait<0>();
    finish_units(sm, op, rows, offset, units_finished);
}

// EPI_NORM: this block's share of the rows' 16-byte pieces (rows x k / 8 of them, cut in gridDim.x
// contiguous shares), normalised from L2 to y.
__device__ void norm_rows(Shared &sm, const Op &op, int rows) {
    const int t = threadIdx.x - kConsumers - kCopiers, per_row = op.k / 8;
    const int total = rows * per_row, share = (total + gridDim.x - 1) / gridDim.x;
    const int p0 = blockIdx.x * share, p1 = min(p0 + share, total);
    for (int p = p0 + t; p < p1; p += kStagers) {
        const int r = p / per_row, col = (p % per_row) * 8;
        const uint4 xv = __ldcg((const uint4 *)(op.in + (int64_t)r * op.in_stride + col));
        const uint4 gv = *reinterpret_cast<const uint4 *>(&sm.g[col]);
        uint32_t v[4] = {xv.x, xv.y, xv.z, xv.w};
        const uint32_t gw[4] = {gv.x, gv.y, gv.z, gv.w};
        norm8(v, gw, sm.inv[r]);
        *(uint4 *)(op.y + (int64_t)r * op.y_stride + col) = make_uint4(v[0], v[1], v[2], v[3]);
    }
}

// EPI_ATTN: the stagers' warps of every block take the (row, kv head, split) items in turn. A
// warp: its group's queries in shared memory (fp32), then its split's keys 32 at a time, a lane a
// key for the scores (the whole 128-dim dot product against the queries, broadcast from shared
// memory), the online softmax of attention.cu's decode kernel (base 2, p from the running
// maximum, the sum of fp32 p, P rounded to bf16 for P @ V), then P @ V with a lane 4 dims of each
// head. A row of one split writes its output; otherwise the split stores its partials and takes
// the (row, kv head)'s ticket, and the last merges the splits in split order (vk_merge_partials).
__device__ void attention_units(Shared &sm, const Op &op, int rows) {
    const int t = threadIdx.x - kConsumers - kCopiers, warp = t / 32, lane = t % 32;
    const int G = op.heads / op.kv_heads, kd = op.kv_heads * kTileRows, S = op.attn_splits;
    const int warps = gridDim.x * (kStagers / 32), items = rows * op.kv_heads * S;
    float(&qs)[kAttnMaxGroup][kTileRows] = sm.q[warp];
    stagers_sync(); // sm.q shares its room with sm.g: every stager done with the op before's norm
    const size_t slots = (size_t)rows * op.kv_heads * G * S; // the partials' (max, sum) after the sums
    float *part_o = op.part, *part_ml = op.part + slots * kTileRows;
    for (int it = blockIdx.x * (kStagers / 32) + warp; it < items; it += warps) {
        const int s = it % S, g = (it / S) % op.kv_heads, r = it / S / op.kv_heads;
        const int len = op.len[r], n_splits = (len + op.attn_split - 1) / op.attn_split;
        if (s >= n_splits) continue;
        const int k0 = s * op.attn_split, k1 = min(len, k0 + op.attn_split);
        __syncwarp(); // the last item's reads of qs done
        for (int e = lane; e < G * kTileRows; e += 32)
            qs[e / kTileRows][e % kTileRows] =
                vk_f(__ldcg(op.in + (int64_t)r * op.in_stride + (int64_t)(g * G) * kTileRows + e));
        __syncwarp();
        float m[kAttnMaxGroup], l[kAttnMaxGroup], o[kAttnMaxGroup][4];
#pragma unroll
        for (int h = 0; h < kAttnMaxGroup; h++) {
            m[h] = -INFINITY, l[h] = 0.0f;
#pragma unroll
            for (int e = 0; e < 4; e++) o[h][e] = 0.0f;
        }
        for (int j0 = k0; j0 < k1; j0 += 32) {
            const int j = j0 + lane;
            const bool valid = j < k1;
            const int64_t row = valid ? (int64_t)op.table[(size_t)r * op.table_width + j / op.block_size] *
                                                op.block_size + j % op.block_size
                                      : 0;
            float sc[kAttnMaxGroup];
#pragma unroll
            for (int h = 0; h < kAttnMaxGroup; h++) sc[h] = 0.0f;
            if (valid) {
                const bf16 *kr = op.k_cache + row * kd + (int64_t)g * kTileRows;
#pragma unroll 2
                for (int d = 0; d < kTileRows; d += 8) {
                    float kf[8];
                    vk_unpack8(__ldcg((const uint4 *)(kr + d)), kf);
#pragma unroll
                    for (int h = 0; h < kAttnMaxGroup; h++)
                        if (h < G)
#pragma unroll
                            for (int e = 0; e < 8; e++) sc[h] = fmaf(qs[h][d + e], kf[e], sc[h]);
                }
            }
            float p[kAttnMaxGroup];
#pragma unroll
            for (int h = 0; h < kAttnMaxGroup; h++) {
                const float sh = valid ? sc[h] : -INFINITY;
                float alpha;
                const float base = vk_softmax_raise(m[h], vk_warp_max(sh) * op.scale_log2, alpha);
                p[h] = vk_fast_exp2(fmaf(sh, op.scale_log2, -base));
                l[h] = l[h] * alpha + vk_warp_sum(p[h]);
#pragma unroll
                for (int e = 0; e < 4; e++) o[h][e] *= alpha;
            }
            const int n = min(32, k1 - j0);
            for (int u = 0; u < n; u++) { // P @ V: key j0 + u, a lane dims 4 lane .. 4 lane + 3
                const int64_t vrow = __shfl_sync(0xffffffffu, row, u);
                const uint2 vv = __ldcg((const uint2 *)(op.v_cache + vrow * kd + (int64_t)g * kTileRows + 4 * lane));
                const float2 v01 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&vv.x));
                const float2 v23 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&vv.y));
#pragma unroll
                for (int h = 0; h < kAttnMaxGroup; h++) {
                    const float pb = vk_round(__shfl_sync(0xffffffffu, p[h], u));
                    o[h][0] = fmaf(pb, v01.x, o[h][0]), o[h][1] = fmaf(pb, v01.y, o[h][1]);
                    o[h][2] = fmaf(pb, v23.x, o[h][2]), o[h][3] = fmaf(pb, v23.y, o[h][3]);
                }
            }
        }
        bf16 *out = op.y + (int64_t)r * op.y_stride + (int64_t)(g * G) * kTileRows + 4 * lane;
        if (n_splits == 1) {
#pragma unroll
            for (int h = 0; h < kAttnMaxGroup; h++) // constant indices: o stays in registers
                if (h < G)
#pragma unroll
                    for (int e = 0; e < 4; e++) out[h * kTileRows + e] = vk_bf(o[h][e] / l[h]);
            continue;
        }
        const size_t slot0 = ((size_t)(r * op.kv_heads + g) * G) * S; // head h, split s: slot0 + h S + s
#pragma unroll
        for (int h = 0; h < kAttnMaxGroup; h++) {
            if (h >= G) continue;
#pragma unroll
            for (int e = 0; e < 4; e++) __stcg(part_o + (slot0 + h * S + s) * kTileRows + 4 * lane + e, o[h][e]);
            if (lane == 0) __stcg((float2 *)(part_ml + (slot0 + h * S + s) * 2), make_float2(m[h], l[h]));
        }
        __syncwarp(); // the warp's partials, then one lane's acquire-release ticket publishes them
        unsigned last = 0;
        if (lane == 0) {
            unsigned *tk = &op.tickets[r * op.kv_heads + g];
            last = vk_atom_add_acq_rel(tk, 1u) == (unsigned)(n_splits - 1);
            if (last) *tk = 0; // every split of the (row, kv head) has counted itself
        }
        last = __shfl_sync(0xffffffffu, last, 0);
        if (!last) continue;
        __syncwarp(); // what lane 0's ticket acquired, to the warp's loads
        for (int h = 0; h < G; h++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                out[h * kTileRows + e] =
                    vk_bf(vk_merge_partials(part_ml, part_o, slot0 + h * S, n_splits, kTileRows, 4 * lane + e));
    }
}

// ---- the consumers (warpgroups 0 and 1) ----
// The accumulator fragment of wgmma m64n64 (a warpgroup's): thread (warp w, lane l) holds rows
// w * 16 + l / 4 (+ 8) and columns j * 8 + 2 (l % 4) (+ 1): acc[j][2 h + e] is row
// w * 16 + l / 4 + 8 h, column j * 8 + 2 (l % 4) + e.
using Acc = float[8][4];

// A unit's sums into its slice's partials (rows < `rows`): part + ((tile * slices + slice) *
// kMaxRows + row) * kTileRows + tile row.
__device__ __forceinline__ void store_partials(const Op &op, int rows, int tile, int slice, const Acc &acc) {
    const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane / 4, tig = lane % 4;
    float *base = op.part + (size_t)(tile * op.slices + slice) * kMaxRows * kTileRows + wg * kHalfRows + 2 * tig;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int r = warp * 16 + g + 8 * h;
        if (r >= rows) continue;
#pragma unroll
        for (int j = 0; j < 8; j++)
            __stcg((float2 *)(base + (size_t)r * kTileRows + j * 8), make_float2(acc[j][2 * h], acc[j][2 * h + 1]));
    }
}

// EPI_QKV's epilogue of row r's values sf (columns c4 .. c4 + 3 of head `tile`, a warp the row):
// rounded to bf16, then RoPE on q and key heads as fused.cu's rotate does it (the pair of column
// i < 64 is i + 64, which lane + 16 holds), and stored: queries to y, keys and values to the
// caches' row slot[r].
__device__ __forceinline__ void qkv_epilogue(const Shared &sm, const Op &op, int r, int tile, int c4, const float (&sf)[4]) {
    const int lane = threadIdx.x % 32, kd = op.kv_heads * kTileRows;
    float v[4];
#pragma unroll
    for (int e = 0; e < 4; e++) v[e] = vk_round(sf[e]);
    bf16 *dst;
    if (tile < op.heads + op.kv_heads) {
        const float pos = (float)op.pos[r];
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float other = __shfl_xor_sync(0xffffffffu, v[e], 16);
            const int i = (c4 + e) % kHalfRows;
            float sn, cs;
            sincosf(pos * sm.inv_freq[i], &sn, &cs);
            float o1, o2; // dims i and i + 64
            if (lane < 16) vk_rope_rotate(v[e], other, vk_round(cs), vk_round(sn), &o1, &o2);
            else vk_rope_rotate(other, v[e], vk_round(cs), vk_round(sn), &o1, &o2);
            v[e] = lane < 16 ? o1 : o2;
        }
        dst = tile < op.heads ? op.y + (int64_t)r * op.y_stride + (int64_t)tile * kTileRows
                              : op.k_cache + (int64_t)op.slot[r] * kd + (int64_t)(tile - op.heads) * kTileRows;
    } else {
        dst = op.v_cache + (int64_t)op.slot[r] * kd + (int64_t)(tile - op.heads - op.kv_heads) * kTileRows;
    }
#pragma unroll
    for (int e = 0; e < 4; e++) dst[c4 + e] = vk_bf(v[e]);
}

// The epilogue of a tile whose every slice's partials are stored, by the stagers: the slices
// added in slice order (the same bits whichever unit was last), then y: stored, SwiGLU'd (gate
// rows 0-63 of the tile, up rows 64-127), or added to the residual with the rows' sums of squares
// over the tile. Rows r0, r0 + rstep, ... (this unit's share). A warp a row (four rows at a time),
// or for SwiGLU half a warp.
__device__ void finish_tile(const Shared &sm, const Op &op, int rows, int tile, int r0, int rstep) {
    const int t = threadIdx.x - kConsumers - kCopiers, lane = t % 32;
    const float *P = op.part + (size_t)tile * op.slices * kMaxRows * kTileRows;
    const size_t slice_stride = (size_t)kMaxRows * kTileRows;
    if (op.epi == EPI_GLU) { // thread: gate columns c4 .. c4 + 3 and the same of up, rows t / 16 + 8 i
        const int c4 = (t % 16) * 4, ffn = op.n / 2;
#pragma unroll 2
        for (int r = r0 + rstep * (t / 16); r < rows; r += rstep * (kStagers / 16)) {
            float4 gs = make_float4(0.f, 0.f, 0.f, 0.f), us = gs;
            for (int sl = 0; sl < op.slices; sl++) {
                const float4 gv = __ldcg((const float4 *)(P + sl * slice_stride + (size_t)r * kTileRows + c4));
                const float4 uv = __ldcg((const float4 *)(P + sl * slice_stride + (size_t)r * kTileRows + kHalfRows + c4));
                gs.x += gv.x, gs.y += gv.y, gs.z += gv.z, gs.w += gv.w;
                us.x += uv.x, us.y += uv.y, us.z += uv.z, us.w += uv.w;
            }
            const float gf[4] = {gs.x, gs.y, gs.z, gs.w}, uf[4] = {us.x, us.y, us.z, us.w};
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int c = tile * kHalfRows + c4 + e;
                if (c < ffn) op.y[(int64_t)r * op.y_stride + c] = vk_bf(vk_swiglu(vk_round(gf[e]), vk_round(uf[e])));
            }
        }
        return;
    }
    const int c4 = lane * 4; // a warp a row: columns c4 .. c4 + 3, rows t / 32 + 4 i
#pragma unroll 2
    for (int r = r0 + rstep * (t / 32); r < rows; r += rstep * (kStagers / 32)) {
        float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int sl = 0; sl < op.slices; sl++) {
            const float4 v = __ldcg((const float4 *)(P + sl * slice_stride + (size_t)r * kTileRows + c4));
            sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
        }
        const float sf[4] = {sum.x, sum.y, sum.z, sum.w};
        if (op.epi == EPI_QKV) {
            qkv_epilogue(sm, op, r, tile, c4, sf);
            continue;
        }
        float ss = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int c = tile * kTileRows + c4 + e;
            if (c >= op.n) continue;
            const int64_t at = (int64_t)r * op.y_stride + c;
            float v = vk_round(sf[e]);
            if (op.epi == EPI_ADD) v = vk_round(vk_f(__ldcg(op.resid + at)) + v); // L2: another block may have written it
            op.y[at] = vk_bf(v);
            ss = fmaf(v, v, ss);
        }
        if (op.epi == EPI_ADD && op.ssq_out) {
            ss = vk_warp_sum(ss);
            if (lane == 0) op.ssq_out[(size_t)tile * kMaxRows + r] = ss;
        }
    }
}

// The stagers, after staging an op: for each of this block's units of it, in order (unit k of
// the block), once the consumers have stored its partials, the unit's share of its tile's
// epilogue: rows slice, slice + S, ... of the tile, once every slice's partials are stored. A
// tile's ticket counts first the units that stored their partials (one stager's release add,
// which passes on what the unit's barrier acquired), then those that finished their share; the
// last resets it. Spread so, a tile's partials are read once, by S blocks (gathered on the last
// unit's block they took ~6 us at 64 rows and 8 slices: 256 KB through one SM).
__device__ void finish_units(Shared &sm, const Op &op, int rows, int offset, int &k) {
    const int t = threadIdx.x - kConsumers - kCopiers;
    for (int u = first_unit(offset); u < units_of(op); u += gridDim.x, k++) {
        vk_mbar_wait(vk_smem_u32(&sm.unit_done[k % kUnitSlots]), (uint32_t)((k / kUnitSlots) & 1));
        const int tile = u / op.slices, slice = u % op.slices, S = op.slices;
        if (S > 1) {
            if (t == 0) {
                unsigned *tk = &op.tickets[tile];
                vk_red_release_add(tk, 1u);
                wait_at_least(tk, (unsigned)S, "a tile's slices");
            }
            stagers_sync(); // every slice stored, and what the poll acquired, to every stager
        }
        finish_tile(sm, op, rows, tile, slice, S);
        if (S > 1) {
            stagers_sync(); // every stager's share done (its reads of the partials among them)
            if (t == 0 && vk_atom_add_acq_rel(&op.tickets[tile], 1u) == (unsigned)(2 * S - 1))
                op.tickets[tile] = 0; // every unit has counted itself twice
        }
    }
}

// Runs ops[0 .. n_ops) on this block's units, in the copiers' and stagers' order.
__device__ void consume(Shared &sm, const Op *ops, int n_ops, int rows) {
    const int wg = threadIdx.x / 128, lane = threadIdx.x % 32;
    Acc acc;
    int it = 0, offset = 0, units_done = 0; // k-blocks consumed (as the copiers and stagers count them), units dealt, units of the block done
    for (int o = 0; o < n_ops; o++) {
        const Op op = ops[o]; // a copy in registers: a reference would be reloaded after every asm
        const int units = units_of(op);
        for (int u = first_unit(offset); u < units; u += gridDim.x) {
            int tile, slice, kb0, kb1;
            unit_range(op, u, tile, slice, kb0, kb1);
            const int n = kb1 - kb0;
            // k-block j of the unit (the block's it + j) into acc, once its weights and input are in
            auto issue = [&](int j) {
                const int m = it + j, s = m % kWStages, b = m % kABufs;
                vk_mbar_wait(vk_smem_u32(&sm.full[s]), (uint32_t)((m / kWStages) & 1));
                vk_mbar_wait_warp(vk_smem_u32(&sm.a_full[b]), (uint32_t)((m / kABufs) & 1));
                vk_fence_proxy_async(); // the copiers' cp.async writes before wgmma's reads
                vk_wgmma_fence();
                const uint32_t wt = vk_smem_u32(sm.w[s]) + wg * kHalfRows * 128, at = vk_smem_u32(sm.a[b]);
#pragma unroll
                for (int ks = 0; ks < kBK / 16; ks++)
                    vk_wgmma_m64n64k16_ss(acc, vk_desc_k_major(at + ks * 32), vk_desc_k_major(wt + ks * 32),
                                          j == 0 && ks == 0 ? 0 : 1);
                vk_wgmma_commit();
            };
            auto release = [&](int j) { // k-block j's group done: both its buffers free
                if (lane == 0) {
                    vk_mbar_arrive(vk_smem_u32(&sm.empty[(it + j) % kWStages]));
                    vk_mbar_arrive(vk_smem_u32(&sm.a_empty[(it + j) % kABufs]));
                }
            };
            issue(0);
            // no branch between a wgmma and its wait (ptxas would serialise them): one k-block in
            // flight, the last one's wait peeled off
            for (int j = 0; j + 1 < n; j++) {
                issue(j + 1);
                vk_wgmma_wait<1>();
                release(j);
            }
            vk_wgmma_wait<0>();
            release(n - 1);
            vk_wgmma_pin(acc);
            it += n;
            store_partials(op, rows, tile, slice, acc);
            __syncwarp(); // the warp's stores before its arrival (which releases them to the stagers)
            if (lane == 0) vk_mbar_arrive(vk_smem_u32(&sm.unit_done[units_done % kUnitSlots]));
            units_done++;
        }
        offset += units;
    }
}

// The block's set-up: the ring's barriers. Every thread calls it, then splits by warpgroup.
__device__ __forceinline__ Shared &shared_init(unsigned char *raw, bool tma) {
    Shared &sm = *reinterpret_cast<Shared *>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~(uintptr_t)1023);
    if (threadIdx.x == 0) {
        for (int s = 0; s < kWStages; s++) {
            vk_mbar_init(vk_smem_u32(&sm.full[s]), tma ? 1 : kCopiers); // the tensor copies' thread, or every copier via cp.async
            vk_mbar_init(vk_smem_u32(&sm.empty[s]), kConsumers / 32); // lane 0 of each consumer warp
        }
        for (int b = 0; b < kABufs; b++) {
            vk_mbar_init(vk_smem_u32(&sm.a_full[b]), kStagers);
            vk_mbar_init(vk_smem_u32(&sm.a_empty[b]), kConsumers / 32);
        }
        for (int k = 0; k < kUnitSlots; k++) vk_mbar_init(vk_smem_u32(&sm.unit_done[k]), kConsumers / 32);
    }
    __syncthreads();
    return sm;
}

} // namespace wide

#endif
