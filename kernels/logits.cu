// Statistics of one row of bf16 logits: argmax (first on ties), the runner-up logit, logsumexp,
// the top-k (k <= 20) ids and logits, and the logit of a chosen id. Runs once per decoded token,
// so it is built for latency: two launches, no atomics, no host work.
//
// Pass 1, G blocks of 8 warps; block b owns a contiguous chunk of the row (2048 elements for
// V <= 2M, so G = 64 for V = 131072) and warp w a contiguous slice of it, read in tiles of 256
// (one 16-byte load per lane). Each thread keeps an online (max, sum of exp) pair; each warp
// keeps its running top-kk list, one entry per lane. The block's 8 lists are merged by warp 0
// and written with the block's (max, sumexp) to the workspace.
// Pass 2, one block: each warp merges G/8 of the block lists, warp 0 merges the 8 results, all
// threads fold the (max, sumexp) pairs, lane 0 writes the vox_k_logits_result.
//
// Selection works on 32-bit keys: the upper half orders the bf16 value (exact: logits are bf16),
// the lower half is 0xFFFF - slot, where a candidate's slot in a tile grows with its position,
// so the largest key is the largest value and, among equal values, the lowest id (as
// torch.argmax and the CPU reference). A warp takes the top kk of a tile in kk rounds of one
// __reduce_max_sync (sm_80+) each: every lane holds its 8 candidates sorted, plus (lanes < kk)
// one entry of the running list, which has slots 0..31 since it comes from earlier positions.
// Internally kk = max(k, 2): the runner-up is always needed for the margin.
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

// One block's result in the workspace. vals hold bf16 values; ids < 0 mark empty entries.
struct Partial {
    float max, sumexp;
    float vals[kMaxK];
    int32_t ids[kMaxK];
};

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
// ord16 of a float that holds a bf16 value exactly
__device__ __forceinline__ uint32_t float_ord16(float f) { return ord16(__float_as_uint(f) >> 16); }

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

// After warp_select on a tile whose slot s >= 32 is candidate (tile_first + s - 32): turns the
// winning keys into the new running list (run_key with slot = rank, run_id). id_of(c) gives the
// id of candidate c.
template <class IdOf>
__device__ __forceinline__ void take_winners(uint32_t win, int kk, int64_t tile_first,
                                             uint32_t &run_key, int64_t &run_id, IdOf id_of) {
    const int lane = threadIdx.x & 31, slot = key_slot(win);
    const int64_t from_run = __shfl_sync(kFull, run_id, slot < 32 ? slot : 0);
    if (lane < kk && win != 0) {
        run_id = slot < 32 ? from_run : id_of(tile_first + slot - 32);
        run_key = make_key(win >> 16, lane);
    } else {
        run_id = -1;
        run_key = 0;
    }
}

// The top kk of n candidates c < n, given as ord_of(c) / id_of(c) (id < 0: empty), listed so
// that among equal values position order is id order. Running list returned in lanes < kk.
template <class OrdOf, class IdOf>
__device__ void warp_topk_list(int64_t n, int kk, OrdOf ord_of, IdOf id_of, uint32_t &run_key,
                               int64_t &run_id) {
    const int lane = threadIdx.x & 31;
    run_key = 0;
    run_id = -1;
    for (int64_t first = 0; first < n; first += kTile) {
        uint32_t keys[8];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int64_t c = first + lane * 8 + j;
            keys[j] = (c < n && id_of(c) >= 0) ? make_key(ord_of(c), 32 + lane * 8 + j) : 0;
        }
        const uint32_t win = warp_select(keys, run_key, kk);
        take_winners(win, kk, first, run_key, run_id, id_of);
    }
}

// ---- (max, sum of exp(x - max)) pairs ----

__device__ __forceinline__ void lse_add(float &m, float &s, float m2, float s2) {
    const float mn = fmaxf(m, m2);
    if (mn == -INFINITY) return; // both empty (or all -inf)
    s = s * expf(m - mn) + s2 * expf(m2 - mn);
    m = mn;
}

__device__ __forceinline__ void lse_warp(float &m, float &s) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(kFull, m, o), s2 = __shfl_xor_sync(kFull, s, o);
        lse_add(m, s, m2, s2);
    }
}

// Block-wide (max, sumexp), valid in thread 0.
__device__ __forceinline__ void lse_block(float &m, float &s, float *sm, float *ss) {
    lse_warp(m, s);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sm[warp] = m, ss[warp] = s;
    __syncthreads();
    if (threadIdx.x == 0)
        for (int w = 1; w < kWarps; w++) lse_add(m, s, sm[w], ss[w]);
}

