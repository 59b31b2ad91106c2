// The premise of bench/DESIGN-wide-persistent-decode.md, measured alone (its section 5): can one
// block an SM stream an op's weights at near-HBM speed while it multiplies them by R = 32..128
// sequences' inputs with wgmma, when those inputs come from L2 again for every unit and a unit
// that covers part of K leaves fp32 partial sums? Not product code: a probe, with its own check.
//
//   y_s [R, N] = x [R, ks] @ W [N, ks]^T for each K-slice s of S (fp32 partials, slice-major)
//
// Units are (tile of 128 weight rows, K-slice), dealt to the G blocks round robin (unit u to block
// u % G), slice after slice of a tile. A block is one producer warpgroup and two consumer
// warpgroups (rows 0-63 and 64-127 of x). The producer copies, per k-block of 64 columns, the
// tile's 128 weight rows (16 KB, L2 evict-first) and the R input rows (16 KB, zero past R) into a
// ring of kStages buffers with cp.async, in the 128-byte-swizzled K-major layout wgmma reads
// (attention_sm90.cu's tile layout), never waiting on anything but a free buffer: across units,
// as the wide step's producer would across ops. A consumer warpgroup runs 4 wgmma m64n128k16 a
// k-block into 64 fp32 accumulators a thread, keeps one k-block's group in flight, releases a
// buffer once the group that read it is done, and at the unit's end stores its 64 x 128
// partials. Rows past R and columns past N or K are zero in shared memory and not stored.
//
// Check (every run, every element): the slices' sum in double against the exact sum P of the
// bf16 products in double, |got - P| <= (K / 16 + S + 32) * 2^-23 * sum |x_i w_i| (a chain of at
// most K / 16 + S fp32 additions of the tensor cores' 16-product sums, 2^-23 a step since they
// may truncate, and slack for the sums inside an instruction), on awkward R, N, K and S and on
// the decoder's shapes.
// Timing (unless --no-timing): each decoder shape at R = 32, 64, 128 and two slice counts, the
// weights rotated over copies that exceed L2, as TB/s of weights and of everything the blocks
// read and write (weights + inputs + partials): a launch per copy, and one launch streaming every
// copy (its units follow each other on a block without a break: the steady state of a persistent
// step, which pays no launch ramp or tail between ops).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "gpu_test_util.h"
#include "wgmma.cuh"

