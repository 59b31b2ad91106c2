// One decode step of one sequence as one persistent kernel (issue 11; the design and its
// arithmetic: bench/DESIGN-persistent-decode.md). Every layer of the text decoder and the
// lm_head run in a single launch: one block per SM, alive for the whole step, so the memory
// pipeline never empties between projections as it does at each of the ~150 launches of the
// op-by-op path (a ramp and drain of 3-7 us each). Also 2 to 8 sequences, a row each, in
// batched instances whose every weight page serves all of them (the engine's small batches,
// bench/NOTES-2026-12-05c.md): below, "the staged input" is then one row a sequence.
//
// A block is one producer warp and 8 consumer warps.
//  - The producer streams the weights of this block's units, op after op, into a ring of
//    kPages shared-memory pages with bulk copies (TMA, cp.async.bulk, evict-first), one
//    mbarrier a page for "full" (bytes arrived) and one for "empty" (every consumer done). It never
//    waits for a dependency, only for a free page: while the consumers wait for the other
//    blocks to finish an op, the next op's weights keep arriving.
//  - The consumers run the ops in order. A projection's unit is 8 consecutive weight rows over
//    the whole K, and all 8 warps read every page. By default (run_projection_split) warp w
//    takes a column slice of all 8 rows on the tensor cores (the unit's rows as mma's n side,
//    the staged input as its m side, which has room for more sequences); a unit's 8 warp sums
//    meet in shared memory and one warp adds them in warp order, so every output row is summed
//    in a fixed order. VOX_PDECODE_CONSUMER=row has warp w sum row w of every unit on the CUDA
//    cores instead (run_projection), reading its 3 KB of each page; it is 1.3-2.6% slower
//    (bench/NOTES-2026-12-04b.md) and is also taken where a staged input is too wide for the
//    split consumer's partial sums (K > 8192). (A third consumer, a warp a whole unit on the
//    tensor cores with up to 8 pages in work at once, was 5-10% slower than both and was
//    removed: bench/NOTES-2026-12-03d.md, NOTES-2026-12-04.md.)
//  - Ops wait for each other through counters in global memory: a block that has finished its
//    share of an op adds 1 (release); a block about to start an op that needs it polls until
//    all blocks have (acquire). No grid-wide barrier, no second launch; the last block to
//    finish the step zeroes the counters for the next one.
//
// The ops of layer l (x: the residual, in three buffers so that no op writes what an
// unfinished op reads: x_in -> xa (o) -> xb (down) -> xa (o of layer 1) ...):
//   QKV   q|k|v = RMSNorm(x) @ Wqkv^T, stored bf16 (RoPE is applied by ATTN)
//   ATTN  units (kv head g, split s): RoPE on the group's q heads and on the new key; split 0
//         writes the new key and value to the cache; online softmax over the split's keys
//         (the newest read from the fresh values, not the cache); the last split of a group
//         to finish merges the partials and writes the group's bf16 output
//   O     x' = x + bf16(attn @ Wo^T)
//   GU    act = SwiGLU(RMSNorm(x') @ Wgu^T), gate and up rounded to bf16 first: the split
//         consumer's units hold gate rows i..i+3 and up rows i..i+3 (Proj::glu_units); with the
//         row consumer gate|up is stored and DOWN's staging applies SwiGLU
//   DOWN  x'' = x' + bf16(act @ Wdown^T)
// then LM: logits = RMSNorm(x) @ Wlm^T (bf16 weights, also in an FP8 model).
//
// Numerics: the rounding points of the op-by-op path (matvec.cuh, fused.cu, attention.cu):
// RMSNorm as stage_input, q/k/v/gate/up rounded to bf16 before RoPE and SwiGLU (the helpers of
// common.cuh), the bf16 product added to the bf16 residual, attention with P rounded to bf16
// for P@V and fp32 sums; FP8 layers quantize each staged input row with its own scale (each
// block holds the whole row, or, batched, the row's maximum from the op that wrote it, so every
// block finds the same scale) and multiply a row's sum by s_x * s_w. Only the order of fp32 sums
// differs from that path.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <initializer_list>
#include <type_traits>
#include <utility>

#include "common.cuh"
#include "fp8.cuh"
#include "kernels.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#pragma nv_diag_suppress 177 // the device helpers go unused where the kernel body is left out
#endif

namespace {

typedef __nv_bfloat16 bf16;

constexpr int kConsumerWarps = 8;
constexpr int kConsumers = kConsumerWarps * 32;
constexpr int kThreads = kConsumers + 32; // + the producer warp
constexpr int kUnitRows = kConsumerWarps; // weight rows of a projection unit: a warp each
// A page is 8 rows x 3072 bytes, so that a unit of K = 3072 (q|k|v, gate|up, lm_head) is one
// FP8 page or two bf16 pages: a page turn (its barriers, a unit's loads) costs about the same
// whatever its bytes, and 2 KB rows made those FP8 units a full and a half page. Against
// 8 x 2048-byte pages (12 of them, the same 192 KB) the step went from 2080 to 1931 us (FP8) and
// 2282 to 2243 us (bf16): bench/NOTES-2026-12-05.md.
constexpr int kPageBytes = 24576;
constexpr int kRowBytes = kPageBytes / kUnitRows; // one row's share of a page
static_assert(kRowBytes % (16 * 32) == 0, "a full page row is whole 16-byte loads of every lane (row consumer)");
// Sequences a launch decodes at once (one row each): 1, or 2 .. kMaxRows in the batched
// instances (ROWS = kRowsWhole for 2 to 4 rows, kMaxRows for 5 to 8), whose every projection
// page serves all of them: the staged inputs are the tensor cores' m side (rows 0 .. rows - 1 of
// A), so rows cost no more mmas than one.
constexpr int kMaxRows = VOX_K_PDECODE_MAX_ROWS;
constexpr int kRowsWhole = 4;
// Shared memory an instance gives its ring and its stage (at most 227 KB with the static
// variables, whose rows' RoPE tables the batched instances make ~2.5 and ~7 KB). One row: 8
// pages and a 32 KB stage (the staged row, K <= 8192 bf16, below the split consumer's partial
// sums). The batched instances give up two pages: 4 rows stage whole inputs of K <= 8192 (64 KB);
// 8 rows stage an input of more than chunk_cols columns (o's and down's) a chunk at a time.
template <int ROWS> struct Smem {
    static constexpr int kPages = ROWS == 1 ? 8 : 6;
    static constexpr int kStageBytes = ROWS == 1 ? 32768 : ROWS <= kRowsWhole ? 77824 : 67584;
    static constexpr int kBytes = kPages * kPageBytes + kStageBytes;
};
// Columns of an input staged at once by the instance (0: the whole K). A chunk is whole pages of
// bf16 and of FP8 rows, so no page straddles two chunks.
template <int ROWS> __host__ __device__ constexpr int chunk_cols() { return ROWS <= kRowsWhole ? 0 : 3072; }
// Units of a chunked projection a block may hold (their sums over the chunks so far wait in
// shared memory): the host refuses a shape whose o or down deals a block more.
constexpr int kChunkUnits = 8;
constexpr int kMaxSplits = 16;     // attention splits of a kv head (of one row; rows share them)
constexpr int kSplitRound = 16;    // split lengths are multiples of this many keys
constexpr int kCounterStride = 32; // counters 128 bytes apart
constexpr unsigned kBarConsumers = 1; // named barrier of the consumer warps
constexpr double kWatchdogSeconds = 10.0; // VOX_PDECODE_WATCHDOG_S changes it (sanitizers: more)
// Ring pages a producer may have copied and not yet landed (VOX_PDECODE_INFLIGHT=N; 0: every
// free page, as before). Why a cap: at an op's end every producer refills all its free pages at
// once, ~8 x 24 KB a block, ~25 MB over the GPU, and everything the op boundary then needs (the
// last block's signal, the pollers' loads, the staging's L2 reads) queues behind them: the
// boundary took ~4.4 us even with no ordering instruction at all. With 2 pages (~6 MB in all)
// it takes ~2 and the stream still keeps up: on an H100 the one-row step went 2980 -> 2670 us
// (bf16) and 2140 -> 1990 (FP8); 1 page starves the stream (bf16 +9%), 3 gain half as much
// (bench/NOTES-2026-12-05f.md). Since an op's first pages have a cap of their own (kHeadInflight
// below), 2, 3 and 4 pages take the same time on an H100 (one row bf16 2593 / 2589 / 2595 us,
// FP8 1803 / 1806 / 1811, four rows 3087 / 3082 / 3086), and 1 still starves it (+22%): 3 is the
// middle of that plateau there. The cap the stream needs grows with what a SM reads a second (an
// H200 reads ~1.4x an H100's), so 3 keeps the faster card off the 1-page cliff too
// (bench/NOTES-2026-12-07g.md). Blocks must share one cap: a quarter of them at 2 and the rest at
// 3 took 7% longer than either, since a block's share of the bandwidth follows its pages in
// flight and an op ends with its slowest block. VOX_PDECODE_TUNE=1 times 2, 3, 4 and 6 on the
// card at load (src/backend/cuda.c, vox_k_pdecode_tune).
constexpr int kInflightPages = 3;
// An op's first pages go one at a time (VOX_PDECODE_INFLIGHT_HEAD=N,K: the first K at N; 0,0 turns
// it off). They are copied while the op before ends, and its last pages, on every block, are what
// the boundary waits for: fewer bytes of the next op in flight let them land sooner. How many pages
// pays depends on what a page costs the stream: on an H100 the one-row step went 2633 -> 2614 us
// with the first 4 bf16 pages (8 starve it: 2716), 1983 -> 1871 with the first 8 FP8 pages (every
// page of q|k|v, o and down; 16 reach into gate|up: 1950), and the batched instances gained most
// with their whole 6-page ring (4 rows bf16 3487 -> 3355, 8 rows 4731 -> 4640; FP8 4 rows 3283 ->
// 3260). Capping only the pages ahead of the consumers' op (1%), or capping while the consumers
// wait (0%), gained less (bench/NOTES-2026-12-06b.md).
constexpr int kHeadInflight = 1;
template <int ROWS> __host__ __device__ constexpr int head_pages(bool fp8) {
    return ROWS > 1 ? Smem<ROWS>::kPages : fp8 ? 8 : 4;
}

enum OpKind { OP_QKV, OP_ATTN, OP_O, OP_GU, OP_DOWN, OP_LM };
constexpr int kOpsPerLayer = 5;

// Kernel parameters, the layers' pointers included (by value: a recorded graph keeps them, and
// nothing on the device can go stale); 64 layers make ~6 KB, within CUDA 12.1+'s 32 KB.
struct Params {
    vox_k_pdecode_layer layers[VOX_K_PDECODE_MAX_LAYERS];
    int n_layers, hidden, heads, kv_heads, head_dim, ffn;
    int64_t vocab;
    float eps, scale_log2;
    double theta;
    int rows; // sequences (a row each), 1 .. the instance's ROWS
    const bf16 *x_in, *final_norm, *lm_head; // x_in, logits: [rows, hidden], [rows, vocab]
    bf16 *logits;
    const int32_t *pos, *slot, *len, *table; // [rows] each; table: [rows, table_width]
    int block_size, table_width;
    unsigned *counters;
    int n_counters;
    bf16 *xa, *xb, *qkv, *attn, *gu; // [rows, their width] each
    float *part_o, *part_ml;         // [kMaxRows, heads, kMaxSplits] slots
    unsigned long long *stamps;
    long long watchdog_ns; // a wait longer than this traps
    // timing experiments only (VOX_PDECODE_EXPERIMENT): 1 no dot products, 2 no waits, 3 no waits
    // and signals without their release fence, 4 no waits where an op needs only a part of the
    // op before (attention: its kv group's q|k|v; o: the attention's groups; down: gate|up's
    // columns), 5 no waits at the others (the RMSNorms' whole rows: q|k|v, gate|up, lm_head),
    // 6 no wait at the attention only (FP8 quantizes o's and down's inputs with a whole row's
    // scale, so there only the attention could wait for a part)
    int experiment;
    int inflight; // the most ring pages a producer has in flight (kInflightPages; 0: no cap)
    // an op's first head_pages at most head_inflight (kHeadInflight, head_pages<ROWS>; -1: the
    // defaults; head_inflight 0: no head)
    int head_inflight, head_pages;
    // How a ring page goes back to the producer. 1 (the default): every consumer thread arrives
    // on the page's empty barrier and every copying producer lane waits on it itself. 0
    // (VOX_PDECODE_HANDOVER=lane, for comparison): one lane a warp arrives after __syncwarp and
    // the producer's lane 0 waits for the lanes that copy. Both are correct and equally fast
    // (2540 us a full-size step); compute-sanitizer's racecheck orders only the first, and
    // reports millions of WAR hazards between the bulk copy and the reads with the second
    // (bench/NOTES-2026-12-03b.md).
    int handover;
    // The most attention splits of a kv head of one row: kMaxSplits (shared by the rows of a
    // batched launch), or fewer with VOX_PDECODE_SPLITS=N (timing experiments: at 1 no split's
    // partials, ticket or merge sit on the chain, but each unit reads all of a row's keys).
    int max_splits;
    // Who sums a projection's units (vox_k_pdecode_args.consumer; it picks the kernel instance):
    // CONSUMER_SPLIT (the default where it fits), a warp a column slice of every page on the
    // tensor cores; CONSUMER_ROW, a warp a row on the CUDA cores (each its own instance).
    int consumer;
    // The batched instances' FP8 input maxima (Proj::in_amax; amax_slot), zeroed by the last block
    // of a batched launch (last, so that the one-row instances' parameters are where they were)
    unsigned *amax;
};
enum { CONSUMER_ROW = 1, CONSUMER_SPLIT = 2 };

// The split consumer (CONSUMER_SPLIT, its own kernel instance): every page is read by all 8
// warps, as by the row consumer, but warp w takes a column slice of all 8 rows (1/8 of the page)
// on the tensor cores; the warps' sums of a unit meet in shared memory (Split::kSlots units at
// once, two mbarriers each) and warp nth % 8 adds them up in warp order.
// The stage of a projection: the staged input rows from 0 (bf16, Split::xstride elements apart),
// the partial sums above them (Split::kPartialsAt), and FP8's input codes: one row above the
// partial sums, or (batched) the rows' codes quantized in place over their bf16 values
// (stage_rows), Split::cstride bytes apart.
template <int ROWS> struct Split {
    static constexpr int kPages = Smem<ROWS>::kPages, kStageBytes = Smem<ROWS>::kStageBytes;
    static constexpr int kSlots = ROWS == 1 ? 16 : 8; // > kPages + 1: a warp is at most kPages units ahead
    static constexpr int kPartialsBytes = kSlots * kConsumerWarps * ROWS * kUnitRows * 4;
    static constexpr int kPartialsAt = ROWS == 1 ? kStageBytes / 2 : kStageBytes - kPartialsBytes;
    static constexpr int kCodesAt = kPartialsAt + kPartialsBytes; // one row's codes (ROWS = 1)
    // Rows 64 bytes apart in the banks (bf16 K + 32 elements, codes K + 64 bytes, K a multiple of
    // 128): the lanes (g, t) of a quarter warp, two rows, read 128 different bytes.
    static constexpr int kRowPad = ROWS == 1 ? 0 : 32;
    __device__ __forceinline__ static int xstride(int k) { return k + kRowPad; }
    __device__ __forceinline__ static int cstride(int k) { return k + 2 * kRowPad; }
    static_assert(kSlots > kPages + 1, "a slot is free again before any warp needs it (no wait)");
    static_assert(ROWS > 1 || kCodesAt + kPartialsAt / 2 <= kStageBytes,
                  "the one-row consumer's partial sums and input codes fit the stage");
    static_assert(kPartialsAt % 16 == 0, "the partial sums are aligned");
    static_assert(chunk_cols<ROWS>() % (kRowBytes / 2) == 0 && chunk_cols<ROWS>() % kRowBytes == 0,
                  "a chunk is whole bf16 and FP8 pages");
    static_assert(chunk_cols<ROWS>() == 0 || ROWS * 2 * (chunk_cols<ROWS>() + kRowPad) <= kPartialsAt,
                  "a chunk of every row fits below the partial sums");
};
// The end of the chunk of a K-column input that begins at column lo.
template <int ROWS> __device__ __forceinline__ int chunk_end(int k, int lo) {
    return chunk_cols<ROWS>() ? min(k, lo + chunk_cols<ROWS>()) : k;
}

// The launch's rows: p.rows, known at compile time in the one-row instance.
template <int ROWS> __device__ __forceinline__ int launch_rows(const Params &p) { return ROWS == 1 ? 1 : p.rows; }

// ---- counters ------------------------------------------------------------------------------
__device__ __forceinline__ unsigned *counter(const Params &p, int i) {
    return p.counters + (size_t)i * kCounterStride;
}
// The batched instances' row maxima of an FP8 input without an RMSNorm (Proj::in_amax), a word a
// (layer, input, row), kCounterStride apart: input 0 is o's (the attention's output), 1 down's
// (SwiGLU of gate|up); row b's at + b * kCounterStride.
enum { AMAX_O = 0, AMAX_DOWN = 1, kAmaxInputs = 2 };
__device__ __forceinline__ unsigned *amax_slot(const Params &p, int layer, int input) {
    return p.amax + (size_t)(layer * kAmaxInputs + input) * kMaxRows * kCounterStride;
}
// Publishes a row's maximum of |values| (NaN left out, as the staging's fmaxf leaves it out): the
// bits of non-negative floats order as the floats do.
__device__ __forceinline__ void publish_amax(unsigned *slot, float amax) {
    if (amax > 0.0f) atomicMax(slot, __float_as_uint(amax));
}
__device__ __forceinline__ int op_counter(int layer, int op) { return layer * kOpsPerLayer + op; }
// The tickets of row b's kv head g in a layer: at places that do not depend on the launch's rows,
// so that the workspace (zeroed once) serves launches of any rows.
__device__ __forceinline__ int ticket_counter(const Params &p, int layer, int b, int g) {
    return p.n_layers * kOpsPerLayer + (layer * kMaxRows + b) * p.kv_heads + g;
}
__device__ __forceinline__ int lm_counter(const Params &p) {
    return p.n_layers * (kOpsPerLayer + kMaxRows * p.kv_heads);
}

// Profiling marks inside an attention unit (stamps set; scripts/pdecode_stamps.py reads them):
// after the ops' stamps, kAttnMarks words a block and layer, k = 0 unit begun (before its wait),
// 1 q|k|v seen, 2 queries staged, 3 keys done, 4 partials written, 5 ticket taken, 6 merged,
// 7 signalled, 8 cache written and queries in registers, 9 first key group's scores (0: the block
// had no unit, or is not its group's merger).
constexpr int kAttnMarks = 10;
#define ATTN_MARK(p, layer, k)                                                                       \
    do {                                                                                             \
        if ((p).stamps && threadIdx.x == 0)                                                          \
            (p).stamps[(size_t)gridDim.x * n_steps(p) * 2 +                                          \
                       ((size_t)blockIdx.x * (p).n_layers + (layer)) * kAttnMarks + (k)] = vk_global_ns(); \
    } while (0)
__device__ __forceinline__ void consumers_sync() {
    asm volatile("bar.sync %0, %1;" ::"n"(kBarConsumers), "n"(kConsumers) : "memory");
}

// Whether timing experiment 4, 5 or 6 drops the wait of op `op` (OpKind) for the op before it.
__device__ __forceinline__ bool experiment_skips(const Params &p, int op) {
    const bool partial = op == OP_ATTN || op == OP_O || op == OP_DOWN;
    return (p.experiment == 4 && partial) || (p.experiment == 5 && !partial) ||
           (p.experiment == 6 && op == OP_ATTN);
}

// Consumers of op `op`: until counter i reaches target. One thread polls; the barrier passes
// what it acquired on to the others, who read other blocks' outputs through L2 (__ldcg) only.
__device__ void wait_counter(const Params &p, int op, int i, unsigned target) {
    if (threadIdx.x == 0 && p.experiment != 2 && p.experiment != 3 && !experiment_skips(p, op)) {
        const unsigned *c = counter(p, i);
        if (vk_ld_acquire(c) < target) {
            const long long t0 = vk_global_ns();
            for (int spin = 0;; spin++) {
                __nanosleep(32);
                if (vk_ld_acquire(c) >= target) break;
                if ((spin & 1023) == 1023 && vk_global_ns() - t0 > p.watchdog_ns) {
                    printf("vox_k_pdecode: block %d waited %.0f s for counter %d (%u of %u): "
                           "blocks not all resident, or a bug\n",
                           blockIdx.x, p.watchdog_ns * 1e-9, i, vk_ld_acquire(c), target);
                    __trap();
                }
            }
        }
    }
    consumers_sync();
}

// Consumers, after writing their share of an op. The barrier orders every consumer's stores
// before thread 0's release, which publishes them at gpu scope (release is cumulative; the
// pattern of CUTLASS's GenericBarrier).
__device__ void signal_counter(const Params &p, int i) {
    consumers_sync();
    if (threadIdx.x == 0) {
        if (p.experiment == 3)
            asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(counter(p, i)), "r"(1u) : "memory");
        else
            vk_red_release_add(counter(p, i), 1u);
    }
}