// ---- pass 1 ----

__global__ void __launch_bounds__(kThreads)
logits_pass1_kernel(const uint16_t *__restrict__ logits, int64_t v, int64_t chunk, int kk,
                    Partial *__restrict__ parts) {
    __shared__ uint32_t s_ord[kWarps * kMaxK];
    __shared__ int64_t s_id[kWarps * kMaxK];
    __shared__ float s_m[kWarps], s_s[kWarps];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
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
        take_winners(win, kk, tile, run_key, run_id, [](int64_t c) { return c; });
    }

    // The 8 warp lists, in warp order (= id order), merged by warp 0.
    if (lane < kk) {
        s_ord[warp * kk + lane] = run_key >> 16;
        s_id[warp * kk + lane] = run_id;
    }
    lse_block(m, s, s_m, s_s);
    __syncthreads();
    if (warp == 0) {
        warp_topk_list(
            (int64_t)kWarps * kk, kk, [&](int64_t c) { return s_ord[c]; },
            [&](int64_t c) { return s_id[c]; }, run_key, run_id);
        Partial *p = parts + blockIdx.x;
        if (lane < kk) {
            p->vals[lane] = run_id >= 0 ? ord16_value(run_key >> 16) : -INFINITY;
            p->ids[lane] = (int32_t)run_id;
        }
        if (lane == 0) p->max = m, p->sumexp = s;
    }
}

// ---- pass 2 ----

__global__ void __launch_bounds__(kThreads)
logits_pass2_kernel(vox_k_logits_result *__restrict__ out, const uint16_t *__restrict__ logits,
                    int64_t v, int32_t chosen, int k, int kk, const Partial *__restrict__ parts,
                    int n_parts) {
    __shared__ uint32_t s_ord[kWarps * kMaxK];
    __shared__ int64_t s_id[kWarps * kMaxK];
    __shared__ float s_m[kWarps], s_s[kWarps];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

    float m = -INFINITY, s = 0.0f;
    for (int i = threadIdx.x; i < n_parts; i += kThreads) lse_add(m, s, parts[i].max, parts[i].sumexp);

    // warp w merges parts [lo, hi): candidate c is rank c % kk of part lo + c / kk
    const int per_warp = (n_parts + kWarps - 1) / kWarps;
    const int lo = min(warp * per_warp, n_parts), hi = min(lo + per_warp, n_parts);
    const Partial *pw = parts + lo;
    uint32_t run_key;
    int64_t run_id;
    warp_topk_list(
        (int64_t)(hi - lo) * kk, kk, [&](int64_t c) { return float_ord16(pw[c / kk].vals[c % kk]); },
        [&](int64_t c) { return (int64_t)pw[c / kk].ids[c % kk]; }, run_key, run_id);
    if (lane < kk) {
        s_ord[warp * kk + lane] = run_key >> 16;
        s_id[warp * kk + lane] = run_id;
    }
    lse_block(m, s, s_m, s_s);
    __syncthreads();
    if (warp != 0) return;
    warp_topk_list(
        (int64_t)kWarps * kk, kk, [&](int64_t c) { return s_ord[c]; },
        [&](int64_t c) { return s_id[c]; }, run_key, run_id);

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
        const int64_t c = chosen < 0 ? argmax : chosen;
        out->chosen_logit = c < v ? __uint_as_float((uint32_t)logits[c] << 16) : NAN;
        out->k = k_out;
    }
}

} // namespace

extern "C" size_t vox_k_logits_workspace(int64_t v) {
    if (v <= 0) return 0;
    return (size_t)plan(v).blocks * sizeof(Partial);
}

extern "C" void vox_k_logits_stats(vox_k_logits_result *out_dev, const void *logits_bf16, int64_t v,
                                   int32_t chosen, int k, void *workspace, cudaStream_t stream) {
    if (v <= 0) return;
    k = k < 0 ? 0 : k > kMaxK ? kMaxK : k;
    const int kk = k < 2 ? 2 : k;
    const Plan p = plan(v);
    Partial *parts = (Partial *)workspace;
    logits_pass1_kernel<<<p.blocks, kThreads, 0, stream>>>((const uint16_t *)logits_bf16, v, p.chunk,
                                                           kk, parts);
    VOX_K_LAUNCH_CHECK();
    logits_pass2_kernel<<<1, kThreads, 0, stream>>>(out_dev, (const uint16_t *)logits_bf16, v,
                                                    chosen, k, kk, parts, p.blocks);
    VOX_K_LAUNCH_CHECK();
}