namespace {

constexpr int kBN = 128;              // weight rows a tile (wgmma's n)
constexpr int kBK = 64;               // columns a k-block: one 128-byte swizzle row
constexpr int kMaxR = 128;            // input rows: two consumer warpgroups of 64
constexpr int kStages = 6;            // 6 x 32 KB ring
constexpr uint32_t kRowBytes = 128;   // a tile row's bytes in a k-block
constexpr uint32_t kTile = kBN * kRowBytes;         // 16 KB, the weights of a k-block
constexpr uint32_t kChunk = kMaxR * kRowBytes;      // 16 KB, the inputs of a k-block
constexpr uint32_t kStage = kTile + kChunk;
constexpr size_t kSmem = 1024 + (size_t)kStages * kStage;
constexpr int kThreads = 3 * 128;
static_assert(kSmem + 256 <= 227 * 1024, "shared memory");

struct Args {
    const __nv_bfloat16 *x, *w; // x [R, K], w [N, K], row-major
    float *part;                // [S][R][N]
    int R, N, K, S, slice_blocks; // slice_blocks: k-blocks a slice (the last may have fewer)
    int tiles, units;           // units of one copy of W: tiles x S
    int reps;                   // copies of W a launch streams, w + c N K, one after the other
};

__global__ void __launch_bounds__(kThreads, 1) wide_consumer_kernel(const Args a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t bars[2 * kStages]; // full s, then empty s
    const uint32_t base = (vk_smem_u32(smem_raw) + 1023u) & ~1023u;
    auto full = [&](int s) { return vk_smem_u32(&bars[s]); };
    auto empty = [&](int s) { return vk_smem_u32(&bars[kStages + s]); };
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int n_kb = (a.K + kBK - 1) / kBK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; s++) {
            vk_mbar_init(full(s), 128); // the producer's threads, through cp.async
            vk_mbar_init(empty(s), 8);  // lane 0 of every consumer warp
        }
    }
    __syncthreads();
    // the k-blocks [kb0, kb1) of unit u
    auto unit_blocks = [&](int u, int &tile, int &slice, int &kb0, int &kb1) {
        u %= a.units;
        tile = u / a.S;
        slice = u % a.S;
        kb0 = slice * a.slice_blocks;
        kb1 = min(kb0 + a.slice_blocks, n_kb);
    };

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        const uint64_t policy = vk_evict_first_policy();
        const int piece = tid % 8, r0 = tid / 8; // rows r0 + 16 i
        int it = 0;
        for (int u = blockIdx.x; u < a.units * a.reps; u += gridDim.x) {
            int tile, slice, kb0, kb1;
            unit_blocks(u, tile, slice, kb0, kb1);
            const __nv_bfloat16 *w = a.w + (int64_t)(u / a.units) * a.N * a.K;
            for (int kb = kb0; kb < kb1; kb++, it++) {
                const int s = it % kStages;
                if (it >= kStages) vk_mbar_wait(empty(s), (uint32_t)((it / kStages - 1) & 1));
                const uint32_t sw = base + s * kStage, sx = sw + kTile;
                const int col = kb * kBK + piece * 8;
                const bool col_ok = col < a.K; // K is a multiple of 8: a piece is whole or out
#pragma unroll
                for (int i = 0; i < kBN / 16; i++) {
                    const int r = r0 + 16 * i, n = tile * kBN + r;
                    const bool ok = col_ok && n < a.N;
                    vk_cp_async16_hint(sw + vk_sw128_off(r, piece, kBN),
                                           w + (ok ? (int64_t)n * a.K + col : 0), ok, policy);
                }
#pragma unroll
                for (int i = 0; i < kMaxR / 16; i++) {
                    const int r = r0 + 16 * i;
                    const bool ok = col_ok && r < a.R;
                    vk_cp_async16(sx + vk_sw128_off(r, piece, kMaxR), a.x + (ok ? (int64_t)r * a.K + col : 0), ok);
                }
                vk_cp_async_mbar_arrive(full(s));
            }
        }
        vk_cp_async_wait<0>();
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int cw = wg - 1, warp = tid / 32, lane = tid % 32, g = lane >> 2, tig = lane & 3;
    float acc[16][4];
    int it = 0;
    for (int u = blockIdx.x; u < a.units * a.reps; u += gridDim.x) {
        int tile, slice, kb0, kb1;
        unit_blocks(u, tile, slice, kb0, kb1);
        // k-block kb's four k-steps into acc (the unit's first step overwrites)
        auto issue = [&](int j, bool first) {
            const int s = j % kStages;
            vk_mbar_wait_warp(full(s), (uint32_t)((j / kStages) & 1));
            vk_fence_proxy_async(); // cp.async's generic-proxy writes before wgmma's reads
            vk_wgmma_fence();
            const uint32_t sw = base + s * kStage, sx = sw + kTile + cw * 64 * kRowBytes;
#pragma unroll
            for (int ks = 0; ks < kBK / 16; ks++)
                vk_wgmma_m64n128k16_ss(acc, vk_desc_k_major(sx + ks * 32), vk_desc_k_major(sw + ks * 32),
                                       first && ks == 0 ? 0 : 1);
            vk_wgmma_commit();
        };
        // no branch between a wgmma and its wait (ptxas would serialise them): the loop keeps
        // one k-block in flight, the last one's wait is peeled off
        const int n = kb1 - kb0;
        issue(it, true);
        for (int j = 0; j + 1 < n; j++) {
            issue(it + j + 1, false);
            vk_wgmma_wait<1>();
            if (lane == 0) vk_mbar_arrive(empty((it + j) % kStages));
        }
        vk_wgmma_wait<0>();
        if (lane == 0) vk_mbar_arrive(empty((it + n - 1) % kStages));
        vk_wgmma_pin(acc);
        it += n;
        float *out = a.part + (int64_t)slice * a.R * a.N;
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const int r = cw * 64 + warp * 16 + g + 8 * hh;
            if (r >= a.R) continue;
#pragma unroll
            for (int jn = 0; jn < 16; jn++) {
                const int c = tile * kBN + jn * 8 + tig * 2;
                if (c + 1 < a.N && (a.N & 1) == 0) {
                    *reinterpret_cast<float2 *>(out + (int64_t)r * a.N + c) =
                        make_float2(acc[jn][2 * hh], acc[jn][2 * hh + 1]);
                } else {
                    if (c < a.N) out[(int64_t)r * a.N + c] = acc[jn][2 * hh];
                    if (c + 1 < a.N) out[(int64_t)r * a.N + c + 1] = acc[jn][2 * hh + 1];
                }
            }
        }
    }
