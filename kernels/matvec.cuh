// Decode-shaped projections: y = epilogue(prologue(x) @ W^T) for a few rows of x (m <= 4), as
// one kernel template over the weights' format: bf16 (instantiated by matvec.cu) or F8_E4M3 with
// row scales (fp8_matvec.cu). Each .cu file includes this header and instantiates its own.
//
// At m = 1 a projection is one pass over its weights (7.2 GB a decoded token in all), so what
// counts is how close each pass runs to the card's read bandwidth and how little time passes
// between one projection and the next. cuBLASLt's m = 1 kernels reach ~79% of it in a graph and
// leave the small operations between them as separate launches. This kernel:
//  1. streams the rows with persistent warps: a grid of at most what is resident, each warp
//     owning groups g, g + warps, ... of R rows, holding NCH 16-byte vectors of each row (a
//     slice of 256 * NCH columns) in registers, and issuing the next group's loads before it
//     reduces and writes the current one, so loads stay in flight across groups (one block
//     per few rows, loading, reducing and exiting together, measured slower: every launch then
//     pays a few waves' ramp and tail);
//  2. folds in what surrounds a decoder projection: the RMSNorm that forms its input (prologue,
//     once per block into shared memory) and the residual add, SwiGLU, or RoPE + KV-cache write
//     (at *pos_dev + row, or per row at row_pos / row_slot for a batch of sequences) that
//     consume its output (epilogues): five launches a layer where there were ten;
//  3. issues its first weight loads before waiting for the kernel before it (programmatic
//     dependent launch, sm_90: see vk_pdl_* in common.cuh), since weights depend on nothing,
//     and lets the next kernel launch once its own loads are all consumed.
// Measured and not kept (bench/NOTES-2026-11-30.md): letting the next kernel launch at once
// (its waiting blocks slowed this one); prefetching the next projection's first weights into
// L2 from warps with no rows left (cp.async.bulk.prefetch): no gain at 8 MB, a loss above;
// splitting K over a block's warps for the 3072-row projections: slower in the pipeline.
//
// Groups: SWIGLU pairs gate row j with up row F + j, QKV_ROPE_CACHE pairs dim i of a head with
// dim i + D/2 (rotate-half), so an epilogue finds both halves in one warp; STORE/ADD take R
// consecutive rows.
//
// Numerics: fp32 products and sums; the prologue and epilogues round exactly where the unfused
// kernels do (norm.cu's RMSNorm; RoPE and SwiGLU through the same helpers as fused.cu, in
// common.cuh; an add of the bf16 product), so the fused path equals the unfused one up to the
// order of the fp32 summation.
//
// FP8 weights (the fp8_dynamic scheme, common/fp8.h): a 16-byte vector holds 16 codes, so a
// slice is 512 * NCH columns; the codes become floats in registers (fp8.cuh). The prologue
// then also quantizes each staged input row as vox_k_fp8_quantize_rows does (same codes: the
// max is exact whatever the order) and keeps the codes' values in shared memory (bf16 holds
// them exactly); a row's sums are multiplied by s_x * s_w before the epilogue, as the CPU does.
#ifndef VOX_KERNELS_MATVEC_CUH
#define VOX_KERNELS_MATVEC_CUH

#include "common.cuh"
#include "fp8.cuh"
#include "kernels.h"

// The FP8 instantiation's entry (fp8_matvec.cu), which vox_k_matvec_variant hands F8 weights to.
extern "C" int vox_k_fp8_matvec_variant(int variant, const vox_k_matvec_args *a,
                                        cudaStream_t stream);

