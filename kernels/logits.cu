// Statistics of one row of bf16 logits: argmax (first on ties), the runner-up logit, logsumexp,
// the top-k (k <= 20) ids and logits, and the logit of a chosen id. Runs once per decoded token,
// so it is built for latency: two launches, no atomics, no host work, and as few dependent steps
// (global memory round trips, barriers, serial exp chains) as possible on the way.
//
// Pass 1, G blocks of 8 warps; block b owns a contiguous chunk of the row (2048 elements for
// V <= 2M, so G = 64 for V = 131072) and warp w a contiguous slice of it, read in tiles of 256
// (one 16-byte load per lane). Each thread keeps an online (max, sum of exp) pair; each warp
// keeps its running top-kk list, one entry per lane. The block's 8 lists are merged by warp 0
// and written with the block's (max, sumexp) to the workspace: block b's list at entries
// [b*kk, b*kk + kk) of flat arrays, so the lists of blocks lo..hi-1 are one array.
// Pass 2, one block: every load (the G (max, sumexp) pairs, each warp's share of the lists) is
// issued before any is used; each warp merges G/8 of the lists, warp 0 merges the 8 results, the
// block folds the (max, sumexp) pairs, lane 0 writes the vox_k_logits_result.
//
// Selection works on 32-bit keys: the upper half orders the bf16 value (exact: logits are bf16),
// the lower half is 0xFFFF - slot, where a candidate's slot in a tile grows with its position,
// so the largest key is the largest value and, among equal values, the lowest id (as
// torch.argmax and the CPU reference). A warp takes the top kk of a tile in kk rounds of one
// __reduce_max_sync (sm_80+) each: every lane holds its 8 candidates sorted, plus (lanes < kk)
// one entry of the running list, which has slots 0..31 since it comes from earlier positions.
// A winner's id comes from registers or shared memory, never from a second global read.
// Internally kk = max(k, 2): the runner-up is always needed for the margin.
//
// Several rows (one per sequence of a batched decode step) run in the same two launches: pass 1's
// grid has a row of blocks per logits row (blockIdx.y), pass 2 a block per row, and each row has
// its own slice of the workspace. A row's blocks do exactly what they do for a row alone, so each
// result is bit for bit that of the single-row call.
//
// On sm_90+ pass 2 is a programmatic dependent launch: pass 1 lets it start at once, and pass 2
// waits in griddepcontrol.wait, which returns when all of pass 1 has finished and its writes are
// visible, before it reads anything. Pass 2's launch latency then overlaps pass 1 instead of
// following it. Elsewhere pass 2 is an ordinary launch and both instructions are compiled out.
#include <math.h>

#include "common.cuh"
#include "kernels.h"

