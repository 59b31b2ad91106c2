// GEMMs of a few rows: y [m, n] = x [m, k] @ w [n, k]^T, bf16 out, fp32 sums, for the
// projections of a batched decode step (m = 1..64 sequences; kernels.h, vox_k_skinny_gemm):
// bf16 x and w, or (issue 10's scheme) E4M3 codes of x and w with their row scales.
//
// Why not cuBLASLt: at 8-64 rows a projection is a pass over its weights (7.2 GB a step in all),
// and cuBLASLt streams the decoder's small projections (o and down: 24 tiles of 128 columns;
// q|k|v: 48) at 1.9-2.9 TB/s against 4.0 for lm_head (bench/NOTES-2026-12-02-decode-attention.md,
// section 1): too few tiles to keep every SM reading, or a split-K reduction pass after them.
// Measured on the H200 (bench/NOTES-2026-12-02-skinny-sync.md): this kernel is slower still (a
// fixed cost of ~6.7 us a call against cuBLASLt's ~4.5, and 4.0 against 4.4 TB/s once streaming),
// so the backend takes it only with VOX_SKINNY_GEMM=1; the notes say what would close the gap.
//
// Design:
//  - Work units are (tile of 128 weight rows, chunk of BKB bytes of them), numbered tile-major; each of
//    the G blocks (as many as are resident) takes an equal contiguous run of units ("stream-K"),
//    so every SM streams the same share of the weights whatever the number of tiles.
//  - A block runs its units through a ring of kStages shared-memory buffers filled by cp.async
//    (the weights with an L2 evict-first hint: read once, they must not push out the activations),
//    kStages - 1 chunks ahead of the tensor cores, across tile boundaries.
//  - The product is computed transposed, y^T = w x^T, so the weights are mma.sync's A operand
//    (m16n8k16: 16 weight rows) and the few rows of x its 8-wide N side: 16 rows of x waste
//    nothing, and the weights' fragments are loaded once for all rows of x. 8 warps: 4 along the
//    tile's 128 rows (32 each) x 2 along the chunk (BKB / 2 bytes each); the two halves' sums are
//    added in shared memory at the end of a tile, the same order every time.
//  - A tile that one block covers whole is written at once. A tile cut between blocks: each
//    block writes its fp32 partial sums to its own workspace slot, counts itself in the tile's
//    ticket, and the last to arrive adds all the tile's partials in block order (not arrival
//    order: the result is the same bits on every run) and writes y. It also sets the ticket back
//    to zero, so the workspace is ready for the next launch (and for graph replays).
//  - Programmatic dependent launch: the first chunks of weights are asked for before waiting
//    for the kernel that writes x.
//  - FP8: chunks, pieces and fragments are the same bytes. A 16-byte piece holds 16 codes
//    instead of 8 bf16, and mma.sync m16n8k32.e4m3 takes the same registers (each b32 holds 4
//    codes where it held 2 bf16, at the same byte offsets) as m16n8k16.bf16.
// Numerics: products exact in fp32, sums in the tensor cores' fp32 accumulation, the two halves
// and the partials of a cut tile added in fp32 in a fixed order; y = bf16(sum) or, accumulating,
// bf16(y + sum): one rounding, as cuBLASLt's beta = 1 epilogue. FP8: the sum of code products
// times s_x * s_w (the scheme's order, as matvec.cuh), then the same rounding; the tensor cores
// keep only ~14 bits of an FP8 accumulation (DeepSeek-V3's measurement on Hopper), so each
// chunk's sum (at most 256 codes) starts from zero in the tensor cores and is added to the
// float32 total outside them, as DeepSeek-V3 promotes every 128.
#include "common.cuh"
#include "fp8.cuh"
#include "kernels.h"