namespace {

// The kernel takes vox_k_matvec_args (kernels.h) by value; its pointers are bf16 matrices, but
// for w when FP8 (uint8_t codes).
static __device__ __forceinline__ const vk_bf16 *bf(const void *p) { return (const vk_bf16 *)p; }
static __device__ __forceinline__ vk_bf16 *bf(void *p) { return (vk_bf16 *)p; }

// Weights are read once a token and never fit in L2: stream them (evict-first), which keeps
// the activations and the KV cache resident instead.
__device__ __forceinline__ uint4 load_weights(const void *p) { return __ldcs((const uint4 *)p); }

// Elements of a weight vector (16 bytes).
template <bool FP8> constexpr int kVec = FP8 ? 16 : 8;

// The epilogue of row mm of x for `nr` weight rows with their finished sums: STORE/ADD write
// each row's output; SWIGLU and QKV_ROPE_CACHE take (row[0], row[1]) = (gate j, up F + j) or
// (dim i, dim i + D/2 of one head) and write the pair's output(s).
__device__ void finish_rows(const vox_k_matvec_args &p, int mm, const int64_t *row, const float *sum,
                            int nr) {
    const int e = p.epilogue;
    if (e == VOX_K_MATVEC_STORE || e == VOX_K_MATVEC_ADD) {
        for (int r = 0; r < nr; r++) {
            if (row[r] < 0) continue;
            vk_bf16 *y = bf(p.y) + (int64_t)mm * p.n + row[r];
            *y = e == VOX_K_MATVEC_STORE ? vk_bf(sum[r]) : vk_bf(vk_f(*y) + vk_round(sum[r]));
        }
        return;
    }
    if (row[0] < 0) return;
    const float a = vk_round(sum[0]), c = vk_round(sum[1]);
    if (e == VOX_K_MATVEC_SWIGLU) { // a = gate, c = up: bf16(bf16(silu(gate)) * up)
        bf(p.y)[(int64_t)mm * (p.n / 2) + row[0]] = vk_bf(vk_swiglu(a, c));
        return;
    }
    // RoPE + cache: a = dim pi of head `head`, c = dim pi + D/2 (fused.cu's rounding steps);
    // row mm at position pos, its k/v to cache row slot (row_slot set: continuous batching)
    const int d = p.head_dim, half = d / 2;
    const int64_t head = row[0] / d;
    const int pi = (int)(row[0] % d);
    const int64_t pos = p.row_slot ? (int64_t)p.row_pos[mm] : *p.pos_dev + mm;
    const int64_t slot = p.row_slot ? (int64_t)p.row_slot[mm] : pos;
    const int64_t kd = (int64_t)p.n_kv_heads * d;
    float o1 = a, o2 = c;
    vk_bf16 *dst;
    if (head < p.n_heads + p.n_kv_heads) {
        float sn, cs;
        sincosf((float)pos * vk_rope_inv_freq(pi, d, p.theta), &sn, &cs);
        vk_rope_rotate(a, c, vk_round(cs), vk_round(sn), &o1, &o2);
        dst = head < p.n_heads ? bf(p.y) + (int64_t)mm * p.n_heads * d + head * d
                               : bf(p.k_cache) + slot * kd + (head - p.n_heads) * d;
    } else {
        dst = bf(p.v_cache) + slot * kd + (head - p.n_heads - p.n_kv_heads) * d;
    }
    dst[pi] = vk_bf(o1);
    dst[pi + half] = vk_bf(o2);
}

// ---- the kernel ---------------------------------------------------------------------------
// Rows of group g (row -1: past the end).
template <int R>
__device__ __forceinline__ void group_rows(const vox_k_matvec_args &p, int64_t g, int64_t (&row)[R]) {
    if (p.epilogue == VOX_K_MATVEC_SWIGLU) {
        row[0] = g;
        row[R - 1] = p.n / 2 + g;
    } else if (p.epilogue == VOX_K_MATVEC_QKV_ROPE_CACHE) {
        const int half = p.head_dim / 2;
        row[0] = g / half * p.head_dim + g % half;
        row[R - 1] = row[0] + half;
    } else {
#pragma unroll
        for (int r = 0; r < R; r++) row[r] = g * R + r < p.n ? g * R + r : -1;
    }
}

__host__ __device__ __forceinline__ int64_t n_groups(const vox_k_matvec_args &p, int r) {
    if (p.epilogue == VOX_K_MATVEC_SWIGLU || p.epilogue == VOX_K_MATVEC_QKV_ROPE_CACHE)
        return p.n / 2;
    return (p.n + r - 1) / r;
}

// This lane's NCH vectors of each row of the group in the slice of columns from s0.
template <int R, int NCH, bool FP8>
__device__ __forceinline__ void load_warp_slice(uint4 (&wv)[R][NCH], const vox_k_matvec_args &p,
                                                const int64_t (&row)[R], int64_t s0, int lane) {
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int c = 0; c < NCH; c++) {
            const int64_t e = s0 + (int64_t)(c * 32 + lane) * kVec<FP8>;
            const int64_t at = row[r] * p.k + e;
            wv[r][c] = row[r] >= 0 && e < p.k
                           ? load_weights(FP8 ? (const void *)((const uint8_t *)p.w + at)
                                              : (const void *)(bf(p.w) + at))
                           : make_uint4(0, 0, 0, 0);
        }
}