namespace {

constexpr int kMaxK = 20;
constexpr int kWarps = 8, kThreads = 32 * kWarps;
constexpr int kTile = 256;                     // candidates a warp takes per round of selection
constexpr int kBlockChunk = kWarps * kTile;    // 2048 elements: pass 1's unit of work
constexpr int kMaxBlocks = 1024;               // pass 1 grid cap (pass 2 reads G*kk candidates)
constexpr unsigned kFull = 0xffffffffu;

// The workspace of one row, carved for G pass-1 blocks: (max, sumexp) of block b, and its list at
// entries [b*kk, b*kk + kk) of ord (ord16 of the bf16 value) and id (< 0: empty entry). Row r's
// slice starts r * G * kBytesPerBlock bytes in.
struct Partials {
    float *max, *sumexp;
    uint32_t *ord;
    int32_t *id;
};
constexpr size_t kBytesPerBlock = 2 * sizeof(float) + kMaxK * (sizeof(uint32_t) + sizeof(int32_t));

__device__ Partials carve(void *ws, int blocks) {
    Partials p;
    p.max = (float *)ws;
    p.sumexp = p.max + blocks;
    p.ord = (uint32_t *)(p.sumexp + blocks);
    p.id = (int32_t *)(p.ord + (size_t)blocks * kMaxK);
    return p;
}

struct Plan {
    int64_t chunk; // elements a pass-1 block owns, a multiple of kBlockChunk
    int blocks;
};

Plan plan(int64_t v) {
    int64_t units = vk_ceil_div(v, kBlockChunk);
    Plan p;
    p.chunk = kBlockChunk * vk_ceil_div(units, kMaxBlocks);
    p.blocks = (int)vk_ceil_div(v, p.chunk);
    return p;
}

// ---- keys ----

// A bf16 bit pattern mapped to 16 bits whose unsigned order is the numeric order (-0 as +0).
__device__ __forceinline__ uint32_t ord16(uint32_t bits) {
    if (bits == 0x8000u) bits = 0;
    return (bits & 0x8000u) ? (~bits & 0xffffu) : (bits | 0x8000u);
}
__device__ __forceinline__ float ord16_value(uint32_t ord) {
    uint32_t bits = (ord & 0x8000u) ? (ord & 0x7fffu) : (~ord & 0xffffu);
    return __uint_as_float(bits << 16);
}
__device__ __forceinline__ uint32_t make_key(uint32_t ord, int slot) {
    return (ord << 16) | (0xffffu - (uint32_t)slot);
}
__device__ __forceinline__ int key_slot(uint32_t key) { return (int)(0xffffu - (key & 0xffffu)); }

__device__ __forceinline__ void cas_desc(uint32_t &a, uint32_t &b) {
    uint32_t hi = max(a, b), lo = min(a, b);
    a = hi, b = lo;
}

// The warp's top kk of {this lane's 8 keys} U {the running list: run_key in lanes < kk}, keys
// unique unless 0 (empty). Returns, in lane r < kk, the key of rank r (0 when fewer exist).
__device__ __forceinline__ uint32_t warp_select(uint32_t (&keys)[8], uint32_t run_key, int kk) {
    const int lane = threadIdx.x & 31;
    uint32_t l[9];
#pragma unroll
    for (int j = 0; j < 8; j++) l[j] = keys[j];
#pragma unroll
    for (int round = 0; round < 8; round++) // odd-even transposition sort, descending
#pragma unroll
        for (int j = round & 1; j + 1 < 8; j += 2) cas_desc(l[j], l[j + 1]);
    l[8] = run_key;
#pragma unroll
    for (int j = 7; j >= 0; j--) cas_desc(l[j], l[j + 1]); // insert the running entry
    uint32_t win = 0;
    for (int r = 0; r < kk; r++) {
        const uint32_t best = __reduce_max_sync(kFull, l[0]);
        if (lane == r) win = best;
        if (l[0] == best) { // the owner pops its head
#pragma unroll
            for (int j = 0; j < 8; j++) l[j] = l[j + 1];
            l[8] = 0;
        }
    }
    return win;
}

// After warp_select on a tile: turns the winning keys into the new running list (run_key with
// slot = rank, run_id). A winner of slot < 32 comes from the running list (lane slot's run_id),
// one of slot s >= 32 is the tile's candidate s - 32, whose id is tile_id(s - 32).
template <class TileId>
__device__ __forceinline__ void take_winners(uint32_t win, int kk, uint32_t &run_key,
                                             int64_t &run_id, TileId tile_id) {
    const int lane = threadIdx.x & 31, slot = key_slot(win);
    const int64_t from_run = __shfl_sync(kFull, run_id, slot < 32 ? slot : 0);
    if (lane < kk && win != 0) {
        run_id = slot < 32 ? from_run : tile_id(slot - 32);
        run_key = make_key(win >> 16, lane);
    } else {
        run_id = -1;
        run_key = 0;
    }
}

// The top kk of the n candidates (ord[c], id[c]), c < n (id < 0: empty), in shared or global
// memory, listed so that among equal values position order is id order. Each tile's ids are
// kept in `stage` (kTile entries of this warp's shared memory), where take_winners finds them.
// Running list returned in lanes < kk.
__device__ void warp_topk_list(const uint32_t *ord, const int32_t *id, int n, int kk,
                               int32_t *stage, uint32_t &run_key, int64_t &run_id) {
    const int lane = threadIdx.x & 31;
    run_key = 0;
    run_id = -1;
    for (int first = 0; first < n; first += kTile) {
        uint32_t o[8], keys[8];
        int32_t ids[8];
#pragma unroll
        for (int j = 0; j < 8; j++) { // all loads first: one round trip for the tile
            const int c = first + lane * 8 + j;
            o[j] = c < n ? ord[c] : 0;
            ids[j] = c < n ? id[c] : -1;
        }
#pragma unroll
        for (int j = 0; j < 8; j++) {
            keys[j] = ids[j] >= 0 ? make_key(o[j], 32 + lane * 8 + j) : 0;
            stage[lane * 8 + j] = ids[j];
        }
        __syncwarp();
        const uint32_t win = warp_select(keys, run_key, kk);
        take_winners(win, kk, run_key, run_id, [&](int c) { return (int64_t)stage[c]; });
        __syncwarp(); // the next tile overwrites stage
    }
}

// ---- (max, sum of exp(x - max)) pairs ----

__device__ __forceinline__ void lse_add(float &m, float &s, float m2, float s2) {
    const float mn = fmaxf(m, m2);
    if (mn == -INFINITY) return; // both empty (or all -inf)
    s = s * expf(m - mn) + s2 * expf(m2 - mn);
    m = mn;
}

// Block-wide (max, sumexp), returned to every thread: the block's max first (no exp), then one
// exp a thread to rescale its sum to it, then a plain sum. Two barriers: every thread calls it.
__device__ __forceinline__ void lse_block(float &m, float &s, float *sm, float *ss) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float wm = vk_warp_max(m);
    if (lane == 0) sm[warp] = wm;
    __syncthreads();
    float bm = sm[0];
    for (int w = 1; w < kWarps; w++) bm = fmaxf(bm, sm[w]);
    // s > 0 exactly when m is finite (a tile's own max contributes exp(0) = 1)
    const float ws = vk_warp_sum(s > 0.0f ? s * expf(m - bm) : 0.0f);
    if (lane == 0) ss[warp] = ws;
    __syncthreads();
    float bs = 0.0f;
    for (int w = 0; w < kWarps; w++) bs += ss[w]; // same order in every thread
    m = bm, s = bs;
}