namespace {

constexpr int kBN = 128;    // weight rows (columns of y) a tile
constexpr int kWarps = 8;   // 4 along the tile's rows x 2 along the chunk
constexpr int kThreads = kWarps * 32;
constexpr int kSumThreads = kThreads / 2; // the warps of the first chunk half hold the sums

struct Args {
    vk_bf16 *y;
    const unsigned char *x, *w;      // bf16 values or E4M3 codes
    const float *x_scale, *w_scale;  // FP8: the rows' scales
    int m, accumulate;
    int64_t n, k, chunks, units;
    int64_t row_bytes; // of x and w: k elements
    int64_t grid;
    float *slots;       // [2 * grid][MP][kSumThreads]
    unsigned *tickets;  // [tiles]
};

// Configurations: BKB bytes of each row a chunk (longer runs of a row per request are kinder to
// DRAM pages), STAGES chunks in the ring. Index 0 is the default; VOX_SKINNY_VARIANT=i picks
// another for comparisons.
struct Config {
    int bkb, stages;
    const char *name;
};
constexpr Config kConfigs[] = {{128, 5, "bk128B s5"}, {256, 4, "bk256B s4"}};
constexpr int kNumConfigs = (int)(sizeof kConfigs / sizeof kConfigs[0]);

// Byte offset of 16-byte piece j of row r in a [rows][BKB bytes] buffer: the low 3 bits of a
// row's piece index are permuted by r & 7, so the 8 rows an ldmatrix reads (same piece) fall in
// 8 different bank groups.
template <int BKB> __device__ __forceinline__ uint32_t swz(int r, int j) {
    return (uint32_t)(r * BKB + ((j ^ (r & 7)) << 4));
}

// d += a * b for 32 bytes of k: m16n8k16 bf16, or m16n8k32 E4M3 (sm_89+; the launcher takes FP8
// only there) with the same fragment registers.
template <bool FP8>
__device__ __forceinline__ void mma_32b(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    if constexpr (!FP8)
        vk_mma_bf16_16816(d, a, b0, b1);
    else
        vk_mma_e4m3_16832(d, a, b0, b1);
}

// The first block whose run holds unit u: the largest b with floor(b * units / grid) <= u.
__device__ __forceinline__ int64_t block_of_unit(const Args &p, int64_t u) {
    return ((u + 1) * p.grid - 1) / p.units;
}
__device__ __forceinline__ int64_t first_unit(const Args &p, int64_t b) {
    return b * p.units / p.grid;
}

// acc[mt][nt][e]: weight row wn*32 + mt*16 + lane/4 + 8*(e/2) of the tile, row of x
// nt*8 + 2*(lane%4) + e%2. FP8: the sum times s_x * s_w first.
template <int NT, bool FP8>
__device__ __forceinline__ void store_tile(const Args &p, int64_t tile, int wn, int lane,
                                           const float (&acc)[2][NT][4]) {
#pragma unroll
    for (int mt = 0; mt < 2; mt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int64_t col = tile * kBN + wn * 32 + mt * 16 + (lane >> 2) + (e >> 1) * 8;
                const int row = nt * 8 + (lane & 3) * 2 + (e & 1);
                if (row >= p.m || col >= p.n) continue;
                vk_bf16 *dst = p.y + (int64_t)row * p.n + col;
                float v = acc[mt][nt][e];
                if constexpr (FP8) v *= p.x_scale[row] * p.w_scale[col];
                if (p.accumulate) v += vk_f(*dst);
                *dst = vk_bf(v);
            }
}

// MP: rows of x padded to a multiple of 16 (16, 32, 48, 64); BKB, kStages: the configuration.
template <int MP, int BKB, int kStages, bool FP8>
__global__ void __launch_bounds__(kThreads, MP <= 16 && BKB == 128 ? 2 : 1)
    skinny_gemm_kernel(const Args p) {
    constexpr int NT = MP / 8;    // 8-row tiles of x
    constexpr int P = BKB / 16;   // 16-byte pieces a row of a chunk
    constexpr int KS = BKB / 64;  // 32-byte mma steps of a warp's half of the chunk
    constexpr int W_BYTES = kBN * BKB, STAGE = W_BYTES + MP * BKB;
    constexpr int NACC = 2 * NT * 4; // = MP
    extern __shared__ __align__(128) unsigned char smem[];
    float *red = reinterpret_cast<float *>(smem + kStages * STAGE); // [NACC][kSumThreads]
    __shared__ int s_last;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int wn = warp & 3, wk = warp >> 2;
    const int sum_tid = wn * 32 + lane; // this thread's place among the 128 sum holders
    const uint32_t sbase = vk_smem_u32(smem);
    const int64_t b = blockIdx.x;
    const int64_t u0 = first_unit(p, b);
    const int nu = (int)(first_unit(p, b + 1) - u0);
    const int chunks = (int)p.chunks;
    const int64_t tile0 = u0 / chunks;
    const int c0 = (int)(u0 % chunks);
    const uint64_t policy = vk_evict_first_policy();

    // Units are walked with (tile, chunk) counters: no divisions in the loop.
    auto load_w = [&](int buf, int64_t tile, int c) {
        const uint32_t dst = sbase + (uint32_t)(buf * STAGE);
        const unsigned char *src0 = p.w + tile * kBN * p.row_bytes + (int64_t)c * BKB;
#pragma unroll
        for (int q = tid; q < kBN * P; q += kThreads) {
            const int r = q / P, j = q % P;
            const bool ok = tile * kBN + r < p.n && c * BKB + j * 16 < p.row_bytes;
            vk_cp_async16_hint(dst + swz<BKB>(r, j), ok ? src0 + r * p.row_bytes + j * 16 : p.w, ok,
                              policy);
        }
    };
    auto load_x = [&](int buf, int c) {
        const uint32_t dst = sbase + (uint32_t)(buf * STAGE + W_BYTES);
#pragma unroll
        for (int q = tid; q < MP * P; q += kThreads) {
            const int r = q / P, j = q % P;
            const int64_t off = (int64_t)c * BKB + j * 16;
            const bool ok = r < p.m && off < p.row_bytes;
            vk_cp_async16(dst + swz<BKB>(r, j), ok ? p.x + r * p.row_bytes + off : p.x, ok);
        }
    };
    auto next = [chunks](int64_t &tile, int &c) {
        if (++c == chunks) c = 0, tile++;
    };

    // The ring's first kStages - 1 chunks: weights before the wait for x's writer, then x.
    int64_t lt = tile0; // the next unit to load
    int lc = c0;
#pragma unroll
    for (int i = 0; i < kStages - 1; i++) {
        if (i < nu) load_w(i, lt, lc), next(lt, lc);
        vk_cp_async_commit();
    }
    vk_pdl_wait();
    {
        int64_t t = tile0;
        int c = c0;
        for (int i = 0; i < kStages - 1 && i < nu; i++) load_x(i, c), next(t, c);
    }
    vk_cp_async_commit();

    float acc[2][NT][4];
    float *flat = &acc[0][0][0];
#pragma unroll
    for (int j = 0; j < NACC; j++) flat[j] = 0.0f;
    int64_t tile = tile0; // the unit being computed
    int c = c0;
    int buf = 0, lbuf = kStages - 1;

    for (int i = 0; i < nu; i++) {
        // unit i's group is complete (the groups of the kStages - 2 units after it may not be)
        if (i == 0) vk_cp_async_wait<0>();
        else vk_cp_async_wait<kStages - 2>();
        __syncthreads(); // ... for every thread, and buffer lbuf (used by unit i - 1) is free
        if (i + kStages - 1 < nu) {
            load_w(lbuf, lt, lc);
            load_x(lbuf, lc);
            next(lt, lc);
        }
        vk_cp_async_commit();
        lbuf = lbuf == kStages - 1 ? 0 : lbuf + 1;

        const uint32_t sw = sbase + (uint32_t)(buf * STAGE), sx = sw + W_BYTES;
        buf = buf == kStages - 1 ? 0 : buf + 1;
        // FP8: this chunk's sums start from zero in the tensor cores (see Numerics)
        float cacc[2][NT][4];
        float (&dst)[2][NT][4] = FP8 ? cacc : acc;
        float *cflat = &cacc[0][0][0];
        if constexpr (FP8) {
#pragma unroll
            for (int j = 0; j < NACC; j++) cflat[j] = 0.0f;
        }
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            const int piece = wk * (P / 2) + ks * 2; // the 16-byte piece where this step starts
            uint32_t a[2][4];
#pragma unroll
            for (int mt = 0; mt < 2; mt++)
                vk_ldmatrix_x4(a[mt], sw + swz<BKB>(wn * 32 + mt * 16 + (lane & 15), piece + (lane >> 4)));
#pragma unroll
            for (int np = 0; np < NT / 2; np++) {
                // b for x rows np*16 .. +7 (the step's two pieces), then rows np*16 + 8 .. +15
                uint32_t bq[4];
                vk_ldmatrix_x4(bq, sx + swz<BKB>(np * 16 + (lane & 7) + ((lane >> 4) << 3),
                                                 piece + ((lane >> 3) & 1)));
#pragma unroll
                for (int mt = 0; mt < 2; mt++) {
                    mma_32b<FP8>(dst[mt][2 * np], a[mt], bq[0], bq[1]);
                    mma_32b<FP8>(dst[mt][2 * np + 1], a[mt], bq[2], bq[3]);
                }
            }
        }
        if constexpr (FP8) {
#pragma unroll
            for (int j = 0; j < NACC; j++) flat[j] += cflat[j];
        }
        const bool tile_end = c == chunks - 1;
        const int seg_c0 = tile == tile0 ? c0 : 0; // where this block's part of the tile began
        const int seg_c1 = c;
        next(tile, c);
        if (!tile_end && i != nu - 1) continue;
        if (i == nu - 1) vk_pdl_trigger(); // every load of this block has been consumed
        const int64_t t = tile_end ? tile - 1 : tile; // the tile just finished (part of)

        // ---- the end of this block's part of tile t ----
        // the second chunk half's sums into the first's, through shared memory
        if (wk == 1)
#pragma unroll
            for (int j = 0; j < NACC; j++) red[j * kSumThreads + sum_tid] = flat[j];
        __syncthreads();
        if (wk == 0)
#pragma unroll
            for (int j = 0; j < NACC; j++) flat[j] += red[j * kSumThreads + sum_tid];
        if (seg_c0 == 0 && seg_c1 == chunks - 1) { // the whole tile
            if (wk == 0) store_tile<NT, FP8>(p, t, wn, lane, acc);
        } else {
            const int64_t slot = 2 * b + (t == tile0 ? 0 : 1);
            if (wk == 0) {
                float *dst = p.slots + slot * (int64_t)NACC * kSumThreads;
#pragma unroll
                for (int j = 0; j < NACC; j++) dst[j * kSumThreads + sum_tid] = flat[j];
                __threadfence(); // the partials are visible before the ticket counts them
            }
            __syncthreads(); // (also: every thread is done with red)
            const int64_t b_first = block_of_unit(p, t * chunks);
            const int64_t b_last = block_of_unit(p, t * chunks + chunks - 1);
            if (tid == 0) {
                const unsigned ticket = atomicAdd(&p.tickets[t], 1u);
                s_last = ticket == (unsigned)(b_last - b_first);
                if (s_last) p.tickets[t] = 0; // every block of the tile has counted itself
            }
            __syncthreads();
            if (s_last) {
                // the last block adds the tile's partials in block order, all 256 threads each
                // taking half of a sum holder's values, two contributors' loads in flight at once
                __threadfence();
                constexpr int H = NACC / 2;
                float sum[H];
#pragma unroll
                for (int j = 0; j < H; j++) sum[j] = 0.0f;
                auto slot_of = [&](int64_t bb) {
                    const int64_t sl = 2 * bb + (t == first_unit(p, bb) / chunks ? 0 : 1);
                    return p.slots + sl * (int64_t)NACC * kSumThreads + (wk * H) * kSumThreads + sum_tid;
                };
                int64_t bb = b_first;
                for (; bb + 1 <= b_last; bb += 2) {
                    const float *s1 = slot_of(bb), *s2 = slot_of(bb + 1);
                    float v1[H], v2[H];
#pragma unroll
                    for (int j = 0; j < H; j++) v1[j] = __ldcg(s1 + j * kSumThreads);
#pragma unroll
                    for (int j = 0; j < H; j++) v2[j] = __ldcg(s2 + j * kSumThreads);
#pragma unroll
                    for (int j = 0; j < H; j++) sum[j] = (sum[j] + v1[j]) + v2[j];
                }
                if (bb == b_last) {
                    const float *s1 = slot_of(bb);
#pragma unroll
                    for (int j = 0; j < H; j++) sum[j] += __ldcg(s1 + j * kSumThreads);
                }
#pragma unroll
                for (int j = 0; j < H; j++) red[(wk * H + j) * kSumThreads + sum_tid] = sum[j];
                __syncthreads();
                if (wk == 0) {
#pragma unroll
                    for (int j = 0; j < NACC; j++) flat[j] = red[j * kSumThreads + sum_tid];
                    store_tile<NT, FP8>(p, t, wn, lane, acc);
                }
            }
        }
#pragma unroll
        for (int j = 0; j < NACC; j++) flat[j] = 0.0f;
        __syncthreads(); // red is free again
    }
}