// The block-wide sum (or max) of one value per input row, every thread getting the result:
// warp reductions into red, a barrier, then each thread folds red in the same order. Every
// thread of the block calls it; red must be free (no thread still reading it).
template <int M, int WARPS, bool MAX>
__device__ __forceinline__ void block_reduce_rows(float (&v)[M], float (&red)[WARPS][M]) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int mm = 0; mm < M; mm++) {
        const float r = MAX ? vk_warp_max(v[mm]) : vk_warp_sum(v[mm]);
        if (lane == 0) red[warp][mm] = r;
    }
    __syncthreads();
#pragma unroll
    for (int mm = 0; mm < M; mm++) {
        float t = 0.0f;
        for (int w = 0; w < WARPS; w++) t = MAX ? fmaxf(t, red[w][mm]) : t + red[w][mm];
        v[mm] = t;
    }
}

// f(mm, e, xf) for each of this thread's 8-element chunks (from column e) of each of the M rows
// of src [M][k], xf holding the chunk as floats: the threads of a block cover every column.
template <int M, int WARPS, typename F>
__device__ __forceinline__ void each_chunk(const vk_bf16 *src, int64_t k, F f) {
    for (int64_t e = (int64_t)threadIdx.x * 8; e < k; e += WARPS * 32 * 8)
#pragma unroll
        for (int mm = 0; mm < M; mm++) {
            float xf[8];
            vk_load8(src + mm * k + e, xf);
            f(mm, e, xf);
        }
}

// xs [M][k] = the input rows, RMSNorm'd (as vox_k_rms_norm rounds them) when norm_w is set;
// FP8: then quantized by the scheme, xs holding the codes' values and sx the rows' scales.
// Every thread of the block calls it; it ends with a barrier.
template <int M, int WARPS, bool FP8>
__device__ void stage_input(const vox_k_matvec_args &p, vk_bf16 *xs, float (&red)[WARPS][M],
                            float (&sx)[M]) {
    float inv[M];
#pragma unroll
    for (int mm = 0; mm < M; mm++) inv[mm] = 1.0f;
    if (p.norm_w) {
        float ss[M];
#pragma unroll
        for (int mm = 0; mm < M; mm++) ss[mm] = 0.0f;
        each_chunk<M, WARPS>(bf(p.x), p.k, [&](int mm, int64_t, float(&xf)[8]) {
#pragma unroll
            for (int j = 0; j < 8; j++) ss[mm] = fmaf(xf[j], xf[j], ss[mm]);
        });
        block_reduce_rows<M, WARPS, false>(ss, red);
#pragma unroll
        for (int mm = 0; mm < M; mm++) inv[mm] = rsqrtf(ss[mm] / (float)p.k + p.eps);
    }
    for (int64_t e = (int64_t)threadIdx.x * 8; e < p.k; e += WARPS * 32 * 8) {
        float g[8];
        if (p.norm_w) vk_load8(bf(p.norm_w) + e, g);
#pragma unroll
        for (int mm = 0; mm < M; mm++) {
            if (!p.norm_w) {
                *(uint4 *)(xs + mm * p.k + e) = *(const uint4 *)(bf(p.x) + mm * p.k + e);
                continue;
            }
            float xf[8];
            vk_load8(bf(p.x) + mm * p.k + e, xf);
#pragma unroll
            for (int j = 0; j < 8; j++) xf[j] = g[j] * vk_round(xf[j] * inv[mm]);
            vk_store8(xs + mm * p.k + e, xf); // h = bf16(w * bf16(x * inv))
        }
    }
    if constexpr (FP8) {
        // each thread reads back only what it wrote; the barrier is for `red`, still being read
        __syncthreads();
        float mx[M];
#pragma unroll
        for (int mm = 0; mm < M; mm++) mx[mm] = 0.0f;
        each_chunk<M, WARPS>(xs, p.k, [&](int mm, int64_t, float(&xf)[8]) {
#pragma unroll
            for (int j = 0; j < 8; j++) mx[mm] = fmaxf(mx[mm], fabsf(xf[j]));
        });
        block_reduce_rows<M, WARPS, true>(mx, red);
#pragma unroll
        for (int mm = 0; mm < M; mm++) sx[mm] = vk_fp8_scale(mx[mm]);
        each_chunk<M, WARPS>(xs, p.k, [&](int mm, int64_t e, float(&xf)[8]) {
#pragma unroll
            for (int j = 0; j < 8; j++) xf[j] = vk_e4m3_value(vk_fp8_quantize(xf[j], sx[mm]));
            vk_store8(xs + mm * p.k + e, xf); // exact: bf16 holds every E4M3 value
        });
    }
    __syncthreads();
}