// ---- bulk copies (the mbarriers they complete: vk_mbar_* in common.cuh) ----------------------
__device__ __forceinline__ void bulk_copy(void *dst, const void *src, unsigned bytes, uint64_t *bar,
                                          uint64_t policy) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1], %2, [%3], %4;" ::"r"(vk_smem_u32(dst)),
                 "l"(src), "r"(bytes), "r"(vk_smem_u32(bar)), "l"(policy)
                 : "memory");
}

// ---- the op list -------------------------------------------------------------------------------
// What a projection op reads and writes. Its input is staged by the consumers: RMSNorm of a
// residual (norm set), a copy (attn), or SwiGLU of gate|up (swiglu).
struct Proj {
    const void *w;
    const float *w_scale; // FP8 rows' scales, else NULL
    int64_t n;
    int k;
    const bf16 *in, *norm;
    bool swiglu;
    const bf16 *resid; // ADD: y = resid + product; else STORE
    bf16 *y;
    int64_t in_stride, y_stride; // elements from one row's input, output (and resid) to the next
    // The split consumer's gate|up: a unit is gate rows 4i..4i+3 and up rows ffn + 4i..ffn + 4i +
    // 3 (glu_row), so that its adder holds both halves of 4 SwiGLUs a row and writes y[4i..4i+3]
    // = SwiGLU(gate, up) (fused.cu's rounding): down's staging loads half the bytes and computes
    // none of the ffn SwiGLUs that every block computed (3.4% of a one-row FP8 step; the batched
    // instances' SwiGLU staging was 7-25% of theirs, bench/NOTES-2026-12-06b.md). With the
    // adding's lag (run_projection_split) the one-row step went 1865 -> 1823 us (FP8) and 2616 ->
    // 2604 (bf16) on an H100 (bench/NOTES-2026-12-06c.md). (The batched instances first dealt
    // gate units and up units in pairs to one adder warp, which carried the gate sums over.)
    bool glu_units;
    // The batched instances' FP8 inputs without an RMSNorm (o's, down's): their rows' maxima of
    // |value|, published by the ops that write them (amax_out: the attention's merger, gate|up's
    // adders), so that the staging needs no block-wide reduction of its own (a chunked input no
    // pass over the whole row).
    const unsigned *in_amax;
    unsigned *amax_out;
};

__device__ __forceinline__ int n_steps(const Params &p) { return p.n_layers * kOpsPerLayer + 1; }

template <int ROWS> __device__ Proj proj_of(const Params &p, int step) {
    Proj q = {};
    const int layer = step / kOpsPerLayer, op = step == n_steps(p) - 1 ? OP_LM : step % kOpsPerLayer;
    const int QD = p.heads * p.head_dim, KD = p.kv_heads * p.head_dim;
    const bf16 *x_cur = layer == 0 ? p.x_in : p.xb; // this layer's input residual
    if (op == OP_LM) {
        q.w = p.lm_head, q.n = p.vocab, q.k = p.hidden, q.in = p.n_layers ? p.xb : p.x_in;
        q.norm = p.final_norm, q.y = p.logits;
        q.in_stride = p.hidden, q.y_stride = p.vocab;
        return q;
    }
    const vox_k_pdecode_layer &L = p.layers[layer];
    switch (op) {
    case OP_QKV:
        q.w = L.qkv, q.w_scale = L.qkv_scale, q.n = QD + 2 * KD, q.k = p.hidden;
        q.in = x_cur, q.norm = (const bf16 *)L.attn_norm, q.y = p.qkv;
        q.in_stride = p.hidden, q.y_stride = QD + 2 * KD;
        break;
    case OP_O:
        q.w = L.o, q.w_scale = L.o_scale, q.n = p.hidden, q.k = QD, q.in = p.attn;
        q.resid = x_cur, q.y = p.xa;
        q.in_stride = QD, q.y_stride = p.hidden;
        if (ROWS > 1 && L.o_scale) q.in_amax = amax_slot(p, layer, AMAX_O);
        break;
    case OP_GU:
        q.w = L.gate_up, q.w_scale = L.gate_up_scale, q.n = 2 * (int64_t)p.ffn, q.k = p.hidden;
        q.in = p.xa, q.norm = (const bf16 *)L.ffn_norm, q.y = p.gu;
        q.in_stride = p.hidden, q.y_stride = 2 * (int64_t)p.ffn;
        if (ROWS > 1 || p.consumer == CONSUMER_SPLIT) { // SwiGLU(gate, up), ffn values a row
            q.glu_units = true, q.y_stride = p.ffn;
            if (ROWS > 1 && L.down_scale) q.amax_out = amax_slot(p, layer, AMAX_DOWN);
        }
        break;
    case OP_DOWN:
        q.w = L.down, q.w_scale = L.down_scale, q.n = p.hidden, q.k = p.ffn, q.in = p.gu;
        q.swiglu = true, q.resid = p.xa, q.y = p.xb;
        q.in_stride = 2 * (int64_t)p.ffn, q.y_stride = p.hidden;
        if (ROWS > 1 || p.consumer == CONSUMER_SPLIT) { // gate|up's epilogue wrote SwiGLU
            q.swiglu = false, q.in_stride = p.ffn;
            if (ROWS > 1 && L.down_scale) q.in_amax = amax_slot(p, layer, AMAX_DOWN);
        }
        break;
    default: break; // OP_ATTN has no weights
    }
    return q;
}

__device__ __forceinline__ bool step_is_attention(const Params &p, int step) {
    return step != n_steps(p) - 1 && step % kOpsPerLayer == OP_ATTN;
}

// Elements a 16-byte vector holds, and columns a page holds of each of its rows.
__device__ __forceinline__ int vec_elems(bool fp8) { return fp8 ? 16 : 8; }
__device__ __forceinline__ int page_cols(bool fp8) { return kRowBytes / (fp8 ? 1 : 2); }

// The weight row that row r (< kUnitRows) of unit u holds: rows 8u .. 8u + 7, or, where q deals
// SwiGLU units (Proj::glu_units), gate rows 4u .. 4u + 3 and then the same rows of up.
__device__ __forceinline__ int64_t glu_row(const Proj &q, int64_t u, int r) {
    constexpr int kHalf = kUnitRows / 2;
    if (!q.glu_units) return u * kUnitRows + r;
    return (r < kHalf ? 0 : q.n / 2) + u * kHalf + (r & (kHalf - 1));
}

// Units are dealt round robin: unit u of an op goes to block (u + offset) % G, offset carried
// from op to op. This block's first unit of an op dealt from offset (then + G, + 2G, ...).
__device__ __forceinline__ int first_unit(int offset) {
    return (int)((blockIdx.x - offset + gridDim.x) % gridDim.x);
}

// ---- the producer --------------------------------------------------------------------------------
// The pages of this block's units in the order the consumers take them: ops in order, a
// projection's units first_unit(offset), + G, + 2G, ..., each unit's pages by column; where the
// instance stages the input in chunks (chunk_cols), chunk by chunk: the units' pages of columns
// lo .. hi - 1, then of the next chunk.
struct PageCursor {
    int step, offset, c0, lo, hi;
    int64_t u, units;
    Proj q;
    bool done;
};

template <int ROWS>
__device__ void cursor_op(const Params &p, PageCursor &c) { // the first page from step c.step on
    const int G = gridDim.x;
    for (; c.step < n_steps(p); c.step++) {
        if (step_is_attention(p, c.step)) continue;
        c.q = proj_of<ROWS>(p, c.step);
        c.units = c.q.n / kUnitRows;
        c.u = first_unit(c.offset);
        c.c0 = c.lo = 0, c.hi = chunk_end<ROWS>(c.q.k, 0);
        if (c.u < c.units) return;
        c.offset = (int)((c.offset + c.units) % G);
    }
    c.done = true;
}

template <int ROWS> __device__ PageCursor cursor_begin(const Params &p) {
    PageCursor c = {};
    cursor_op<ROWS>(p, c);
    return c;
}

template <int ROWS> __device__ void cursor_next(const Params &p, PageCursor &c) {
    const int G = gridDim.x;
    c.c0 += page_cols(c.q.w_scale != nullptr);
    if (c.c0 < c.hi) return;
    c.c0 = c.lo;
    c.u += G;
    if (c.u < c.units) return;
    if (c.hi < c.q.k) { // the next chunk, from the block's first unit
        c.c0 = c.lo = c.hi, c.hi = chunk_end<ROWS>(c.q.k, c.lo);
        c.u = first_unit(c.offset);
        return;
    }
    c.offset = (int)((c.offset + c.units) % G);
    c.step++;
    cursor_op<ROWS>(p, c);
}