// ---- pass 1 ----

// grid (G, rows): block (b, r) takes chunk b of row r.
__global__ void __launch_bounds__(kThreads)
logits_pass1_kernel(const uint16_t *__restrict__ logits_rows, int64_t v, int64_t chunk, int kk,
                    void *workspace) {
    __shared__ uint32_t s_ord[kWarps * kMaxK];
    __shared__ int32_t s_id[kWarps * kMaxK];
    __shared__ int32_t s_stage[kTile];
    __shared__ float s_m[kWarps], s_s[kWarps];
    vk_pdl_trigger(); // pass 2 may start now: it waits for this grid before any read
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint16_t *logits = logits_rows + (int64_t)blockIdx.y * v;
    const Partials parts =
        carve((char *)workspace + (size_t)blockIdx.y * gridDim.x * kBytesPerBlock, gridDim.x);
    const bool aligned = ((uintptr_t)logits & 15u) == 0;
    const int64_t slice = chunk / kWarps;
    const int64_t begin = blockIdx.x * chunk + warp * slice;
    const int64_t end = min(begin + slice, v);

    float m = -INFINITY, s = 0.0f;
    uint32_t run_key = 0;
    int64_t run_id = -1;
    for (int64_t tile = begin; tile < end; tile += kTile) {
        const int64_t e0 = tile + lane * 8;
        uint32_t bits[8];
        if (aligned && e0 + 8 <= v) {
            const uint4 u = *(const uint4 *)(logits + e0);
            const uint32_t w4[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
            for (int j = 0; j < 4; j++) bits[2 * j] = w4[j] & 0xffffu, bits[2 * j + 1] = w4[j] >> 16;
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++) bits[j] = e0 + j < v ? logits[e0 + j] : 0xffffu;
        }
        uint32_t keys[8];
        float tm = -INFINITY, x[8];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const bool in = e0 + j < v;
            x[j] = in ? __uint_as_float(bits[j] << 16) : -INFINITY;
            keys[j] = in ? make_key(ord16(bits[j]), 32 + lane * 8 + j) : 0;
            tm = fmaxf(tm, x[j]);
        }
        if (tm != -INFINITY) {
            float ts = 0.0f;
#pragma unroll
            for (int j = 0; j < 8; j++) ts += expf(x[j] - tm);
            lse_add(m, s, tm, ts);
        }
        const uint32_t win = warp_select(keys, run_key, kk);
        take_winners(win, kk, run_key, run_id, [&](int c) { return tile + c; });
    }

    // The 8 warp lists, in warp order (= id order), merged by warp 0 after the barriers of
    // lse_block.
    if (lane < kk) {
        s_ord[warp * kk + lane] = run_key >> 16;
        s_id[warp * kk + lane] = (int32_t)run_id;
    }
    lse_block(m, s, s_m, s_s);
    if (warp == 0) {
        warp_topk_list(s_ord, s_id, kWarps * kk, kk, s_stage, run_key, run_id);
        const int64_t at = (int64_t)blockIdx.x * kk + lane;
        if (lane < kk) {
            parts.ord[at] = run_key >> 16;
            parts.id[at] = (int32_t)run_id;
        }
        if (lane == 0) parts.max[blockIdx.x] = m, parts.sumexp[blockIdx.x] = s;
    }
}