#else
    (void)a;
#endif
}

gtu_rng g_rng = gtu_rng_seed(0x5eed);

// Host bf16 values (round to nearest even) and their exact floats.
void fill_bf16(std::vector<__nv_bfloat16> &b, std::vector<float> &f, size_t n, float scale) {
    b.resize(n);
    f.resize(n);
    for (size_t i = 0; i < n; i++) {
        b[i] = __float2bfloat16_rn(gtu_uniform(&g_rng, -1.0f, 1.0f) * scale);
        f[i] = __bfloat162float(b[i]);
    }
}

// The slice count is what K allows: S slices of whole k-blocks, none empty.
Args make_args(int R, int N, int K, int S) {
    if (R < 1 || R > kMaxR || N < 1 || K < 8 || K % 8 || S < 1) {
        fprintf(stderr, "probe: unsupported shape R=%d N=%d K=%d S=%d\n", R, N, K, S);
        exit(2);
    }
    Args a = {};
    a.R = R, a.N = N, a.K = K;
    const int n_kb = (K + kBK - 1) / kBK;
    a.slice_blocks = (n_kb + S - 1) / S;
    a.S = (n_kb + a.slice_blocks - 1) / a.slice_blocks;
    a.tiles = (N + kBN - 1) / kBN;
    a.units = a.tiles * a.S;
    a.reps = 1;
    return a;
}

int g_grid;
void launch(const Args &a, cudaStream_t st) {
    wide_consumer_kernel<<<g_grid, kThreads, kSmem, st>>>(a);
    GTU_CUDA(cudaGetLastError());
}

// One case checked element by element.
void check_case(int R, int N, int K, int S) {
    std::vector<__nv_bfloat16> xb, wb;
    std::vector<float> xf, wf;
    fill_bf16(xb, xf, (size_t)R * K, 1.0f);
    fill_bf16(wb, wf, (size_t)N * K, 1.0f / sqrtf((float)K));
    Args a = make_args(R, N, K, S);
    S = a.S;
    __nv_bfloat16 *dx, *dw;
    float *dp;
    const size_t pn = (size_t)S * R * N;
    GTU_CUDA(cudaMalloc(&dx, xb.size() * 2));
    GTU_CUDA(cudaMalloc(&dw, wb.size() * 2));
    GTU_CUDA(cudaMalloc(&dp, pn * 4));
    GTU_CUDA(cudaMemcpy(dx, xb.data(), xb.size() * 2, cudaMemcpyHostToDevice));
    GTU_CUDA(cudaMemcpy(dw, wb.data(), wb.size() * 2, cudaMemcpyHostToDevice));
    GTU_CUDA(cudaMemset(dp, 0xff, pn * 4)); // NaN: a partial never written shows
    a.x = dx, a.w = dw, a.part = dp;
    launch(a, 0);
    GTU_CUDA(cudaDeviceSynchronize());
    std::vector<float> part(pn);
    GTU_CUDA(cudaMemcpy(part.data(), dp, pn * 4, cudaMemcpyDeviceToHost));
    int bad = 0;
    double worst = 0;
    for (int r = 0; r < R; r++)
        for (int n = 0; n < N; n++) {
            double p = 0, mag = 0, got = 0;
            for (int k = 0; k < K; k++) {
                const double t = (double)xf[(size_t)r * K + k] * wf[(size_t)n * K + k];
                p += t;
                mag += fabs(t);
            }
            for (int s = 0; s < S; s++) got += part[((size_t)s * R + r) * N + n];
            const double e = (K / 16.0 + S + 32) * ldexp(1.0, -23) * mag;
            const double d = fabs(got - p);
            if (!(d <= e)) {
                if (bad < 5)
                    fprintf(stderr, "  R=%d N=%d K=%d S=%d: y[%d][%d] = %.9g, exact %.9g, bound %.3g\n",
                            R, N, K, S, r, n, got, p, e);
                bad++;
            }
            if (e > 0 && d / e > worst) worst = d / e;
        }
    CHECK_MSG(bad == 0, "R=%d N=%d K=%d S=%d: %d failures", R, N, K, S, bad);
    printf("check R=%3d N=%5d K=%5d S=%d: %s (%d of %d outside; worst at %.2f of its bound)\n", R, N,
           K, S, bad ? "FAIL" : "ok", bad, R * N, worst);
    cudaFree(dx), cudaFree(dw), cudaFree(dp);
}