// Row r's bytes of the cursor's page.
__device__ __forceinline__ const unsigned char *page_row(const PageCursor &c, int r, unsigned *bytes) {
    const int esz = c.q.w_scale ? 1 : 2;
    *bytes = (unsigned)(min(page_cols(c.q.w_scale != nullptr), c.q.k - c.c0) * esz);
    return (const unsigned char *)c.q.w + (glu_row(c.q, c.u, r) * c.q.k + c.c0) * esz;
}

// Lanes 0..7 copy the 8 rows of each page into the ring, as soon as its slot is free. (Asking
// L2 for pages past the ring as well, cp.async.bulk.prefetch.L2 8 to 64 pages ahead, measured
// 1.3-1.5x slower: bench/NOTES-2026-12-01-pdecode.md; and prefetch.global.L2 of 4 to 16 pages
// past the ring only while the ring is full, 9-11% slower: bench/NOTES-2026-12-03d.md.)
template <int ROWS>
__device__ void producer(const Params &p, unsigned char *ring, uint64_t *full, uint64_t *empty) {
    constexpr int kPages = Smem<ROWS>::kPages;
    const int lane = threadIdx.x & 31;
    const uint64_t policy = vk_evict_first_policy();
    PageCursor c = cursor_begin<ROWS>(p);
    int op_step = -1;
    uint32_t op_page = 0; // the page's place among this block's pages of its op
    for (uint32_t page = 0; !c.done; page++, op_page++, cursor_next<ROWS>(p, c)) {
        const int slot = page % kPages;
        if (c.step != op_step) op_step = c.step, op_page = 0;
        const bool fp8 = c.q.w_scale != nullptr;
        const int head = p.head_pages >= 0 ? p.head_pages : head_pages<ROWS>(fp8);
        const int cap = p.head_inflight > 0 && op_page < (uint32_t)head ? p.head_inflight : p.inflight;
        unsigned bytes;
        const unsigned char *src = page_row(c, lane & (kUnitRows - 1), &bytes);
        if (lane == 0 || (p.handover && lane < kUnitRows))
            vk_mbar_wait(vk_smem_u32(&empty[slot]), ((page / kPages) & 1) ^ 1);
        // at most cap pages copied and not yet landed: the page that many before this one has
        // arrived (its full barrier's phase is complete; see kInflightPages, kHeadInflight). A cap
        // of kPages or more is the ring's own bound: no wait (past kPages, the page's slot may
        // have a later phase, and its parity would name the wrong one)
        if (lane == 0 && cap > 0 && cap < kPages && page >= (uint32_t)cap) {
            const uint32_t older = page - (uint32_t)cap;
            vk_mbar_wait(vk_smem_u32(&full[older % kPages]), (older / kPages) & 1);
        }
        if (lane == 0) vk_mbar_expect_tx(vk_smem_u32(&full[slot]), bytes * kUnitRows);
        __syncwarp();
        if (lane < kUnitRows)
            bulk_copy(ring + (size_t)slot * kPageBytes + lane * kRowBytes, src, bytes, &full[slot], policy);
    }
}

// ---- staging the input of a projection (consumer threads) ------------------------------------
// The sum (or max) of one value per consumer thread, to every consumer thread, in a fixed order.
template <bool MAX> __device__ float consumers_reduce(float v, float *red) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    v = MAX ? vk_warp_max(v) : vk_warp_sum(v);
    if (lane == 0) red[warp] = v;
    consumers_sync();
    float t = 0.0f;
    for (int w = 0; w < kConsumerWarps; w++) t = MAX ? fmaxf(t, red[w]) : t + red[w];
    consumers_sync(); // red may be written again by the next call
    return t;
}

// 16-byte vectors a consumer thread loads at once when staging.
constexpr int kStageBatch = 2; // 4 made ptxas spill more of the attention's state (head_dim 128)

// xs [k] = the op's input (RMSNorm'd as matvec.cuh's stage_input, copied, or SwiGLU of
// gate|up as fused.cu rounds it); FP8: quantized, *sx its scale, the codes' values stored as
// bf16 in xs (exact), or the codes themselves in codes [k] where codes is set (the split
// consumer's FP8 mma takes them as they are). Ends with a barrier.
// Thread t stages elements t * 8 + i * kConsumers * 8, loading kStageBatch vectors from L2 at
// once (one round trip for K <= 4096; the loop loaded one vector a turn before). RMSNorm
// keeps the raw row in xs for its second pass instead of reloading it from L2.
__device__ void stage_input(const Params &p, const Proj &q, bf16 *xs, float *red, float *sx,
                            unsigned char *codes) {
    const int t = threadIdx.x, K = q.k;
    constexpr int stride = kConsumers * 8;
    float ss = 0.0f, mx = 0.0f;
    for (int e0 = t * 8; e0 < K; e0 += kStageBatch * stride) {
        uint4 a[kStageBatch], b[kStageBatch]; // gate|up: b holds up
#pragma unroll
        for (int i = 0; i < kStageBatch; i++) {
            const int e = e0 + i * stride;
            a[i] = b[i] = make_uint4(0u, 0u, 0u, 0u);
            if (e < K) {
                a[i] = __ldcg((const uint4 *)(q.in + e));
                if (q.swiglu) b[i] = __ldcg((const uint4 *)(q.in + p.ffn + e));
            }
        }
#pragma unroll
        for (int i = 0; i < kStageBatch; i++) {
            const int e = e0 + i * stride;
            if (e >= K) break;
            float xf[8];
            vk_unpack8(a[i], xf);
            if (q.swiglu) {
                float u[8];
                vk_unpack8(b[i], u);
#pragma unroll
                for (int j = 0; j < 8; j++) xf[j] = vk_round(vk_swiglu(xf[j], u[j]));
            }
#pragma unroll
            for (int j = 0; j < 8; j++) {
                ss = fmaf(xf[j], xf[j], ss);
                mx = fmaxf(mx, fabsf(xf[j]));
            }
            vk_store8(xs + e, xf); // exact: raw bf16 values, or SwiGLU already rounded
        }
    }
    if (q.norm) { // second pass over the raw row this thread staged
        const float inv = rsqrtf(consumers_reduce<false>(ss, red) / (float)K + p.eps);
        mx = 0.0f;
        for (int e = t * 8; e < K; e += stride) {
            float xf[8], g[8];
            vk_load8(xs + e, xf);
            vk_load8(q.norm + e, g);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                xf[j] = vk_round(g[j] * vk_round(xf[j] * inv));
                mx = fmaxf(mx, fabsf(xf[j]));
            }
            vk_store8(xs + e, xf);
        }
    }
    if (q.w_scale) { // each thread quantizes what it staged, with the row's scale
        const float s = vk_fp8_scale(consumers_reduce<true>(mx, red));
        for (int e = t * 8; e < K; e += kConsumers * 8) {
            float xf[8];
            vk_load8(xs + e, xf);
            if (codes) {
                uint32_t c[2] = {0u, 0u};
#pragma unroll
                for (int j = 0; j < 8; j++) c[j >> 2] |= (uint32_t)vk_fp8_quantize(xf[j], s) << (8 * (j & 3));
                *(uint2 *)(codes + e) = make_uint2(c[0], c[1]);
            } else {
#pragma unroll
                for (int j = 0; j < 8; j++) xf[j] = vk_e4m3_value(vk_fp8_quantize(xf[j], s));
                vk_store8(xs + e, xf);
            }
        }
        if (t == 0) *sx = s;
    }
    consumers_sync();
}

// consumers_reduce for ROWS values at once (one pair of barriers); red: kConsumerWarps x ROWS.
template <bool MAX, int ROWS> __device__ void consumers_reduce_rows(float (&v)[ROWS], float *red) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int b = 0; b < ROWS; b++) {
        v[b] = MAX ? vk_warp_max(v[b]) : vk_warp_sum(v[b]);
        if (lane == 0) red[warp * ROWS + b] = v[b];
    }
    consumers_sync();
#pragma unroll
    for (int b = 0; b < ROWS; b++) {
        float t = 0.0f;
        for (int w = 0; w < kConsumerWarps; w++) t = MAX ? fmaxf(t, red[w * ROWS + b]) : t + red[w * ROWS + b];
        v[b] = t;
    }
    consumers_sync();
}

// The batched instances' staging (ROWS > 1, p.rows rows): columns lo .. hi - 1 of each input
// row (the whole K, or a chunk: chunk_cols) with stage_input's arithmetic, row b at
// xs + b * xstride(hi - lo). A thread takes the same elements of every row as stage_input takes
// of one (so a row's sums do not depend on its place in the batch), with the loads of all rows in
// flight at once and one reduction for all of them. FP8: each row quantized with its own scale
// (sx[b]), its codes written over the bf16 values, row b's at b * cstride(hi - lo) bytes (4 rows
// of bf16 values and of codes at K = 8192 would not fit beside the partial sums): every thread
// quantizes its values of every row into registers, a barrier, then the codes go in. A row's
// scale is its whole row's maximum: published by the op before for o's and down's inputs
// (q.in_amax), found by a block-wide reduction for the normalised ones (never chunked). Down's
// input is gate|up's SwiGLU as written (Proj::glu_units). Ends with a barrier, after putting the
// residuals the thread prefetched (ResidPrefetch) in resid_s.
constexpr int kMaxRowsK = 8192; // the largest K the batched instances take
// Rows whose loads a thread has in flight at once, one vector of each (2 vectors a row, as
// stage_input's kStageBatch, made ptxas spill 60 bytes a thread at head_dim 128; 8 rows' at once
// spilled more).
constexpr int kRowsInFlight = 4;
// The batched instances' residuals of the block's first kPrefUnits units of an ADD projection:
// loaded before the staging (value i of the block: unit i / (ROWS x 8), input row i / 8 % ROWS,
// weight row i % 8; consumer thread t holds values t, t + kConsumers, ...), put in shared memory
// (resid_s, in that order) by the staging's last barrier, read by the units' epilogues.
constexpr int kPrefUnits = 8;
// The 16-byte vectors from column e of input rows b0 .. b0 + kRowsInFlight - 1, their loads in
// flight at once; zeros for rows past the launch's.
__device__ __forceinline__ void load_row_vectors(const Params &p, const Proj &q, int b0, int e,
                                                 uint4 (&a)[kRowsInFlight]) {
#pragma unroll
    for (int i = 0; i < kRowsInFlight; i++)
        a[i] = b0 + i < p.rows ? __ldcg((const uint4 *)(q.in + (b0 + i) * q.in_stride + e)) : make_uint4(0u, 0u, 0u, 0u);
}

template <int ROWS> struct ResidPrefetch {
    static constexpr int kValues = kPrefUnits * ROWS * kUnitRows;
    static constexpr int kEach = (kValues + kConsumers - 1) / kConsumers;
    float v[kEach];
};
template <int ROWS>
__device__ __forceinline__ void store_resid(const ResidPrefetch<ROWS> &f, float *resid_s) {
#pragma unroll
    for (int j = 0; j < ResidPrefetch<ROWS>::kEach; j++) {
        const int i = threadIdx.x + j * kConsumers;
        if (i < ResidPrefetch<ROWS>::kValues) resid_s[i] = f.v[j];
    }
}

template <int ROWS>
__device__ void stage_rows(const Params &p, const Proj &q, int lo, int hi, bf16 *xs, float *red, float *sx,
                           const ResidPrefetch<ROWS> &pre_resid, float *resid_s) {
    // a thread's vectors of a row, at most (the whole K of 4 rows, a chunk of 8)
    constexpr int kRowsVecs = ((chunk_cols<ROWS>() ? chunk_cols<ROWS>() : kMaxRowsK) + kConsumers * 8 - 1) / (kConsumers * 8);
    const int t = threadIdx.x, K = q.k, W = hi - lo, rows = p.rows;
    const int xst = Split<ROWS>::xstride(W);
    constexpr int stride = kConsumers * 8;
    const bool known = q.w_scale && q.in_amax; // o's and down's FP8 inputs (whole or chunked)
    float ss[ROWS], mx[ROWS];
#pragma unroll
    for (int b = 0; b < ROWS; b++)
        ss[b] = 0.0f, mx[b] = known && b < rows ? __uint_as_float(__ldcg(q.in_amax + b * kCounterStride)) : 0.0f;
    for (int e = lo + t * 8; e < hi; e += stride)
#pragma unroll
        for (int b0 = 0; b0 < ROWS; b0 += kRowsInFlight) {
            uint4 a[kRowsInFlight];
            load_row_vectors(p, q, b0, e, a);
#pragma unroll
            for (int i = 0; i < kRowsInFlight; i++) {
                const int b = b0 + i;
                if (b >= rows) continue;
                float xf[8];
                vk_unpack8(a[i], xf);
                if (known) { // the row's maximum is the published one
                    vk_store8(xs + b * xst + (e - lo), xf);
                    continue;
                }
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    ss[b] = fmaf(xf[j], xf[j], ss[b]);
                    mx[b] = fmaxf(mx[b], fabsf(xf[j]));
                }
                vk_store8(xs + b * xst + (e - lo), xf);
            }
        }
    if (q.norm) { // second pass over the raw rows this thread staged (never chunked)
        consumers_reduce_rows<false, ROWS>(ss, red);
        float inv[ROWS];
#pragma unroll
        for (int b = 0; b < ROWS; b++) inv[b] = rsqrtf(ss[b] / (float)K + p.eps), mx[b] = 0.0f;
        for (int e = t * 8; e < K; e += stride)
#pragma unroll
            for (int b = 0; b < ROWS; b++) {
                if (b >= rows) continue;
                float xf[8], g[8];
                vk_load8(xs + b * xst + e, xf);
                vk_load8(q.norm + e, g);
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    xf[j] = vk_round(g[j] * vk_round(xf[j] * inv[b]));
                    mx[b] = fmaxf(mx[b], fabsf(xf[j]));
                }
                vk_store8(xs + b * xst + e, xf);
            }
    }
    if (q.w_scale) {
        if (!known) consumers_reduce_rows<true, ROWS>(mx, red); // (whole)
        if (t == 0)
            for (int b = 0; b < rows; b++) sx[b] = vk_fp8_scale(mx[b]);
        const int cst = Split<ROWS>::cstride(W);
        uint2 c[ROWS][kRowsVecs];
#pragma unroll
        for (int b = 0; b < ROWS; b++) {
            const float s = vk_fp8_scale(mx[b]); // the row's maximum, over every column
#pragma unroll
            for (int i = 0; i < kRowsVecs; i++) {
                const int e = t * 8 + i * stride; // from lo
                uint32_t w[2] = {0u, 0u};
                if (b < rows && e < W) {
                    float xf[8];
                    vk_load8(xs + b * xst + e, xf);
#pragma unroll
                    for (int j = 0; j < 8; j++) w[j >> 2] |= (uint32_t)vk_fp8_quantize(xf[j], s) << (8 * (j & 3));
                }
                c[b][i] = make_uint2(w[0], w[1]);
            }
        }
        consumers_sync(); // every bf16 value read before any code lands on it
        unsigned char *codes = (unsigned char *)xs;
#pragma unroll
        for (int b = 0; b < ROWS; b++)
#pragma unroll
            for (int i = 0; i < kRowsVecs; i++) {
                const int e = t * 8 + i * stride;
                if (b < rows && e < W) *(uint2 *)(codes + (size_t)b * cst + e) = c[b][i];
            }
    }
    store_resid<ROWS>(pre_resid, resid_s); // the epilogues' residuals, passed on by the barrier
    consumers_sync();
}