template <int M, int R, int NCH, int WARPS, bool FP8>
__global__ void __launch_bounds__(WARPS * 32) matvec_kernel(const vox_k_matvec_args p) {
    constexpr int SLICE = NCH * 32 * kVec<FP8>;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    vk_bf16 *xs = reinterpret_cast<vk_bf16 *>(smem_raw); // [M][k]
    __shared__ float red[WARPS][M];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t groups = n_groups(p, R);
    const int64_t stride = (int64_t)gridDim.x * WARPS;
    int64_t g = (int64_t)blockIdx.x * WARPS + warp;
    int64_t row[R];
    uint4 wv[R][NCH];
    if (g < groups) {
        group_rows<R>(p, g, row);
        load_warp_slice<R, NCH, FP8>(wv, p, row, 0, lane);
    }
    vk_pdl_wait(); // x is the previous kernel's output
    float sx[M]; // FP8: the input rows' scales
    stage_input<M, WARPS, FP8>(p, xs, red, sx);

    while (g < groups) {
        float acc[M][R];
#pragma unroll
        for (int mm = 0; mm < M; mm++)
#pragma unroll
            for (int r = 0; r < R; r++) acc[mm][r] = 0.0f;
        for (int64_t s0 = 0;;) {
#pragma unroll
            for (int c = 0; c < NCH; c++) {
                const int64_t e = s0 + (int64_t)(c * 32 + lane) * kVec<FP8>;
                if (e < p.k) {
#pragma unroll
                    for (int mm = 0; mm < M; mm++) {
                        float xf[kVec<FP8>];
                        vk_load8(xs + mm * p.k + e, xf);
                        if constexpr (FP8) vk_load8(xs + mm * p.k + e + 8, xf + 8);
#pragma unroll
                        for (int r = 0; r < R; r++) {
                            if constexpr (FP8) acc[mm][r] += vk_dot16_e4m3(wv[r][c], xf);
                            else acc[mm][r] += vk_dot8_bf16(wv[r][c], xf);
                        }
                    }
                }
            }
            s0 += SLICE;
            if (s0 >= p.k) break;
            load_warp_slice<R, NCH, FP8>(wv, p, row, s0, lane);
        }
        // the next group's first slice is in flight while this one is reduced and written
        const int64_t g_next = g + stride;
        int64_t row_next[R];
        if (g_next < groups) {
            group_rows<R>(p, g_next, row_next);
            load_warp_slice<R, NCH, FP8>(wv, p, row_next, 0, lane);
        }
#pragma unroll
        for (int mm = 0; mm < M; mm++) {
#pragma unroll
            for (int r = 0; r < R; r++) acc[mm][r] = vk_warp_sum(acc[mm][r]);
            if (lane == mm) {
                if constexpr (FP8) // the scheme: the codes' sum times s_x * s_w
                    for (int r = 0; r < R; r++)
                        if (row[r] >= 0) acc[mm][r] *= sx[mm] * p.w_scale[row[r]];
                finish_rows(p, mm, row, acc[mm], R);
            }
        }
        g = g_next;
#pragma unroll
        for (int r = 0; r < R; r++) row[r] = row_next[r];
    }
    vk_pdl_trigger(); // every load of this block is consumed: the next kernel may start
}

// ---- configurations and launch ------------------------------------------------------------
// (R rows a group, NCH vectors a lane, WARPS a block). Index 0 is the launcher's choice: in the
// decode pipeline on the H200 (scripts/decode_ab.py, same run) 2.817 ms a token against 2.936
// for index 1; earlier variants measured slower: R = 1 for STORE/ADD, 8-warp blocks.
struct Config {
    int r, nch, warps;
    const char *name;
};
constexpr Config kConfigs[] = {{2, 8, 4, "r2 n8 w4"}, {2, 12, 4, "r2 n12 w4"}};
constexpr int kNumConfigs = (int)(sizeof kConfigs / sizeof kConfigs[0]);