// ---- pass 2 ----

// grid (rows): block r finishes row r, whose chosen id is chosen_dev[r] (chosen_dev NULL: chosen).
__global__ void __launch_bounds__(kThreads)
logits_pass2_kernel(vox_k_logits_result *__restrict__ out_rows,
                    const uint16_t *__restrict__ logits_rows, int64_t v,
                    const int32_t *__restrict__ chosen_dev, int32_t chosen, int k, int kk,
                    void *workspace, int n_parts) {
    __shared__ uint32_t s_ord[kWarps * kMaxK];
    __shared__ int32_t s_id[kWarps * kMaxK];
    __shared__ int32_t s_stage[kWarps][kTile];
    __shared__ float s_m[kWarps], s_s[kWarps];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    vox_k_logits_result *out = out_rows + blockIdx.x;
    const uint16_t *logits = logits_rows + (int64_t)blockIdx.x * v;
    const Partials parts =
        carve((char *)workspace + (size_t)blockIdx.x * n_parts * kBytesPerBlock, n_parts);
    vk_pdl_wait(); // all of pass 1 done and visible (a no-op after an ordinary launch)
    if (chosen_dev) chosen = chosen_dev[blockIdx.x];

    // Loads that nothing here depends on, issued first so that they are in flight with the
    // lists' loads: the chosen logit, and this thread's first (max, sumexp) pair.
    const float chosen_logit =
        chosen >= 0 && chosen < v ? __uint_as_float((uint32_t)logits[chosen] << 16) : NAN;
    const int t = threadIdx.x;
    float m = t < n_parts ? parts.max[t] : -INFINITY;
    float s = t < n_parts ? parts.sumexp[t] : 0.0f;

    // warp w merges the lists of parts [lo, hi): entries [lo*kk, hi*kk), one array
    const int per_warp = (n_parts + kWarps - 1) / kWarps;
    const int lo = min(warp * per_warp, n_parts), hi = min(lo + per_warp, n_parts);
    uint32_t run_key;
    int64_t run_id;
    warp_topk_list(parts.ord + (int64_t)lo * kk, parts.id + (int64_t)lo * kk, (hi - lo) * kk, kk,
                   s_stage[warp], run_key, run_id);
    if (lane < kk) {
        s_ord[warp * kk + lane] = run_key >> 16;
        s_id[warp * kk + lane] = (int32_t)run_id;
    }
    for (int i = t + kThreads; i < n_parts; i += kThreads)
        lse_add(m, s, parts.max[i], parts.sumexp[i]);
    lse_block(m, s, s_m, s_s); // also publishes s_ord / s_id to warp 0
    if (warp != 0) return;
    warp_topk_list(s_ord, s_id, kWarps * kk, kk, s_stage[0], run_key, run_id);

    const float val = run_id >= 0 ? ord16_value(run_key >> 16) : -INFINITY;
    const int32_t id = (int32_t)run_id;
    const int k_out = (int64_t)k < v ? k : (int)v;
    if (lane < kMaxK) {
        out->top_ids[lane] = lane < k_out ? id : -1;
        out->top_logits[lane] = lane < k_out ? val : -INFINITY;
    }
    const int32_t argmax = __shfl_sync(kFull, id, 0);
    const float second = __shfl_sync(kFull, val, 1);
    if (lane == 0) {
        out->argmax = argmax;
        out->max_logit = val;
        out->second_logit = second; // -inf when v == 1
        out->logsumexp = m + logf(s);
        out->chosen_logit = chosen < 0 ? val : chosen_logit; // the argmax's logit is the max
        out->k = k_out;
    }
}

} // namespace