// Row w of the block's nth unit of q, -1 if the block has no such unit.
template <int ROWS> __device__ __forceinline__ int64_t unit_row(const Proj &q, int offset, int nth, int w) {
    const int64_t u = first_unit(offset) + (int64_t)nth * gridDim.x;
    return u < q.n / kUnitRows ? glu_row(q, u, w) : -1;
}

// What an ADD projection adds to row w of the block's nth unit, and (FP8) that weight row's
// scale, loaded before the op's staging so that no epilogue waits for them: the residual is
// complete before the op's own wait (it is the input of an op this one already waited for); the
// scales are read once a step, from HBM (loaded in the epilogue, every unit waited ~2 us for its
// row's scale). Each consumer says which (unit, row) each lane holds. The batched instances take
// only the scale here (resid false): their rows' residuals go through shared memory
// (ResidPrefetch), as a register a row held through the page loop made ptxas spill.
struct RowPrefetch {
    float resid, wscale;
};
template <int ROWS>
__device__ __forceinline__ RowPrefetch prefetch_row(const Proj &q, int offset, int nth, int w, bool resid = true) {
    const int64_t r = unit_row<ROWS>(q, offset, nth, w);
    RowPrefetch f;
    f.resid = resid && q.resid && r >= 0 ? vk_f(__ldcg(q.resid + r)) : 0.0f;
    f.wscale = q.w_scale && r >= 0 ? __ldg(q.w_scale + r) : 1.0f;
    return f;
}

// ResidPrefetch's loads (it is defined with the staging that stores them).
template <int ROWS>
__device__ __forceinline__ ResidPrefetch<ROWS> prefetch_resid(const Params &p, const Proj &q, int offset) {
    ResidPrefetch<ROWS> f;
#pragma unroll
    for (int j = 0; j < ResidPrefetch<ROWS>::kEach; j++) {
        const int i = threadIdx.x + j * kConsumers, b = i / kUnitRows % ROWS;
        const int64_t r = i < ResidPrefetch<ROWS>::kValues ? unit_row<ROWS>(q, offset, i / (ROWS * kUnitRows), i % kUnitRows) : -1;
        f.v[j] = q.resid && r >= 0 && b < p.rows ? vk_f(__ldcg(q.resid + b * q.y_stride + r)) : 0.0f;
    }
    return f;
}

// ---- a projection (consumers) ------------------------------------------------------------------
__device__ __forceinline__ float dot_vec(uint4 w, const bf16 *x, bool fp8) {
    if (fp8) {
        float xf[16];
        vk_load8(x, xf);
        vk_load8(x + 8, xf + 8);
        return vk_dot16_e4m3(w, xf);
    }
    float xf[8];
    vk_load8(x, xf);
    return vk_dot8_bf16(w, xf);
}

template <bool FP8>
__device__ void run_projection(const Params &p, const Proj &q, int offset, const bf16 *xs, float sx,
                               float resid, float wscale, const unsigned char *ring, uint64_t *full,
                               uint64_t *empty, uint32_t &page) {
    constexpr int kPages = Smem<1>::kPages; // the row consumer is the one-row instance's only
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, G = gridDim.x;
    const int pc = page_cols(FP8), ve = vec_elems(FP8);
    const int64_t units = q.n / kUnitRows;
    int nth = 0; // the unit's place among this block's units
    for (int64_t u = first_unit(offset); u < units; u += G, nth++) {
        // kLaneVecs partial sums (lane's vectors i, i + 32, ... of each page in turn): a full page's
        // loads go out together and its products form independent chains
        constexpr int kLaneVecs = kRowBytes / 16 / 32; // a full page's vectors a lane
        float part[kLaneVecs] = {};
        for (int c0 = 0; c0 < q.k; c0 += pc, page++) {
            const int slot = page % kPages;
            vk_mbar_wait(vk_smem_u32(&full[slot]), (page / kPages) & 1);
            const unsigned char *row = ring + (size_t)slot * kPageBytes + warp * kRowBytes;
            const int nvec = min(pc, q.k - c0) / ve;
            if (p.experiment == 1) {
            } else if (nvec == kRowBytes / 16) {
                uint4 w[kLaneVecs];
#pragma unroll
                for (int i = 0; i < kLaneVecs; i++) w[i] = *(const uint4 *)(row + (i * 32 + lane) * 16);
#pragma unroll
                for (int i = 0; i < kLaneVecs; i++) part[i] += dot_vec(w[i], xs + c0 + (i * 32 + lane) * ve, FP8);
            } else {
                for (int v = lane; v < nvec; v += 32)
                    part[0] += dot_vec(*(const uint4 *)(row + v * 16), xs + c0 + v * ve, FP8);
            }
            __syncwarp();
            if (lane == 0 || p.handover) vk_mbar_arrive(vk_smem_u32(&empty[slot]));
        }
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < kLaneVecs; i++) acc += part[i];
        acc = vk_warp_sum(acc);
        const int64_t r = u * kUnitRows + warp;
        const float res = __shfl_sync(0xffffffffu, resid, nth & 31); // prefetch_row's
        const float ws = FP8 ? __shfl_sync(0xffffffffu, wscale, nth & 31) : 1.0f; // prefetch_row's
        if (lane == 0) {
            if (FP8) acc *= sx * (nth < 32 ? ws : q.w_scale[r]);
            if (q.resid)
                q.y[r] = vk_bf((nth < 32 ? res : vk_f(__ldcg(q.resid + r))) + vk_round(acc));
            else
                q.y[r] = vk_bf(acc);
        }
    }
}

// The tensor cores' dot products (the split consumer's). A unit's 8 weight rows are the n side of
// the mma and the staged input rows are rows 0 .. rows - 1 of the m side (the rest zero: room
// for up to 16 sequences at the same cost). The k order inside a 16-byte load is free, as long
// as A and B agree: lane (g, t) loads the 16 bytes of weight row g at vector t of each group of
// four, and the same vector of input row g, and each mma takes two of its 4-byte words as its k
// slots of lane t. bf16: a vector is 8 elements, two mma.sync m16n8k16; FP8: 16 codes, two
// m16n8k32 E4M3 against x staged as its codes, each from zero and added to its accumulator in
// fp32 (vk_mma_e4m3_16832: the FP8 tensor cores sum with fewer bits than fp32, so they sum 32
// products, not the row). On sm_90, which has no FP8 mma.sync, ptxas widens both operands to
// fp16 and runs fp16 mmas: there the gain over staging x as fp16 values is its loads, half the
// bytes (bench/NOTES-2026-12-04d.md). Two independent accumulators a vector in flight; lane
// (g, t) ends with input row g's sums of weight rows 2t and 2t + 1.

// One 16-byte vector of each of the 8 weight rows (b) against the same vector of the lane's
// input row (A's row g), into accumulators acc[0] and acc[1].
template <bool FP8>
__device__ __forceinline__ void mma_vector(float (*acc)[4], uint4 w, uint4 xv) {
    const uint32_t wv[4] = {w.x, w.y, w.z, w.w}, x[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const uint32_t a[4] = {x[2 * i], 0u, x[2 * i + 1], 0u};
        if (FP8) {
            float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            vk_mma_e4m3_16832(d, a, wv[2 * i], wv[2 * i + 1]);
            acc[i][0] += d[0], acc[i][1] += d[1]; // row g's sums (d2, d3: rows 8-15, zero)
        } else {
            vk_mma_bf16_16816(acc[i], a, wv[2 * i], wv[2 * i + 1]);
        }
    }
}

// Lane (g, t)'s vectors v0 + t, v0 + 4 + t, ... (N of them) of weight row g and of its input
// row, loaded first, then their mmas (a vector past nvec counts as zeros). xv: the lane's input
// row's 16-byte vectors (8 bf16 values, or FP8's 16 codes), matching the weight rows' vectors
// one for one, or NULL (an input row past the launch's rows: zeros).
template <bool FP8, int N>
__device__ __forceinline__ void mma_vectors(float (&acc)[2 * N][4], const unsigned char *row, const uint4 *xv,
                                            int v0, int nvec, int t) {
    uint4 w[N], x[N];
#pragma unroll
    for (int i = 0; i < N; i++) {
        const int v = v0 + 4 * i + t;
        const bool ok = v < nvec;
        const uint4 z = make_uint4(0u, 0u, 0u, 0u);
        w[i] = ok ? *(const uint4 *)(row + v * 16) : z;
        x[i] = ok && xv ? xv[v] : z;
    }
#pragma unroll
    for (int i = 0; i < N; i++) mma_vector<FP8>(acc + i * 2, w[i], x[i]);
}