// Grid: at most as many blocks as are resident at once (occupancy for the shared memory the
// input takes), and as few as give every warp the same number of groups: with 3072 groups
// (q|k|v) and 2112 resident warps, a full grid leaves half the warps one group and half two,
// so the launch lasts two rounds at 73% of the warps' worth of work; 1536 warps take two each
// (decode 2.685 against 2.711 ms a token with the full grid, same run).
template <int M, int R, int NCH, int WARPS, bool FP8>
void launch_m(const vox_k_matvec_args &p, cudaStream_t stream) {
    auto kernel = matvec_kernel<M, R, NCH, WARPS, FP8>;
    const size_t smem = (size_t)M * p.k * sizeof(vk_bf16);
    // beyond 48 KB of shared memory in all (the input here, plus the kernel's static reduction
    // array) a kernel must opt in, on each device: a host call, not a stream operation, so also
    // fine while a graph is being captured. (m = 3, k = 8192 is exactly 48 KB of input: without
    // counting the static part, that launch failed with an invalid argument.)
    if (smem + sizeof(float) * WARPS * M > 48 * 1024)
        cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)smem);
    static size_t occ_smem = (size_t)-1;
    static int occ_blocks = 1;
    if (occ_smem != smem) {
        int b = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, WARPS * 32, smem) != cudaSuccess || b < 1)
            b = 1;
        occ_blocks = b;
        occ_smem = smem;
    }
    const int64_t groups = n_groups(p, R), max_warps = (int64_t)vk_sm_count() * occ_blocks * WARPS;
    const int64_t rounds = vk_ceil_div(groups, max_warps);
    const int64_t blocks = vk_ceil_div(vk_ceil_div(groups, rounds), WARPS);
    vk_launch(kernel, dim3((unsigned)blocks), dim3(WARPS * 32), smem, stream, p);
    VOX_K_LAUNCH_CHECK();
}

template <int R, int NCH, int WARPS, bool FP8>
void launch(const vox_k_matvec_args &p, cudaStream_t stream) {
    switch (p.m) {
    case 1: launch_m<1, R, NCH, WARPS, FP8>(p, stream); break;
    case 2: launch_m<2, R, NCH, WARPS, FP8>(p, stream); break;
    case 3: launch_m<3, R, NCH, WARPS, FP8>(p, stream); break;
    default: launch_m<4, R, NCH, WARPS, FP8>(p, stream); break;
    }
}

template <bool FP8>
void launch_config(int i, const vox_k_matvec_args &p, cudaStream_t stream) {
    if (i == 1)
        launch<2, 12, 4, FP8>(p, stream);
    else
        launch<2, 8, 4, FP8>(p, stream);
}

// The kernel holds the input in shared memory: m * k bf16 must fit.
constexpr int64_t kMaxSmem = 200 * 1024;

template <bool FP8>
bool takes(const vox_k_matvec_args *a) {
    if (a->m < 1 || a->m > VOX_K_MATVEC_MAX_M || a->n <= 0 || a->k <= 0 || a->k % kVec<FP8> != 0)
        return false;
    if (FP8 != (a->w_scale != nullptr)) return false;
    if (!vk_aligned16(a->w) || !vk_aligned16(a->x) || !a->y) return false;
    if (a->norm_w && !vk_aligned16(a->norm_w)) return false;
    if ((int64_t)a->m * a->k * 2 > kMaxSmem) return false;
    switch (a->epilogue) {
    case VOX_K_MATVEC_STORE:
    case VOX_K_MATVEC_ADD: return true;
    case VOX_K_MATVEC_SWIGLU: return a->n % 2 == 0;
    case VOX_K_MATVEC_QKV_ROPE_CACHE:
        return a->head_dim > 0 && a->head_dim % 2 == 0 && a->n_heads > 0 && a->n_kv_heads > 0 &&
               a->n == (int64_t)(a->n_heads + 2 * a->n_kv_heads) * a->head_dim && a->k_cache &&
               a->v_cache && (a->row_slot ? a->row_pos != NULL : a->pos_dev != NULL);
    }
    return false;
}

// variant < 0: the configuration the launcher picks (VOX_MATVEC_VARIANT=i in the environment
// picks i instead, for comparisons); else that one. 0, launching nothing, when the arguments
// are not taken.
template <bool FP8>
int launch_variant(int variant, const vox_k_matvec_args *a, cudaStream_t stream) {
    static int picked = -2;
    if (variant < 0) variant = vk_env_variant("VOX_MATVEC_VARIANT", 0, kNumConfigs, 0, picked);
    if (variant >= kNumConfigs || !takes<FP8>(a)) return 0;
    launch_config<FP8>(variant, *a, stream);
    return 1;
}

} // namespace

#endif