template <int MP, int BKB, int ST> constexpr size_t smem_bytes() {
    return (size_t)ST * (kBN * BKB + MP * BKB) + (size_t)MP * kSumThreads * 4;
}

// Resident blocks an SM (opting the kernel into its shared memory first), 0 on failure; asked
// once per device.
template <int MP, int BKB, int ST, bool FP8> int blocks_per_sm() {
    static std::atomic<uint64_t> opted{0};
    static std::atomic<int> cached[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 0;
    int b = cached[dev].load(std::memory_order_relaxed);
    if (b > 0) return b;
    auto kernel = skinny_gemm_kernel<MP, BKB, ST, FP8>;
    vk_ensure_smem(kernel, smem_bytes<MP, BKB, ST>(), opted);
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, kThreads,
                                                      smem_bytes<MP, BKB, ST>()) != cudaSuccess ||
        b < 1)
        return 0;
    cached[dev].store(b, std::memory_order_relaxed);
    return b;
}

// blocks_per_sm, or with args set the launch, of one instantiation.
template <int MP, int BKB, int ST, bool FP8>
int dispatch_one(const Args *args, dim3 grid, cudaStream_t stream) {
    if (!args) return blocks_per_sm<MP, BKB, ST, FP8>();
    vk_launch(skinny_gemm_kernel<MP, BKB, ST, FP8>, grid, dim3(kThreads), smem_bytes<MP, BKB, ST>(),
              stream, *args);
    return 1;
}
template <int MP, bool FP8>
int dispatch_mp(int variant, const Args *args, dim3 grid, cudaStream_t stream) {
    return variant == 1 ? dispatch_one<MP, 256, 4, FP8>(args, grid, stream)
                        : dispatch_one<MP, 128, 5, FP8>(args, grid, stream);
}
template <bool FP8> int dispatch_fp8(int mp, int variant, const Args *args, dim3 grid, cudaStream_t stream) {
    switch (mp) {
    case 16: return dispatch_mp<16, FP8>(variant, args, grid, stream);
    case 32: return dispatch_mp<32, FP8>(variant, args, grid, stream);
    case 48: return dispatch_mp<48, FP8>(variant, args, grid, stream);
    default: return dispatch_mp<64, FP8>(variant, args, grid, stream);
    }
}
int dispatch(bool fp8, int mp, int variant, const Args *args, dim3 grid, cudaStream_t stream) {
    return fp8 ? dispatch_fp8<true>(mp, variant, args, grid, stream)
               : dispatch_fp8<false>(mp, variant, args, grid, stream);
}
int blocks_per_sm_for(bool fp8, int mp, int variant) {
    return dispatch(fp8, mp, variant, nullptr, dim3(), 0);
}