// The one-row instance's products (2026-12-05b's mma pairs): a unit's 8 weight rows are the m side
// of an m16n8k16 (bf16) or m16n8k32 (E4M3) mma twice over: A's rows 0-7 hold one 16-byte vector of
// each row (vector va), rows 8-15 another vector of the same rows (vb = va + 4), and B's columns 0
// and 1 hold the staged input's matching vectors (lanes g = 0 and g = 1; the other columns zero).
// D[r][0] and D[r + 8][1] are then row r's sums over va and vb, and both land in lane (r, 0) (d0,
// d3); the other entries of D are cross terms nobody reads. With the input as A's row 0 and the
// rows as B's columns (mma_vectors, which the batched instances keep: their rows fill A), 1/16 of
// each mma is useful, and the tensor cores' issue bounds an FP8 page: pairs do one row's products
// in half the mmas (bench/NOTES-2026-12-05b.md).
template <bool FP8>
__device__ __forceinline__ void mma_pair(float (&acc)[4], uint4 wa, uint4 wb, uint4 xv) {
    const uint32_t ra[4] = {wa.x, wa.y, wa.z, wa.w}, rb[4] = {wb.x, wb.y, wb.z, wb.w};
    const uint32_t x[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
    for (int j = 0; j < 2; j++) {
        const uint32_t a[4] = {ra[2 * j], rb[2 * j], ra[2 * j + 1], rb[2 * j + 1]};
        if (FP8) {
            float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            vk_mma_e4m3_16832(d, a, x[2 * j], x[2 * j + 1]);
            acc[0] += d[0], acc[3] += d[3]; // D[g][0], D[g + 8][1] (the rest: cross terms)
        } else {
            vk_mma_bf16_16816(acc, a, x[2 * j], x[2 * j + 1]);
        }
    }
}

// Lane (g, t)'s pairs of vectors (v0 + t + 8i, v0 + t + 8i + 4), i < N, of weight row g, and of
// the input in lanes g = 0 (the first of each pair) and g = 1 (the second), loaded first, then
// their mmas, pair i into acc[i] (a vector past nvec counts as zeros).
template <bool FP8, int N>
__device__ __forceinline__ void mma_pairs(float (&acc)[N][4], const unsigned char *row, const uint4 *xv, int v0,
                                          int nvec, int g, int t) {
    uint4 wa[N], wb[N], x[N];
#pragma unroll
    for (int i = 0; i < N; i++) {
        const int va = v0 + 8 * i + t, vb = va + 4, vx = g == 0 ? va : vb;
        const uint4 z = make_uint4(0u, 0u, 0u, 0u);
        wa[i] = va < nvec ? *(const uint4 *)(row + va * 16) : z;
        wb[i] = vb < nvec ? *(const uint4 *)(row + vb * 16) : z;
        x[i] = g < 2 && vx < nvec ? xv[vx] : z;
    }
#pragma unroll
    for (int i = 0; i < N; i++) mma_pair<FP8>(acc[i], wa[i], wb[i], x[i]);
}

// The split consumer (CONSUMER_SPLIT). Warp w sums vectors 24w .. 24w + 23 of each row of every
// page (bf16: 192 columns, FP8: 384), lane (g, t) row g's vectors 24w + t, + 4, ..., + 20, with
// mma_vectors, three at a time (6 accumulators; all six at once spilled and measured 20 us a
// FP8 step slower). At a unit's end its lanes (b, t), b < rows, hold the warp's sums of input row
// b and weight rows 2t, 2t + 1 and put them in the unit's slot (unit_ord: the block's units so
// far, over every op), and warp nth % 8 waits for the 8 warps' sums (unit_bar: each writing lane
// arrives, 32 a row and phase) and adds them in warp order: a sum does not depend on timing. Its
// lanes (b, r), lane 8b + r, then free the slot (slot_free, 8 arrivals a row), which the writers
// of the slot's next unit wait for. (The ring alone keeps a warp within kPages units of the
// others, so that wait passes at once; the barrier says so to compute-sanitizer's racecheck,
// which does not follow the ordering through the producer, and keeps it true if the ring or the
// slots change.) Every warp releases every page it has read, so a page leaves the ring as soon as
// its slowest slice is done. xs: the staged rows (bf16 values, or FP8's codes), sx: FP8's input
// scales, a row each. Columns lo .. hi - 1 of the weights: the whole K, or a chunk
// (chunk_cols), whose sums a unit's adder keeps in chunk_acc (its nth unit's at nth) until the
// last chunk's are added to them, in chunk order, and the epilogue runs.
template <bool FP8, int ROWS>
__device__ void run_projection_split(const Params &p, const Proj &q, int offset, int lo, int hi, const void *xs,
                                     const float *sx, const RowPrefetch &pre, const float *resid_s,
                                     const unsigned char *ring, uint64_t *full, uint64_t *empty, float *partials,
                                     float *chunk_acc,
                                     uint64_t *unit_bar, uint64_t *slot_free, uint32_t &page, uint32_t &unit_ord) {
    typedef Split<ROWS> S;
    constexpr int kPages = S::kPages;
    constexpr int kWarpVecs = kRowBytes / 16 / kConsumerWarps; // a warp's vectors of a row
    constexpr int kVecsInFlight = kWarpVecs / 8; // vectors a lane loads at once (half a page's)
    static_assert(kWarpVecs % 8 == 0, "a page's vectors of a warp are two loads of a lane's");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int pc = page_cols(FP8), ve = vec_elems(FP8);
    const int v0 = warp * (kRowBytes / 16 / kConsumerWarps); // this warp's first vector of a row
    const int64_t units = q.n / kUnitRows;
    // this lane's input row (row g), or none; rows S::xstride / S::cstride apart (ROWS = 1: one)
    const unsigned char *xrow =
        g < launch_rows<ROWS>(p) ? (const unsigned char *)xs + (size_t)g * (FP8 ? S::cstride(hi - lo) : 2 * S::xstride(hi - lo))
                   : nullptr;
    const bool first = lo == 0, last = hi == q.k; // of the chunks
    constexpr int kHalves = (ROWS * kUnitRows + 31) / 32; // the adder's sums a lane (8 rows: two)
    float amax[kHalves]; // the SwiGLU units' largest |SwiGLU| of the half's input row (amax_out)
#pragma unroll
    for (int half = 0; half < kHalves; half++) amax[half] = 0.0f;
    // unit u's sums (its nth, its slot us in its round), added up by its adder warp
    auto add_unit = [&](int64_t u, int nth, int us, uint32_t round) {
        if (warp != nth % kConsumerWarps) return;
        vk_mbar_wait(vk_smem_u32(&unit_bar[us]), round & 1);
        const int r = lane & 7;                                // weight row r of the unit
        const int k = nth / kConsumerWarps;                    // the adder's k-th unit
        const bool prefetched = k < 4;
        const int src = (k & 3) * 8 + r;                       // the prefetch's lane
        const float ws0 = FP8 ? __shfl_sync(0xffffffffu, pre.wscale, src) : 1.0f;
#pragma unroll
        for (int half = 0; half < kHalves; half++) {
            const int b = ROWS == 1 ? 0 : (lane + 32 * half) >> 3; // input row b
            float res = 0.0f, ws = ws0;
            if constexpr (ROWS == 1) res = __shfl_sync(0xffffffffu, pre.resid, src); // every lane takes part
            if (ROWS == 1 ? lane >= kUnitRows : b >= launch_rows<ROWS>(p)) continue;
            if (ROWS > 1 && nth < kPrefUnits) res = resid_s[(nth * ROWS + b) * kUnitRows + r];
            const int64_t rw = glu_row(q, u, r);
            const float *pu = partials + ((size_t)us * kConsumerWarps * ROWS + b) * kUnitRows + r;
            float sum = 0.0f;
#pragma unroll
            for (int w = 0; w < kConsumerWarps; w++) sum += pu[w * ROWS * kUnitRows];
            vk_mbar_arrive(vk_smem_u32(&slot_free[us])); // the slot can take its next unit
            if (!first || !last) { // chunked: the chunks' sums in chunk order
                float *acc_u = chunk_acc + ((size_t)nth * ROWS + b) * kUnitRows + r;
                if (!first) sum = *acc_u + sum;
                if (!last) {
                    *acc_u = sum;
                    continue;
                }
            }
            if (q.resid && nth >= (ROWS == 1 ? 4 * kConsumerWarps : kPrefUnits)) // past the prefetched units
                res = vk_f(__ldcg(q.resid + b * q.y_stride + rw));
            if (FP8 && !prefetched) ws = q.w_scale[rw];
            if (FP8) sum *= sx[b] * ws;
            if (q.glu_units) { // lanes 8b + 0..3 hold gate rows of row b, 8b + 4..7 the same rows of up
                constexpr int kHalf = kUnitRows / 2;
                // the 8 lanes of input row b, all here or none (b < rows)
                const unsigned lanes = ROWS == 1 ? 0xffu : 0xffu << (lane & ~(kUnitRows - 1));
                const float v = vk_round(sum), up = __shfl_down_sync(lanes, v, kHalf, kUnitRows);
                if (r < kHalf) {
                    const float a = vk_round(vk_swiglu(v, up));
                    q.y[b * q.y_stride + u * kHalf + r] = vk_bf(a);
                    if (ROWS > 1) amax[half] = fmaxf(amax[half], fabsf(a));
                }
                continue;
            }
            q.y[b * q.y_stride + rw] = q.resid ? vk_bf(res + vk_round(sum)) : vk_bf(sum);
        }
    };
    int nth = 0; // the unit's place among this block's units
    // The adding lags a unit behind (kLag: FP8, and the batched instances): an adder that waits
    // for the slowest warp's sums, adds, and is then itself the slowest warp of the next unit puts
    // every unit's epilogue on the op's chain, one after another; added after its products of the
    // next unit, the sums are there and the epilogue runs beside the other warps' pages (with the
    // SwiGLU units, H100: one-row FP8 step -2.2%, 8 rows -2.5%; one-row bf16, whose units are two
    // pages or more, measured +0.25% with it and adds at once: bench/NOTES-2026-12-06c.md).
    constexpr bool kLag = FP8 || ROWS > 1;
    int64_t pending = -1; // the unit whose adding waits for this warp's products of the next
    int pending_us = 0;
    uint32_t pending_round = 0;
    // one turn past the last unit, for its adding alone (one copy of add_unit's code)
    for (int64_t u = first_unit(offset);; nth++, unit_ord++, u += (int)gridDim.x) {
        const bool more = u < units;
        const int us = (int)(unit_ord % S::kSlots);
        const uint32_t round = unit_ord / S::kSlots; // the slot's uses before this one
        // the unit's pages, each through products(weight row g's bytes of the page, the offset of
        // column c0 in a staged input row, the page's vectors of a row)
        auto pages = [&](auto &&products) {
            for (int c0 = lo; c0 < hi; c0 += pc, page++) {
                const int slot = page % kPages;
                vk_mbar_wait(vk_smem_u32(&full[slot]), (page / kPages) & 1);
                const unsigned char *row = ring + (size_t)slot * kPageBytes + g * kRowBytes;
                const size_t at = (size_t)(c0 - lo) * (FP8 ? 1 : 2); // bf16 values, or FP8's codes
                const int nvec = min(pc, q.k - c0) / ve;
                if (p.experiment != 1 && v0 < nvec) products(row, at, nvec);
                __syncwarp();
                if (lane == 0 || p.handover) vk_mbar_arrive(vk_smem_u32(&empty[slot]));
            }
        };
        if (!more) { // past the last unit: only the adding below
        } else if constexpr (ROWS == 1) { // the pairs: lanes (r, 0) end with weight row r's sum
            constexpr int kPairs = kWarpVecs / 8;
            float acc[kPairs][4];
#pragma unroll
            for (int i = 0; i < kPairs; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
            pages([&](const unsigned char *row, size_t at, int nvec) { // the input's vectors: lanes g < 2
                mma_pairs<FP8, kPairs>(acc, row, (const uint4 *)((const unsigned char *)xs + at), v0, nvec, g, t);
            });
            if (t == 0) {
                float *part = partials + ((size_t)us * kConsumerWarps + warp) * kUnitRows;
                // the slot's last unit has been added up (passes at once on its first use)
                vk_mbar_wait(vk_smem_u32(&slot_free[us]), (round & 1) ^ 1);
                float s = 0.0f;
#pragma unroll
                for (int i = 0; i < kPairs; i++) s += acc[i][0] + acc[i][3];
                part[g] = s;
                vk_mbar_arrive(vk_smem_u32(&unit_bar[us])); // releases this lane's sum
            }
        } else {
            float acc[2 * kVecsInFlight][4];
#pragma unroll
            for (int i = 0; i < 2 * kVecsInFlight; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
            pages([&](const unsigned char *row, size_t at, int nvec) { // the lane's input row g
                const uint4 *xv = xrow ? (const uint4 *)(xrow + at) : nullptr;
#pragma unroll
                for (int v = v0; v < v0 + kWarpVecs; v += 4 * kVecsInFlight)
                    mma_vectors<FP8, kVecsInFlight>(acc, row, xv, v, nvec, t);
            });
            if (g < launch_rows<ROWS>(p)) {
                float *part = partials + (((size_t)us * kConsumerWarps + warp) * ROWS + g) * kUnitRows;
                // the slot's last unit has been added up (passes at once on its first use)
                vk_mbar_wait(vk_smem_u32(&slot_free[us]), (round & 1) ^ 1);
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    float s = 0.0f;
#pragma unroll
                    for (int i = 0; i < 2 * kVecsInFlight; i++) s += acc[i][c];
                    part[2 * t + c] = s;
                }
                vk_mbar_arrive(vk_smem_u32(&unit_bar[us])); // releases this lane's sums
            }
        }
        if constexpr (kLag) { // the unit before, whose adder has done this unit's products since
            if (pending >= 0) add_unit(pending, nth - 1, pending_us, pending_round);
            if (!more) break;
            pending = u, pending_us = us, pending_round = round;
        } else {
            if (!more) break;
            add_unit(u, nth, us, round);
        }
    }
    if (ROWS > 1 && q.amax_out) // each row's maximum over its adder lanes (lanes 8b .. 8b + 7 of a half)
#pragma unroll
        for (int half = 0; half < kHalves; half++) {
            float m = amax[half];
#pragma unroll
            for (int o = 1; o < kUnitRows; o <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
            const int b = (lane + 32 * half) >> 3;
            if ((lane & 7) == 0 && b < launch_rows<ROWS>(p)) publish_amax(q.amax_out + b * kCounterStride, m);
        }
}

// ---- attention (consumers) -----------------------------------------------------------------------

// How a row's keys are cut: splits of whole kSplitRound-key pieces, at most max_splits (kMaxSplits
// shared by the launch's rows), none empty.
__device__ __forceinline__ void split_plan(int L, int max_splits, int *chunk, int *n_active) {
    const int per = (L + max_splits - 1) / max_splits;
    *chunk = (per + kSplitRound - 1) / kSplitRound * kSplitRound;
    *n_active = (L + *chunk - 1) / *chunk;
}

// Dims a lane holds of a head: DPL = head_dim / 32 consecutive ones, as raw bf16 bits (a
// register or two: the first keys of a unit are held from the layer's q|k|v op on) and as floats.
template <int DPL> struct RawDims {
    typedef typename std::conditional<DPL == 4, uint2, typename std::conditional<DPL == 2, unsigned,
                                      unsigned short>::type>::type type;
};
template <int DPL> __device__ __forceinline__ typename RawDims<DPL>::type load_raw(const bf16 *src) {
    return __ldcg((const typename RawDims<DPL>::type *)src);
}
template <int DPL>
__device__ __forceinline__ void unpack_dims(typename RawDims<DPL>::type u, float (&f)[DPL]) {
    if constexpr (DPL == 4) {
        const __nv_bfloat162 *h = (const __nv_bfloat162 *)&u;
        const float2 a = __bfloat1622float2(h[0]), b = __bfloat1622float2(h[1]);
        f[0] = a.x, f[1] = a.y, f[2] = b.x, f[3] = b.y;
    } else if constexpr (DPL == 2) {
        const float2 a = __bfloat1622float2(*(const __nv_bfloat162 *)&u);
        f[0] = a.x, f[1] = a.y;
    } else {
        f[0] = __bfloat162float(*(const bf16 *)&u);
    }
}
template <int DPL> __device__ __forceinline__ void load_dims(const bf16 *src, float (&f)[DPL]) {
    unpack_dims<DPL>(load_raw<DPL>(src), f);
}
template <int DPL> __device__ __forceinline__ void load_dims_smem(const bf16 *src, float (&f)[DPL]) {
    unpack_dims<DPL>(*(const typename RawDims<DPL>::type *)src, f);
}

// Query heads of one kv head (Voxtral's 32 / 8). Larger groups go op by op: room for 8 heads'
// softmax state made ptxas spill ~180 bytes a thread at head_dim 128 (4: 48), and a spill
// reloaded from L2 under the weights' stream costs microseconds on the attention's path.
constexpr int kMaxGroup = 4;

// The shared-memory scratch of an attention unit (in the staging area), laid out for a group
// of GQ query heads of D dims: the RoPE'd queries (bf16 values), this token's key (RoPE'd) and
// value, and each warp's softmax state (max, sum, unnormalised output).
struct AttnSmem {
    float *q, *k_new, *v_new, *wm, *wl, *wo;
    int *last;
    __device__ AttnSmem(unsigned char *base, int GQ, int D) {
        q = (float *)base;
        k_new = q + GQ * D, v_new = k_new + D;
        wm = v_new + D, wl = wm + kConsumerWarps * GQ, wo = wl + kConsumerWarps * GQ;
        last = (int *)(wo + kConsumerWarps * GQ * D);
    }
    __host__ __device__ static constexpr size_t bytes(int GQ, int D) {
        return sizeof(float) * ((size_t)GQ * D + 2 * D + 2 * kConsumerWarps * GQ +
                                (size_t)kConsumerWarps * GQ * D) + sizeof(int);
    }
};

// What the step is for each row, in shared memory from the kernel's start: its position, cache
// length and cache slot (under the weights' stream a load from global memory takes ~2 us, and
// the attention's cache reads needed two of them in a row, length then block table, before they
// could be issued); its attention units (row b's: units_before[b] .. units_before[b + 1] - 1, a
// kv head's n_active[b] splits of chunk[b] keys after another; past p.rows: none); RoPE's cos
// and sin (bf16 values) of each pair index at its position; FP8's staged input scales.
template <int ROWS> struct StepRows {
    int pos[ROWS], len[ROWS], slot[ROWS], chunk[ROWS], n_active[ROWS], units_before[ROWS + 1];
    float cs[ROWS][64], sn[ROWS][64];
    float sx[ROWS];
};

// Key j's row in the layer's cache (through row b's block table).
__device__ __forceinline__ int cache_row(const Params &p, int b, int j) {
    return p.table[(size_t)b * p.table_width + j / p.block_size] * p.block_size + j % p.block_size;
}

// Attention unit u: row b, kv head g, split.
template <int ROWS>
__device__ __forceinline__ void attention_unit_of(const StepRows<ROWS> &st, int u, int *b, int *g, int *split) {
    int r = 0;
#pragma unroll
    for (int i = 1; i < ROWS; i++)
        if (u >= st.units_before[i]) r = i;
    const int local = u - st.units_before[r];
    *b = r, *g = local / st.n_active[r], *split = local % st.n_active[r];
}

// Row b's K/V rows of keys j0 .. j0 + KB - 1 (zeros past k_end; the new key's are filled in later).
template <int DPL, int KB>
__device__ __forceinline__ void load_keys(const Params &p, int b, const bf16 *kg, const bf16 *vg, int KD,
                                          int j0, int k_end, int pos, float (&kf)[KB][DPL],
                                          float (&vf)[KB][DPL]) {
#pragma unroll
    for (int i = 0; i < KB; i++) {
        const int j = j0 + i;
        if (j >= k_end || j == pos) {
#pragma unroll
            for (int e = 0; e < DPL; e++) kf[i][e] = vf[i][e] = 0.0f;
        } else {
            const int64_t row = cache_row(p, b, j);
            load_dims<DPL>(kg + row * KD, kf[i]);
            load_dims<DPL>(vg + row * KD, vf[i]);
        }
    }
}

constexpr int kAttnKB = 4; // keys a warp takes at a time

// This block's first attention unit of a layer and its warp's first KB keys, raw, in registers.
// The cache's old keys do not depend on this step, so they are asked for at the start of the
// layer's q|k|v op (begin_keys, before its wait: the block table's entries; fetch_keys, after
// its staging: the rows) and arrive while the projection streams, not on the attention's path.
template <int DPL> struct FirstKeys {
    typename RawDims<DPL>::type k[kAttnKB], v[kAttnKB];
    int row[kAttnKB]; // the keys' cache rows, -1 for none (past the unit's end, or this step's)
    int u;            // the unit (units past the layer's count: none)
};

template <int ROWS> __device__ __forceinline__ int attention_units(const StepRows<ROWS> &st) {
    return st.units_before[ROWS];
}

template <int DPL, int ROWS>
__device__ __forceinline__ void begin_keys(const Params &p, const StepRows<ROWS> &st, int offset,
                                           FirstKeys<DPL> &f) {
    const int warp = threadIdx.x >> 5;
    f.u = first_unit(offset);
    const bool any = f.u < attention_units(st);
    int b = 0, g = 0, split = 0;
    if (any) attention_unit_of(st, f.u, &b, &g, &split);
    const int k_begin = split * st.chunk[b], k_end = min(st.len[b], k_begin + st.chunk[b]);
#pragma unroll
    for (int i = 0; i < kAttnKB; i++) {
        const int j = k_begin + warp * kAttnKB + i;
        f.row[i] = any && j < k_end && j != st.pos[b] ? cache_row(p, b, j) : -1;
    }
}

// (The unit's kv head is found again from f.u: FirstKeys is held through the q|k|v projection,
// where every register counts.)
template <int DPL, int ROWS>
__device__ __forceinline__ void fetch_keys(const Params &p, const StepRows<ROWS> &st, int layer,
                                           FirstKeys<DPL> &f) {
    const int D = DPL * 32, KD = p.kv_heads * D, lane = threadIdx.x & 31;
    const vox_k_pdecode_layer &Ly = p.layers[layer];
    int b = 0, g = 0, split = 0;
    if (f.u < attention_units(st)) attention_unit_of(st, f.u, &b, &g, &split);
#pragma unroll
    for (int i = 0; i < kAttnKB; i++) {
        if (f.row[i] >= 0) {
            const int64_t at = (int64_t)f.row[i] * KD + (int64_t)g * D + lane * DPL;
            f.k[i] = load_raw<DPL>((const bf16 *)Ly.k_cache + at);
            f.v[i] = load_raw<DPL>((const bf16 *)Ly.v_cache + at);
        } else {
            f.k[i] = f.v[i] = typename RawDims<DPL>::type();
        }
    }
}

// The (head, split) slots of row b's kv head g in part_o / part_ml.
__device__ __forceinline__ int64_t split_slots(const Params &p, int b, int g, int GQ) {
    return ((int64_t)b * p.kv_heads + g) * GQ * kMaxSplits;
}

// The batched instances' FP8 o input: publishes the largest |value| of row b's attention output
// that a consumer thread wrote (Proj::in_amax); every consumer thread takes part.
__device__ __forceinline__ void publish_attn_amax(const Params &p, int layer, int b, float amax) {
    if (!p.layers[layer].o_scale) return;
    amax = vk_warp_max(amax);
    if ((threadIdx.x & 31) == 0) publish_amax(amax_slot(p, layer, AMAX_O) + b * kCounterStride, amax);
}

// The group's split partials merged (vk_merge, the op-by-op path's arithmetic and order) with
// every read in flight at once: each thread's partial outputs to registers, the (max, sum)
// pairs through shared memory (ml_s), one L2 round trip in all (a loop over the splits' loads
// took one a split).
template <int ROWS>
__device__ __forceinline__ void merge_group(const Params &p, int layer, int b, int g, int GQ, int D, int n_active,
                                            float *ml_s) {
    const int t = threadIdx.x;
    float amax = 0.0f; // of this thread's outputs (publish_attn_amax)
    const int64_t ws0 = split_slots(p, b, g, GQ); // this group's (head, split) slots
    static_assert(kMaxGroup * kMaxSplits * 2 <= kConsumers, "a thread loads one (max, sum) value");
    const float mlv = t < GQ * kMaxSplits * 2 ? __ldcg(&p.part_ml[ws0 * 2 + t]) : 0.0f;
    const int rounds = (GQ * D + 2 * kConsumers - 1) / (2 * kConsumers); // the same for every thread
    for (int r = 0; r < rounds; r++) {
        const int i0 = t + r * 2 * kConsumers;
        float ov[2][kMaxSplits];
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int i = i0 + e * kConsumers, h = i / D, d = i % D;
#pragma unroll
            for (int sp = 0; sp < kMaxSplits; sp++)
                ov[e][sp] = i < GQ * D && sp < n_active
                                ? __ldcg(&p.part_o[(ws0 + (int64_t)h * kMaxSplits + sp) * D + d])
                                : 0.0f;
        }
        if (r == 0) {
            if (t < GQ * kMaxSplits * 2) ml_s[t] = mlv;
            consumers_sync();
        }
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int i = i0 + e * kConsumers, h = i / D, d = i % D;
            if (i >= GQ * D) break;
            const float *ml = ml_s + h * kMaxSplits * 2;
            const float *o = ov[e];
            const float v = vk_merge<kMaxSplits>(
                n_active, [&](int sp) { return ml[sp * 2]; }, [&](int sp) { return ml[sp * 2 + 1]; },
                [&](int sp) { return o[sp]; });
            const bf16 out = vk_bf(v);
            p.attn[(int64_t)b * p.heads * D + (int64_t)(g * GQ + h) * D + d] = out;
            amax = fmaxf(amax, fabsf(vk_f(out)));
        }
    }
    if constexpr (ROWS > 1) publish_attn_amax(p, layer, b, amax);
}

// The shared memory past an attention unit's scratch where its later keys are staged (the rest
// of the stage area: free during the attention), and the keys a batch holds there: whole rounds
// of the warps' groups (kConsumerWarps * KB keys), 0 where not one round fits (the one-row
// instance's 32 KB stage at head_dim 128: the later keys are then loaded group by group).
template <int D> __host__ __device__ constexpr int staged_keys_at() {
    return (int)((AttnSmem::bytes(kMaxGroup, D) + 15) / 16 * 16);
}
template <int ROWS, int D, int KB> __host__ __device__ constexpr int staged_keys_batch() {
    return (Smem<ROWS>::kStageBytes - staged_keys_at<D>()) / (2 * D * 2) / (kConsumerWarps * KB) *
           (kConsumerWarps * KB);
}

// Keys lo .. hi - 1 of row b's kv head g, K then V rows of D bf16 values each, into dst
// ([key][K | V][D]) with cp.async: every load of the batch in flight at once, one round trip in
// all where the groups took one each (bench/NOTES-2026-12-05e.md). The block table's entries
// come from L1 after the first warp's.
template <int DPL>
__device__ __forceinline__ void stage_keys(const Params &p, const vox_k_pdecode_layer &Ly, int b, int g,
                                           int lo, int hi, unsigned char *dst) {
    constexpr int D = DPL * 32, kPieces = D / 8;       // 16-byte pieces of a row
    constexpr int kKeysAPass = kConsumers / (2 * kPieces); // thread t: piece, K or V, of a key
    const int t = threadIdx.x, piece = t % kPieces, part = t / kPieces % 2;
    const bf16 *base = (const bf16 *)(part ? Ly.v_cache : Ly.k_cache) + (int64_t)g * D + piece * 8;
    const uint32_t to = vk_smem_u32(dst) + (uint32_t)((part * D + piece * 8) * 2);
    const int KD = p.kv_heads * D;
    for (int i = t / (2 * kPieces); i < hi - lo; i += kKeysAPass)
        vk_cp_async16(to + (uint32_t)(i * 2 * D * 2), base + (int64_t)cache_row(p, b, lo + i) * KD, true);
    vk_cp_async_commit();
}

// One attention unit (row b, kv head g, split), keys in groups of KB a warp. first: fk holds
// this warp's first group (FirstKeys), asked for during the q|k|v op.
template <int DPL, int KB, int ROWS>
__device__ __forceinline__ void attention_unit(const Params &p, const StepRows<ROWS> &st, int layer,
                                               int b, int g, int split, unsigned char *stage,
                                               bool first, const FirstKeys<DPL> &fk) {
    constexpr int D = DPL * 32;
    const vox_k_pdecode_layer &Ly = p.layers[layer];
    const int t = threadIdx.x, warp = t >> 5, lane = t & 31, half = D / 2;
    const int GQ = p.heads / p.kv_heads, QD = p.heads * D, KD = p.kv_heads * D;
    const AttnSmem s(stage, GQ, D);
    const int pos = st.pos[b], L = st.len[b], chunk = st.chunk[b], n_active = st.n_active[b];
    const bf16 *qkv = p.qkv + (int64_t)b * (QD + 2 * KD); // this row's q|k|v
    bf16 *attn = p.attn + (int64_t)b * QD;                // and its attention output
    // the new value, loaded first so that its L2 round trip overlaps the queries' (the stores
    // into the scratch below would keep the compiler from hoisting it)
    const float v_new = t < D ? vk_f(__ldcg(qkv + QD + KD + (int64_t)g * D + t)) : 0.0f;
    consumers_sync(); // the scratch (and the staged keys) may still be read by the previous unit
    const int k_begin = split * chunk, k_end = min(L, k_begin + chunk);
    const int later0 = k_begin + kConsumerWarps * KB; // past every warp's first group
    constexpr int batch = staged_keys_batch<ROWS, D, KB>();
    unsigned char *staged = stage + staged_keys_at<D>();
    if constexpr (batch > 0)
        if (later0 < k_end) stage_keys<DPL>(p, Ly, b, g, later0, min(k_end, later0 + batch), staged);
    // RoPE'd q of the group's heads, the new key (matvec.cuh's rounding), the new value
    for (int i = t; i < (GQ + 1) * half; i += kConsumers) {
        const int h = i / half, d = i % half;
        const bf16 *src = h < GQ ? qkv + (int64_t)(g * GQ + h) * D : qkv + QD + (int64_t)g * D;
        const float a = vk_f(__ldcg(src + d)), c = vk_f(__ldcg(src + d + half));
        float o1, o2;
        vk_rope_rotate(a, c, st.cs[b][d], st.sn[b][d], &o1, &o2);
        float *dst = h < GQ ? s.q + h * D : s.k_new;
        dst[d] = vk_round(o1);
        dst[d + half] = vk_round(o2);
    }
    if (t < D) s.v_new[t] = v_new;
    consumers_sync();
    ATTN_MARK(p, layer, 2);
    if (split == 0) { // the new key and value into the cache (the others read them from s)
        bf16 *kc = (bf16 *)Ly.k_cache + (int64_t)st.slot[b] * KD + (int64_t)g * D;
        bf16 *vc = (bf16 *)Ly.v_cache + (int64_t)st.slot[b] * KD + (int64_t)g * D;
        for (int d = t; d < D; d += kConsumers) {
            kc[d] = vk_bf(s.k_new[d]);
            vc[d] = vk_bf(s.v_new[d]);
        }
    }
    // this warp's keys: groups of KB consecutive keys, warps interleaved
    float q[kMaxGroup][DPL], o[kMaxGroup][DPL], m[kMaxGroup], l[kMaxGroup];
#pragma unroll
    for (int h = 0; h < kMaxGroup; h++) {
        m[h] = -INFINITY, l[h] = 0.0f;
#pragma unroll
        for (int j = 0; j < DPL; j++) q[h][j] = h < GQ ? s.q[h * D + lane * DPL + j] : 0.0f, o[h][j] = 0.0f;
    }
    ATTN_MARK(p, layer, 8);
    const bf16 *kg = (const bf16 *)Ly.k_cache + (int64_t)g * D + lane * DPL;
    const bf16 *vg = (const bf16 *)Ly.v_cache + (int64_t)g * D + lane * DPL;
    // this warp's keys: groups of KB consecutive keys, warps interleaved, in rounds that every
    // warp goes through (a batch of staged keys begins at a round, behind a barrier). The first
    // group comes from FirstKeys (in registers since the q|k|v op), the later ones from the
    // staged batches (the first issued at the unit's start), or one load a group where no batch
    // fits.
    constexpr int kRound = kConsumerWarps * KB, per_batch = batch / kRound;
    constexpr int kPer = per_batch > 0 ? per_batch : 1; // (a divisor where no batch fits)
    const int rounds = (k_end - k_begin + kRound - 1) / kRound;
    for (int r = 0; r < rounds; r++) {
        const int j0 = k_begin + warp * KB + r * kRound;
        const int lo = per_batch > 0 && r > 0 ? later0 + (r - 1) / kPer * batch : 0;
        if (per_batch > 0 && r > 0 && (r - 1) % kPer == 0) {
            if (r > 1) {
                consumers_sync(); // every warp is done with the batch before
                stage_keys<DPL>(p, Ly, b, g, lo, min(k_end, lo + batch), staged);
            }
            vk_cp_async_wait<0>();
            consumers_sync();
        }
        if (j0 >= k_end) continue;
        float kf[KB][DPL], vf[KB][DPL];
        if (r == 0 && first) {
            static_assert(KB == kAttnKB, "FirstKeys holds kAttnKB keys a warp");
#pragma unroll
            for (int i = 0; i < KB; i++) unpack_dims<DPL>(fk.k[i], kf[i]), unpack_dims<DPL>(fk.v[i], vf[i]);
        } else if (r > 0 && per_batch > 0) {
#pragma unroll
            for (int i = 0; i < KB; i++) {
                const bf16 *row = (const bf16 *)staged + (size_t)(j0 - lo + i) * 2 * D + lane * DPL;
                if (j0 + i < k_end) {
                    load_dims_smem<DPL>(row, kf[i]);
                    load_dims_smem<DPL>(row + D, vf[i]);
                } else {
#pragma unroll
                    for (int e = 0; e < DPL; e++) kf[i][e] = vf[i][e] = 0.0f;
                }
            }
        } else {
            load_keys<DPL, KB>(p, b, kg, vg, KD, j0, k_end, pos, kf, vf);
        }
#pragma unroll
        for (int i = 0; i < KB; i++) // the new key, from this step's q|k|v
            if (j0 + i == pos && pos < k_end)
#pragma unroll
                for (int e = 0; e < DPL; e++)
                    kf[i][e] = s.k_new[lane * DPL + e], vf[i][e] = s.v_new[lane * DPL + e];
        // every head slot, also past GQ (their q is 0 and their state is never written out):
        // without a branch between heads their chains interleave (a break at GQ ran them one
        // after another)
#pragma unroll
        for (int h = 0; h < kMaxGroup; h++) {
            float sc[KB], mx = -INFINITY;
#pragma unroll
            for (int i = 0; i < KB; i++) {
                float d = 0.0f;
#pragma unroll
                for (int e = 0; e < DPL; e++) d = fmaf(q[h][e], kf[i][e], d);
                d = vk_warp_sum(d);
                sc[i] = j0 + i < k_end ? d : -INFINITY;
                mx = fmaxf(mx, sc[i]);
            }
            float alpha;
            const float base = vk_softmax_raise(m[h], mx * p.scale_log2, alpha);
            float sum = 0.0f;
#pragma unroll
            for (int e = 0; e < DPL; e++) o[h][e] *= alpha;
#pragma unroll
            for (int i = 0; i < KB; i++) {
                const float pb = vk_fast_exp2(fmaf(sc[i], p.scale_log2, -base));
                sum += pb;
                const float pr = vk_round(pb); // P is bf16 for P@V, as the tensor-core kernels
#pragma unroll
                for (int e = 0; e < DPL; e++) o[h][e] = fmaf(pr, vf[i][e], o[h][e]);
            }
            l[h] = l[h] * alpha + sum;
        }
        if (r == 0) ATTN_MARK(p, layer, 9);
    }
    // merge the warps (attention.cu's order: max, then the scaled sums in warp order)
    ATTN_MARK(p, layer, 3);
#pragma unroll
    for (int h = 0; h < kMaxGroup; h++) {
        if (h >= GQ) break;
        if (lane == 0) s.wm[warp * GQ + h] = m[h], s.wl[warp * GQ + h] = l[h];
#pragma unroll
        for (int e = 0; e < DPL; e++) s.wo[(warp * GQ + h) * D + lane * DPL + e] = o[h][e];
    }
    consumers_sync();
    const int64_t ws0 = split_slots(p, b, g, GQ); // this group's (head, split) slots
    float amax = 0.0f; // of this thread's outputs (one split: publish_attn_amax)
    for (int i = t; i < GQ * D; i += kConsumers) {
        const int h = i / D, d = i % D;
        float mx = -INFINITY;
        for (int w = 0; w < kConsumerWarps; w++) mx = fmaxf(mx, s.wm[w * GQ + h]);
        const float base = mx == -INFINITY ? 0.0f : mx;
        float acc = 0.0f, ls = 0.0f;
        for (int w = 0; w < kConsumerWarps; w++) {
            const float f = exp2f(s.wm[w * GQ + h] - base);
            acc += f * s.wo[(w * GQ + h) * D + d];
            ls += f * s.wl[w * GQ + h];
        }
        if (n_active == 1) {
            const bf16 out = vk_bf(ls > 0.0f ? acc / ls : 0.0f);
            attn[(int64_t)(g * GQ + h) * D + d] = out;
            amax = fmaxf(amax, fabsf(vk_f(out)));
        } else {
            const int64_t slot = ws0 + (int64_t)h * kMaxSplits + split;
            p.part_o[slot * D + d] = acc;
            if (d == 0) p.part_ml[slot * 2] = mx, p.part_ml[slot * 2 + 1] = ls;
        }
    }
    if constexpr (ROWS > 1)
        if (n_active == 1) publish_attn_amax(p, layer, b, amax);
    if (n_active > 1) { // the last split of the group to finish merges them all
        consumers_sync();
        ATTN_MARK(p, layer, 4);
        if (t == 0)
            *s.last = vk_atom_add_acq_rel(counter(p, ticket_counter(p, layer, b, g)), 1u) ==
                      (unsigned)(n_active - 1);
        consumers_sync();
        ATTN_MARK(p, layer, 5);
        if (!*s.last) return;
        merge_group<ROWS>(p, layer, b, g, GQ, D, n_active, s.wo); // the warps' outputs are written out
    }
    ATTN_MARK(p, layer, 6);
    signal_counter(p, op_counter(layer, OP_ATTN)); // one more group's output is complete
    ATTN_MARK(p, layer, 7);
}

// The attention units of this block. A block with none goes straight on (to wait for the
// merged outputs before o); the others load their first keys, then wait for q|k|v.
template <int DPL, int ROWS>
__device__ void run_attention(const Params &p, const StepRows<ROWS> &st, int layer, int offset,
                              unsigned char *stage, const FirstKeys<DPL> &fk) {
    const int G = gridDim.x, units = attention_units(st);
    int u = first_unit(offset);
    if (u >= units) return;
    ATTN_MARK(p, layer, 0);
    wait_counter(p, OP_ATTN, op_counter(layer, OP_QKV), G);
    ATTN_MARK(p, layer, 1);
    for (bool first = true; u < units; u += G, first = false) {
        int b, g, split;
        attention_unit_of(st, u, &b, &g, &split);
        attention_unit<DPL, kAttnKB, ROWS>(p, st, layer, b, g, split, stage, first, fk);
    }
}

// ---- the kernel ----------------------------------------------------------------------------------
// SPLIT: the split consumer (its own instance, so that its registers do not press on the row
// consumer's attention state). ROWS: 1, or the batched instances' kRowsWhole and kMaxRows (p.rows
// of them; split consumer only).
template <int DPL, bool SPLIT, int ROWS>
// One block an SM: registers are given out for warps in fours, so 9 warps take what 12 would,
// at most 168 registers a thread (head_dim 128 spills ~100 bytes of attention state).
__global__ void __launch_bounds__(kThreads, 1) pdecode_kernel(const Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 // bulk copies; the launcher refuses older GPUs
    static_assert(SPLIT || ROWS == 1, "the batched instance sums on the tensor cores");
    typedef Split<ROWS> S;
    constexpr int kPages = S::kPages;
    extern __shared__ __align__(128) unsigned char smem[];
    unsigned char *ring = smem, *stage = smem + (size_t)kPages * kPageBytes;
    __shared__ __align__(8) uint64_t full[kPages], empty[kPages];
    // the split consumer's unit sums: written (unit_bar) and added up (slot_free)
    __shared__ __align__(8) uint64_t unit_bar[S::kSlots], slot_free[S::kSlots];
    __shared__ float red[kConsumerWarps * ROWS];
    __shared__ StepRows<ROWS> st;
    // a chunked projection's sums of the block's units over its chunks so far (run_projection_split)
    __shared__ float chunk_acc[chunk_cols<ROWS>() ? kChunkUnits * ROWS * kUnitRows : 1];
    // the batched instances' residuals of the first units of an ADD projection (ResidPrefetch)
    __shared__ float resid_s[ROWS > 1 ? kPrefUnits * ROWS * kUnitRows : 1];
    __shared__ int s_last;
    if (threadIdx.x == 0) {
        for (int i = 0; i < kPages; i++) {
            vk_mbar_init(vk_smem_u32(&full[i]), 1);
            // every consumer warp reads every page and arrives
            vk_mbar_init(vk_smem_u32(&empty[i]), p.handover ? kConsumers : kConsumerWarps);
        }
        if (SPLIT)
            for (int i = 0; i < S::kSlots; i++) {
                // lanes (r, 0) a warp (one row: the pairs), or lanes (b, t) of each row b
                vk_mbar_init(vk_smem_u32(&unit_bar[i]), ROWS == 1 ? kConsumerWarps * kUnitRows
                                                                  : kConsumerWarps * 4 * launch_rows<ROWS>(p));
                vk_mbar_init(vk_smem_u32(&slot_free[i]), kUnitRows * launch_rows<ROWS>(p));        // the adder's lanes
            }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        // the rows' step, and their attention units: kMaxSplits shared by the rows
        const int max_splits = min(p.max_splits, kMaxSplits / launch_rows<ROWS>(p));
        int before = 0;
        for (int b = 0; b < ROWS; b++) {
            st.units_before[b] = before;
            st.pos[b] = st.len[b] = st.slot[b] = 0, st.chunk[b] = st.n_active[b] = 1;
            if (b >= launch_rows<ROWS>(p)) continue;
            st.pos[b] = p.pos[b], st.len[b] = p.len[b], st.slot[b] = p.slot[b];
            split_plan(st.len[b], max_splits, &st.chunk[b], &st.n_active[b]);
            before += p.kv_heads * st.n_active[b];
        }
        st.units_before[ROWS] = before;
    }
    for (int i = threadIdx.x; i < launch_rows<ROWS>(p) * (p.head_dim / 2); i += kThreads) {
        // RoPE of each row's position (fused.cu's rounding)
        const int b = i / (p.head_dim / 2), d = i % (p.head_dim / 2);
        float sn, cs;
        sincosf((float)p.pos[b] * vk_rope_inv_freq(d, p.head_dim, p.theta), &sn, &cs);
        st.cs[b][d] = vk_round(cs), st.sn[b][d] = vk_round(sn);
    }
    __syncthreads();
    if (threadIdx.x >= kConsumers) {
        producer<ROWS>(p, ring, full, empty);
        return;
    }
    const int G = gridDim.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    uint32_t page = 0, unit_ord = 0;
    int offset = 0;
    FirstKeys<DPL> first_keys;
    for (int step = 0; step < n_steps(p); step++) {
        const int layer = step / kOpsPerLayer;
        const bool last_step = step == n_steps(p) - 1;
        const int op = last_step ? OP_LM : step % kOpsPerLayer;
        // the attention's first keys: table entries before the wait, rows after the staging (the
        // attention of this layer runs at offset + q|k|v's units)
        if (op == OP_QKV)
            begin_keys<DPL, ROWS>(p, st, (int)((offset + (p.heads + 2 * p.kv_heads) * p.head_dim / kUnitRows) % G),
                                  first_keys);
        // what this op waits for: the op before it (QKV of layer 0: nothing in this launch)
        if (op == OP_QKV && layer > 0) wait_counter(p, op, op_counter(layer - 1, OP_DOWN), G);
        if (op == OP_O) wait_counter(p, op, op_counter(layer, OP_ATTN), (unsigned)(p.kv_heads * launch_rows<ROWS>(p)));
        if (op == OP_GU) wait_counter(p, op, op_counter(layer, OP_O), G);
        if (op == OP_DOWN) wait_counter(p, op, op_counter(layer, OP_GU), G);
        if (op == OP_LM && p.n_layers > 0) wait_counter(p, op, op_counter(p.n_layers - 1, OP_DOWN), G);
        if (p.stamps && threadIdx.x == 0) p.stamps[((size_t)blockIdx.x * n_steps(p) + step) * 2] = vk_global_ns();
        if (op == OP_ATTN) {
            run_attention<DPL, ROWS>(p, st, layer, offset, stage, first_keys); // blocks without units go on
            if (p.stamps && threadIdx.x == 0) p.stamps[((size_t)blockIdx.x * n_steps(p) + step) * 2 + 1] = vk_global_ns();
            continue;
        }
        const Proj q = proj_of<ROWS>(p, step);
        bf16 *xs = reinterpret_cast<bf16 *>(stage);
        if constexpr (SPLIT) {
            // lane 8k + r of warp w: row r of the block's unit w + 8k (k < 4), whose sums warp w adds up
            const RowPrefetch pre = prefetch_row<ROWS>(q, offset, warp + (lane >> 3) * kConsumerWarps, lane & 7, ROWS == 1);
            float *partials = reinterpret_cast<float *>(stage + S::kPartialsAt);
            // the products of columns lo .. hi - 1 of the staged input `in` (bf16 values, or FP8's codes)
            auto project = [&](int lo, int hi, const void *in) {
                if (q.w_scale)
                    run_projection_split<true, ROWS>(p, q, offset, lo, hi, in, st.sx, pre, resid_s, ring, full,
                                                     empty, partials, chunk_acc, unit_bar, slot_free, page, unit_ord);
                else
                    run_projection_split<false, ROWS>(p, q, offset, lo, hi, in, st.sx, pre, resid_s, ring, full,
                                                      empty, partials, chunk_acc, unit_bar, slot_free, page, unit_ord);
            };
            if constexpr (ROWS == 1) {
                unsigned char *codes = stage + S::kCodesAt;
                stage_input(p, q, xs, red, &st.sx[0], codes);
                if (op == OP_QKV) fetch_keys<DPL, ROWS>(p, st, layer, first_keys);
                project(0, q.k, q.w_scale ? (const void *)codes : xs);
            } else {
                const ResidPrefetch<ROWS> pre_resid = prefetch_resid<ROWS>(p, q, offset);
                // the input's chunks (one, the whole K, but in the 8-row instance's o and down)
                for (int lo = 0, hi; lo < q.k; lo = hi) {
                    hi = chunk_end<ROWS>(q.k, lo);
                    if (lo > 0) consumers_sync(); // every warp is done with the chunk before
                    // FP8: the codes in place of the values
                    stage_rows<ROWS>(p, q, lo, hi, xs, red, st.sx, pre_resid, resid_s);
                    if (op == OP_QKV && lo == 0) fetch_keys<DPL, ROWS>(p, st, layer, first_keys);
                    project(lo, hi, xs);
                }
            }
        } else {
            // lane j of warp w: row w of the block's j-th unit (before staging: its round trip overlaps)
            const RowPrefetch pre = prefetch_row<ROWS>(q, offset, lane, warp);
            stage_input(p, q, xs, red, &st.sx[0], nullptr);
            if (op == OP_QKV) fetch_keys<DPL, ROWS>(p, st, layer, first_keys); // table entries in by now
            if (q.w_scale)
                run_projection<true>(p, q, offset, xs, st.sx[0], pre.resid, pre.wscale, ring, full, empty, page);
            else
                run_projection<false>(p, q, offset, xs, 0.0f, pre.resid, pre.wscale, ring, full, empty, page);
        }
        offset = (int)((offset + q.n / kUnitRows) % G);
        if (p.stamps && threadIdx.x == 0) p.stamps[((size_t)blockIdx.x * n_steps(p) + step) * 2 + 1] = vk_global_ns();
        if (op != OP_LM) {
            signal_counter(p, op_counter(layer, op));
            continue;
        }
        // the end of the step: the last block to get here resets every counter for the next
        consumers_sync();
        if (threadIdx.x == 0)
            s_last = vk_atom_add_acq_rel(counter(p, lm_counter(p)), 1u) == (unsigned)(G - 1);
        consumers_sync();
        if (s_last) {
            for (int i = threadIdx.x; i < p.n_counters; i += kConsumers) *counter(p, i) = 0u;
            if constexpr (ROWS > 1) // the FP8 inputs' maxima (amax_slot)
                for (int i = threadIdx.x; i < p.n_layers * kAmaxInputs * kMaxRows; i += kConsumers)
                    p.amax[(size_t)i * kCounterStride] = 0u;
        }
    }
#endif
}

// ---- host side -------------------------------------------------------------------------------------
// The workspace: the counters, then each buffer for kMaxRows rows, whatever a launch's rows, so
// that one workspace, zeroed once, serves launches of any rows (the counters sit at the same
// places and the last block of a launch zeroes all of them).
struct Layout {
    size_t counters, xa, xb, qkv, attn, gu, part_o, part_ml, amax, total;
    int n_counters;
};

size_t align256(size_t x) { return (x + 255) / 256 * 256; }

Layout layout_of(const vox_k_pdecode_args *a) {
    Layout l;
    const int QD = a->heads * a->head_dim, KD = a->kv_heads * a->head_dim;
    const size_t R = kMaxRows;
    l.n_counters = a->n_layers * (kOpsPerLayer + kMaxRows * a->kv_heads) + 1;
    size_t at = 0;
    l.counters = at, at += align256((size_t)l.n_counters * kCounterStride * sizeof(unsigned));
    l.xa = at, at += align256(R * a->hidden * 2);
    l.xb = at, at += align256(R * a->hidden * 2);
    l.qkv = at, at += align256(R * (QD + 2 * KD) * 2);
    l.attn = at, at += align256(R * QD * 2);
    l.gu = at, at += align256(R * a->ffn * 4);
    l.part_o = at, at += align256(R * a->heads * kMaxSplits * a->head_dim * sizeof(float));
    l.part_ml = at, at += align256(R * a->heads * kMaxSplits * 2 * sizeof(float));
    // the batched instances' FP8 input maxima (amax_slot), after the rest so that nothing moves
    l.amax = at, at += align256((size_t)a->n_layers * 2 * R * kCounterStride * sizeof(unsigned));
    l.total = at;
    return l;
}

int rows_of(const vox_k_pdecode_args *a) { return a->rows > 1 ? a->rows : 1; }

int device_ok(int rows) {
    static std::atomic<int> optin_cache[64];
    const int optin = vk_device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, optin_cache);
    const size_t bytes = rows > kRowsWhole ? Smem<kMaxRows>::kBytes
                         : rows > 1        ? Smem<kRowsWhole>::kBytes
                                           : Smem<1>::kBytes;
    // bulk copies and mbarrier tx counts need sm_90; the ring needs its shared memory, and the
    // static variables theirs (~1 KB; the batched instances' rows ~3.5 and ~9 KB)
    const size_t statics = rows > kRowsWhole ? 10240 : rows > 1 ? 4096 : 1024;
    return vk_compute_capability() >= 90 && optin >= 0 && (size_t)optin >= bytes + statics;
}