extern "C" size_t vox_k_logits_workspace(int64_t v) {
    if (v <= 0) return 0;
    return (size_t)plan(v).blocks * kBytesPerBlock;
}

extern "C" size_t vox_k_logits_workspace_rows(int rows, int64_t v) {
    return rows <= 0 ? 0 : (size_t)rows * vox_k_logits_workspace(v);
}

namespace {

// Both passes for `rows` rows; row r's chosen id is chosen_dev[r], or `chosen` when chosen_dev is
// NULL.
void launch_stats(vox_k_logits_result *out_dev, const void *logits_bf16, int rows, int64_t v,
                  const int32_t *chosen_dev, int32_t chosen, int k, void *workspace,
                  cudaStream_t stream) {
    if (v <= 0 || rows <= 0) return;
    k = k < 0 ? 0 : k > kMaxK ? kMaxK : k;
    const int kk = k < 2 ? 2 : k;
    const Plan p = plan(v);
    logits_pass1_kernel<<<dim3((unsigned)p.blocks, (unsigned)rows), kThreads, 0, stream>>>(
        (const uint16_t *)logits_bf16, v, p.chunk, kk, workspace);
    VOX_K_LAUNCH_CHECK();
    // programmatic dependent launch (common.cuh: sm_90, unless VOX_NO_PDL); an error is left
    // for the caller's cudaGetLastError, as after <<<>>>
    vk_launch(logits_pass2_kernel, dim3((unsigned)rows), dim3(kThreads), 0, stream, out_dev,
              (const uint16_t *)logits_bf16, v, chosen_dev, chosen, k, kk, workspace, p.blocks);
    VOX_K_LAUNCH_CHECK();
}

} // namespace

extern "C" void vox_k_logits_stats(vox_k_logits_result *out_dev, const void *logits_bf16, int64_t v,
                                   int32_t chosen, int k, void *workspace, cudaStream_t stream) {
    launch_stats(out_dev, logits_bf16, 1, v, NULL, chosen, k, workspace, stream);
}

extern "C" void vox_k_logits_stats_rows(vox_k_logits_result *out_dev, const void *logits_bf16,
                                        int rows, int64_t v, const int32_t *chosen_dev, int k,
                                        void *workspace, cudaStream_t stream) {
    launch_stats(out_dev, logits_bf16, rows, v, chosen_dev, -1, k, workspace, stream);
}