// FP8 tensor cores: compute capability 8.9 or later.
bool device_has_fp8_mma() { return vk_compute_capability() >= 89; }

// The tickets sit at the workspace's start in a region of fixed size, so that calls of any n find
// theirs where earlier calls left them zero (never in an earlier call's partial sums).
constexpr size_t kTicketsBytes = (size_t)VOX_K_SKINNY_MAX_N / kBN * 4;

} // namespace

extern "C" size_t vox_k_skinny_gemm_workspace_bytes(void) {
    const int sms = vk_sm_count();
    size_t slots = 0;
    for (int fp8 = 0; fp8 < 2; fp8++) {
        if (fp8 && !device_has_fp8_mma()) continue;
        for (int v = 0; v < kNumConfigs; v++)
            for (int mp = 16; mp <= VOX_K_SKINNY_MAX_M; mp += 16) {
                const size_t s =
                    (size_t)2 * sms * blocks_per_sm_for(fp8, mp, v) * mp * kSumThreads * 4;
                if (s > slots) slots = s;
            }
    }
    return kTicketsBytes + slots;
}

extern "C" int vox_k_skinny_gemm_variant_count(void) { return kNumConfigs; }
extern "C" const char *vox_k_skinny_gemm_variant_name(int variant) {
    return variant >= 0 && variant < kNumConfigs ? kConfigs[variant].name : NULL;
}