template <int DPL, bool SPLIT, int ROWS> void launch(const Params &p, cudaStream_t stream) {
    auto kernel = pdecode_kernel<DPL, SPLIT, ROWS>;
    constexpr int kBytes = Smem<ROWS>::kBytes;
    static std::atomic<uint64_t> smem_set{0};
    vk_ensure_smem(kernel, kBytes, smem_set);
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    // co-resident or refused: the blocks wait for each other
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)sms);
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = kBytes;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    cudaLaunchKernelEx(&cfg, kernel, p);
}

} // namespace

// Whether every projection's input (K values: hidden, heads x head_dim, ffn) is whole 16-byte
// vectors of its weight rows (FP8: 16 codes) and its `rows` staged bf16 rows (of at most `chunk`
// columns where chunk > 0), `pad` elements apart beyond that, fit in the first `bytes` of the
// stage: the whole stage, or below the split consumer's partial sums.
static bool staged_inputs_fit(const vox_k_pdecode_args *a, int rows, int pad, size_t bytes, int chunk = 0) {
    const int kvec = a->fp8 ? 16 : 8;
    for (int k : {a->hidden, a->heads * a->head_dim, a->ffn}) {
        const int w = chunk && k > chunk ? chunk : k;
        if (k % kvec || (size_t)rows * (w + pad) * 2 > bytes) return false;
    }
    return true;
}