// The weights' and all bytes' rates of one shape, weights rotated over copies past L2.
void time_case(const char *name, int R, int N, int K, int S) {
    Args a = make_args(R, N, K, S);
    S = a.S;
    const size_t wbytes = (size_t)N * K * 2;
    const int copies = (int)(512e6 / wbytes) + 2;
    __nv_bfloat16 *dx, *dw;
    float *dp;
    GTU_CUDA(cudaMalloc(&dx, (size_t)R * K * 2));
    GTU_CUDA(cudaMalloc(&dw, wbytes * copies));
    GTU_CUDA(cudaMalloc(&dp, (size_t)S * R * N * 4));
    GTU_CUDA(cudaMemset(dx, 0x3c, (size_t)R * K * 2)); // bf16 ~0.011: values do not matter here
    GTU_CUDA(cudaMemset(dw, 0x3c, wbytes * copies));
    a.x = dx, a.part = dp;
    cudaEvent_t e0, e1;
    GTU_CUDA(cudaEventCreate(&e0));
    GTU_CUDA(cudaEventCreate(&e1));
    const int iters = 40;
    for (int i = 0; i < copies; i++) { // warm-up
        a.w = dw + (size_t)i * N * K;
        launch(a, 0);
    }
    GTU_CUDA(cudaEventRecord(e0));
    for (int i = 0; i < iters; i++) {
        a.w = dw + (size_t)(i % copies) * N * K;
        launch(a, 0);
    }
    GTU_CUDA(cudaEventRecord(e1));
    GTU_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    GTU_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    const double us = ms * 1e3 / iters;
    // streamed: one launch through every copy, so the ramp and tail of a launch are paid once, as
    // in the persistent step where the next op's weights stream while this one ends
    a.w = dw;
    a.reps = copies;
    launch(a, 0);
    GTU_CUDA(cudaEventRecord(e0));
    for (int i = 0; i < 4; i++) launch(a, 0);
    GTU_CUDA(cudaEventRecord(e1));
    GTU_CUDA(cudaEventSynchronize(e1));
    GTU_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    const double us_streamed = ms * 1e3 / (4.0 * copies);
    // what the blocks move: weights once, a unit's inputs (R real rows), the partials
    const double in_bytes = (double)a.units * a.slice_blocks * kBK * R * 2;
    const double part_bytes = (double)S * R * N * 4;
    printf("time %-8s R=%3d S=%d units %4d: %7.2f us, weights %4.2f TB/s; streamed %7.2f us, "
           "weights %4.2f TB/s, all %4.2f TB/s (inputs %.2fx, partials %.2fx the weights)\n",
           name, R, S, a.units, us, wbytes / us * 1e-6, us_streamed, wbytes / us_streamed * 1e-6,
           (wbytes + in_bytes + part_bytes) / us_streamed * 1e-6, in_bytes / wbytes,
           part_bytes / wbytes);
    cudaFree(dx), cudaFree(dw), cudaFree(dp);
}

} // namespace

int main(int argc, char **argv) {
    int timing;
    g_grid = gtu_sm90_start(argc, argv, "the probe", &timing);
    GTU_CUDA(cudaFuncSetAttribute(wide_consumer_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)kSmem));
    // awkward: R not a multiple of 8 or 64, N and K not of a tile or k-block, more slices than
    // k-blocks, one unit in all, fewer units than blocks and several units a block
    const int cases[][4] = {{1, 8, 64, 1},     {33, 1000, 1000, 3}, {65, 136, 72, 1},
                            {127, 520, 1544, 4}, {128, 128, 8, 2},  {64, 3072, 4096, 4},
                            {100, 4104, 3072, 2}, {128, 3072, 8192, 8}, {5, 263, 200, 7}};
    for (const auto &c : cases) check_case(c[0], c[1], c[2], c[3]);
    if (timing) {
        const struct {
            const char *name;
            int N, K, S1, S2;
        } shapes[] = {{"q|k|v", 6144, 3072, 1, 3},
                      {"o", 3072, 4096, 1, 4},
                      {"gate|up", 16384, 3072, 1, 2},
                      {"down", 3072, 8192, 1, 8}};
        for (const auto &s : shapes)
            for (int R : {32, 64, 128}) {
                time_case(s.name, R, s.N, s.K, s.S1);
                time_case(s.name, R, s.N, s.K, s.S2);
            }
    }
    return test_finish("probe_wide_consumer");
}