extern "C" int vox_k_skinny_gemm_variant(int variant, const vox_k_skinny_args *a,
                                         cudaStream_t stream) {
    static int picked = -2;
    if (variant < 0) variant = vk_env_variant("VOX_SKINNY_VARIANT", 0, kNumConfigs, 0, picked);
    if (variant >= kNumConfigs) return 0;
    const bool fp8 = a->w_scale != NULL;
    const int64_t m = a->m, n = a->n, k = a->k;
    const int esize = fp8 ? 1 : 2;
    // whole 16-byte pieces of every row; the scales with the codes, none without
    if (m < 1 || m > VOX_K_SKINNY_MAX_M || n < 1 || n > VOX_K_SKINNY_MAX_N || k < 1 ||
        (k * esize) % 16 || n % 8 || k > INT32_MAX / 4 || !a->y || !a->workspace)
        return 0;
    if (fp8 != (a->x_scale != NULL) || (fp8 && !device_has_fp8_mma())) return 0;
    if (!vk_aligned16(a->x) || !vk_aligned16(a->w) || !vk_aligned16(a->workspace)) return 0;
    const int mp = (int)(m + 15) / 16 * 16;
    const int per_sm = blocks_per_sm_for(fp8, mp, variant), sms = vk_sm_count();
    if (per_sm < 1) return 0;
    Args p;
    p.y = (vk_bf16 *)a->y;
    p.x = (const unsigned char *)a->x;
    p.w = (const unsigned char *)a->w;
    p.x_scale = a->x_scale;
    p.w_scale = a->w_scale;
    p.m = (int)m;
    p.accumulate = a->accumulate != 0;
    p.n = n;
    p.k = k;
    p.row_bytes = k * esize;
    p.chunks = vk_ceil_div(p.row_bytes, kConfigs[variant].bkb);
    p.units = vk_ceil_div(n, kBN) * p.chunks;
    p.grid = p.units < (int64_t)sms * per_sm ? p.units : (int64_t)sms * per_sm;
    const size_t need = kTicketsBytes + (size_t)2 * p.grid * mp * kSumThreads * 4;
    if (a->workspace_bytes < need) return 0;
    p.tickets = (unsigned *)a->workspace;
    p.slots = (float *)((char *)a->workspace + kTicketsBytes);
    dispatch(fp8, mp, variant, &p, dim3((unsigned)p.grid), stream);
    VOX_K_LAUNCH_CHECK();
    return 1;
}

extern "C" int vox_k_skinny_gemm(const vox_k_skinny_args *a, cudaStream_t stream) {
    return vox_k_skinny_gemm_variant(-1, a, stream);
}