// Whether the batched instance of `ROWS` rows takes the shape: its staged inputs fit below its
// partial sums, every K at most kMaxRowsK, and, where inputs are staged in chunks, no normalised
// input chunked (q|k|v's, gate|up's and the lm_head's K: hidden) and no block dealt more units of a
// chunked projection (o, down: hidden / 8 units) than chunk_acc holds.
template <int ROWS> static bool batched_takes(const vox_k_pdecode_args *a) {
    typedef Split<ROWS> S;
    const int QD = a->heads * a->head_dim;
    if (!staged_inputs_fit(a, ROWS, S::kRowPad, S::kPartialsAt, chunk_cols<ROWS>()) ||
        a->hidden > kMaxRowsK || QD > kMaxRowsK || a->ffn > kMaxRowsK)
        return false;
    if (!chunk_cols<ROWS>()) return true;
    if (a->hidden > chunk_cols<ROWS>()) return false;
    if (QD <= chunk_cols<ROWS>() && a->ffn <= chunk_cols<ROWS>()) return true;
    const int sms = vk_sm_count(); // the grid: a block an SM
    return (a->hidden / kUnitRows + sms - 1) / sms <= kChunkUnits;
}

extern "C" int vox_k_pdecode_supported(const vox_k_pdecode_args *a) {
    if (!a || a->n_layers < 0 || a->n_layers > VOX_K_PDECODE_MAX_LAYERS || a->hidden <= 0 || a->heads <= 0 || a->kv_heads <= 0 ||
        a->heads % a->kv_heads || a->heads / a->kv_heads > kMaxGroup || a->ffn <= 0 || a->vocab <= 0 ||
        a->rows < 0 || a->rows > kMaxRows)
        return 0;
    const int rows = rows_of(a);
    const int D = a->head_dim, QD = a->heads * D, KD = a->kv_heads * D;
    if (D != 32 && D != 64 && D != 128) return 0;
    const size_t stage = rows > kRowsWhole ? Split<kMaxRows>::kStageBytes
                         : rows > 1        ? Split<kRowsWhole>::kStageBytes
                                           : Split<1>::kStageBytes;
    if (AttnSmem::bytes(a->heads / a->kv_heads, D) > stage) return 0;
    // whole units of 8 rows; rows of whole 16-byte vectors; staged inputs fit
    const int64_t ns[] = {QD + 2 * KD, a->hidden, 2 * (int64_t)a->ffn, a->hidden, a->vocab};
    for (int64_t n : ns)
        if (n % kUnitRows) return 0;
    if (rows == 1 && !staged_inputs_fit(a, 1, 0, Split<1>::kStageBytes)) return 0;
    if (rows > 1 && rows <= kRowsWhole && !batched_takes<kRowsWhole>(a)) return 0;
    if (rows > kRowsWhole && !batched_takes<kMaxRows>(a)) return 0;
    if (a->block_size <= 0 || (rows > 1 && a->table_width <= 0)) return 0;
    return device_ok(rows);
}

extern "C" int vox_k_pdecode_inflight_env(void) {
    const char *e = getenv("VOX_PDECODE_INFLIGHT");
    return e && *e && atoi(e) >= 0 ? atoi(e) : -1;
}

extern "C" size_t vox_k_pdecode_workspace_bytes(const vox_k_pdecode_args *a) { return layout_of(a).total; }

extern "C" int vox_k_pdecode(const vox_k_pdecode_args *a, cudaStream_t stream) {
    if (!vox_k_pdecode_supported(a) || !a->workspace || !a->x || !a->logits || !a->lm_head ||
        !a->final_norm || !a->pos || !a->slot || !a->len || !a->table || (a->n_layers && !a->layers))
        return 0;
    const Layout l = layout_of(a);
    unsigned char *ws = (unsigned char *)a->workspace;
    Params p = {};
    for (int i = 0; i < a->n_layers; i++) p.layers[i] = a->layers[i];
    p.n_layers = a->n_layers, p.hidden = a->hidden, p.heads = a->heads, p.kv_heads = a->kv_heads;
    p.head_dim = a->head_dim, p.ffn = a->ffn, p.vocab = a->vocab;
    p.eps = a->eps, p.scale_log2 = a->attn_scale * 1.4426950408889634f, p.theta = a->theta;
    p.rows = rows_of(a);
    p.x_in = (const bf16 *)a->x, p.final_norm = (const bf16 *)a->final_norm;
    p.lm_head = (const bf16 *)a->lm_head, p.logits = (bf16 *)a->logits;
    p.pos = a->pos, p.slot = a->slot, p.len = a->len, p.table = a->table, p.block_size = a->block_size;
    p.table_width = a->table_width;
    p.counters = (unsigned *)(ws + l.counters), p.n_counters = l.n_counters;
    p.xa = (bf16 *)(ws + l.xa), p.xb = (bf16 *)(ws + l.xb), p.qkv = (bf16 *)(ws + l.qkv);
    p.attn = (bf16 *)(ws + l.attn), p.gu = (bf16 *)(ws + l.gu);
    p.part_o = (float *)(ws + l.part_o), p.part_ml = (float *)(ws + l.part_ml);
    p.amax = (unsigned *)(ws + l.amax);
    p.stamps = (unsigned long long *)a->stamps;
    // read once (C++ initialises function statics once, also when engines on two devices
    // launch from their own threads at the same time)
    static const int experiment = [] {
        const char *e = getenv("VOX_PDECODE_EXPERIMENT");
        return !e ? 0 : strcmp(e, "nocompute") == 0 ? 1 : strcmp(e, "nowait") == 0 ? 2
                          : strcmp(e, "nofence") == 0 ? 3 : strcmp(e, "nowait-partial") == 0 ? 4
                          : strcmp(e, "nowait-norm") == 0 ? 5 : strcmp(e, "nowait-attn") == 0 ? 6 : 0;
    }();
    static const double watchdog_s = [] {
        const char *e = getenv("VOX_PDECODE_WATCHDOG_S");
        return e && atof(e) > 0 ? atof(e) : kWatchdogSeconds;
    }();
    static const int max_splits = [] {
        const char *e = getenv("VOX_PDECODE_SPLITS");
        const int n = e ? atoi(e) : 0;
        return n >= 1 && n <= kMaxSplits ? n : kMaxSplits;
    }();
    static const int handover = [] {
        const char *e = getenv("VOX_PDECODE_HANDOVER");
        return e && strcmp(e, "lane") == 0 ? 0 : 1;
    }();
    static const int inflight_env = vox_k_pdecode_inflight_env();
    static const int consumer = [] {
        const char *e = getenv("VOX_PDECODE_CONSUMER");
        return e && strcmp(e, "row") == 0 ? CONSUMER_ROW : CONSUMER_SPLIT;
    }();
    p.consumer = a->consumer == CONSUMER_ROW || a->consumer == CONSUMER_SPLIT ? a->consumer : consumer;
    // the split consumer's partial sums sit above the staged input (every K at most 8192); the
    // batched instance has only the split consumer
    if (p.consumer == CONSUMER_SPLIT && !staged_inputs_fit(a, 1, 0, Split<1>::kPartialsAt)) p.consumer = CONSUMER_ROW;
    if (p.rows > 1) p.consumer = CONSUMER_SPLIT;
    p.experiment = experiment;
    p.inflight = a->inflight > 0 ? a->inflight : inflight_env >= 0 ? inflight_env : kInflightPages;
    // VOX_PDECODE_INFLIGHT_HEAD=N,K: an op's first K pages at most N in flight; 0: no head
    static const std::pair<int, int> head = [] {
        const char *e = getenv("VOX_PDECODE_INFLIGHT_HEAD");
        int n = -1, k = -1;
        const int got = e ? sscanf(e, "%d,%d", &n, &k) : 0;
        if (got >= 1 && n == 0) return std::make_pair(0, 0);
        if (got != 2 || n < 0 || k < 0) return std::make_pair(kHeadInflight, -1);
        return std::make_pair(n, k);
    }();
    p.head_inflight = head.first, p.head_pages = head.second;
    p.handover = handover;
    p.max_splits = max_splits;
    p.watchdog_ns = (long long)(watchdog_s * 1e9);
    // the instance: 1 row (split or row consumer), 2 to 4 rows, 5 to 8 rows
    const int kind = p.rows > kRowsWhole ? 3 : p.rows > 1 ? 2 : p.consumer == CONSUMER_SPLIT ? 1 : 0;
    switch (a->head_dim * 4 + kind) {
    case 32 * 4 + 0: launch<1, false, 1>(p, stream); break;
    case 32 * 4 + 1: launch<1, true, 1>(p, stream); break;
    case 32 * 4 + 2: launch<1, true, kRowsWhole>(p, stream); break;
    case 32 * 4 + 3: launch<1, true, kMaxRows>(p, stream); break;
    case 64 * 4 + 0: launch<2, false, 1>(p, stream); break;
    case 64 * 4 + 1: launch<2, true, 1>(p, stream); break;
    case 64 * 4 + 2: launch<2, true, kRowsWhole>(p, stream); break;
    case 64 * 4 + 3: launch<2, true, kMaxRows>(p, stream); break;
    case 128 * 4 + 0: launch<4, false, 1>(p, stream); break;
    case 128 * 4 + 1: launch<4, true, 1>(p, stream); break;
    case 128 * 4 + 2: launch<4, true, kRowsWhole>(p, stream); break;
    default: launch<4, true, kMaxRows>(p, stream); break;
    }
    VOX_K_LAUNCH_CHECK();
    return 1;
}

// Each launch reads x and the caches below pos and writes the same logits, cache rows and (zeroed)
// workspace, so the launches here leave the step as one launch would.
extern "C" int vox_k_pdecode_tune(const vox_k_pdecode_args *a, const int *caps, int n, int rounds,
                                  float *us, cudaStream_t stream) {
    if (n < 1 || n > 16 || rounds < 1 || rounds > 16) return 0;
    vox_k_pdecode_args t = *a;
    cudaEvent_t ev[1 + 16 * 16];
    const int launches = n * rounds;
    int made = 0, best = 0;
    bool ok = true;
    while (ok && made <= launches) ok = cudaEventCreate(&ev[made]) == cudaSuccess && ++made;
    float least[16];
    for (int i = 0; i < n; i++) least[i] = INFINITY;
    // one launch untimed (the module's first use, the workspace's pages), then every cap once a
    // round, each round starting one cap later, so that no cap always follows the same one
    ok = ok && vox_k_pdecode(&t, stream) && cudaEventRecord(ev[0], stream) == cudaSuccess;
    for (int r = 0; r < rounds && ok; r++)
        for (int j = 0; j < n && ok; j++) {
            t.inflight = caps[(j + r) % n];
            ok = vox_k_pdecode(&t, stream) && cudaEventRecord(ev[1 + r * n + j], stream) == cudaSuccess;
        }
    ok = ok && cudaEventSynchronize(ev[launches]) == cudaSuccess;
    for (int r = 0; r < rounds && ok; r++)
        for (int j = 0; j < n && ok; j++) {
            float ms = 0;
            ok = cudaEventElapsedTime(&ms, ev[r * n + j], ev[1 + r * n + j]) == cudaSuccess;
            const int i = (j + r) % n;
            least[i] = fminf(least[i], ms * 1000.0f);
        }
    for (int i = 0; i < made; i++) cudaEventDestroy(ev[i]);
    if (!ok) return 0;
    for (int i = 0; i < n; i++) {
        if (us) us[i] = least[i];
        if (least[i] < least[best]) best = i;
    }
    return caps[best];
}
