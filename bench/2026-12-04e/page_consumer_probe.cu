// What a ring page costs the persistent decode kernel's consumers, three ways, outside the kernel
// (bench/NOTES-2026-12-04e.md section 4): the split consumer's loads and mmas (pdecode.cu's
// mma_vectors, compiled in) over rows 2048 bytes apart as the ring holds them today (8-way bank
// conflicts), the same over rows padded to 2064 bytes (pdecode-ring-padding.patch; its lane
// mapping only where the probe is built with that patch applied), and the wgmma consumer of
// section 4 (the page in the K-major 128-byte-swizzle layout, B from shared memory by
// descriptor, the staged input as row 0 of A from registers). No producer: every block loads
// kProbePages pages into shared memory once and its 8 consumer warps go over them again and
// again, so the time a page is the consumers' alone.
//
// Each block (one an SM) also checks its sums: the 8 rows' dot products with x over the pages,
// against the host in double precision, every block and row (bound below, stated with the check).
//
// Build: nvcc -arch=sm_90a -O3 -I kernels -I include -o page_consumer_probe bench/2026-12-04e/page_consumer_probe.cu
// Run:   ./page_consumer_probe   (one line a variant and type; exit 1 on a failed check)
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdecode.cu" // its mma_vectors, kPageBytes, kRowBytes
#include "wgmma.cuh"

constexpr int kProbePages = 4; // distinct pages in shared memory, visited in turn
constexpr int kWarps = 8, kProbeThreads = kWarps * 32; // the 8 consumer warps, no producer
enum Variant { MMA, MMA_PAD, WGMMA };
static const char *kNames[] = {"mma, rows 2048 B", "mma, rows 2064 B", "wgmma"};

__host__ __device__ constexpr int row_stride(int v) { return v == MMA_PAD ? kRowBytes + 16 : kRowBytes; }
__host__ __device__ constexpr int page_stride(int v) { return v == WGMMA ? kPageBytes : 8 * row_stride(v); }

// Byte b of row r of a page, where it lies in shared memory.
__host__ __device__ inline int page_offset(int v, int r, int b) {
    if (v != WGMMA) return r * row_stride(v) + b;
    const int j = b >> 7, c = (b >> 4) & 7; // 1024-byte atom of 128-byte column block j
    return j * 1024 + r * 128 + ((c ^ r) << 4) + (b & 15);
}
// Byte b of x for wgmma: each 128-byte block holds lane t's words (bytes 16m + 4t, m = 0..7) together
__host__ __device__ inline int x_offset(int v, int b) {
    if (v != WGMMA) return b;
    const int blk = b >> 7, o = b & 127, m = o >> 4, t = (o >> 2) & 3;
    return blk * 128 + t * 32 + m * 4 + (b & 3);
}

// ---- the split consumer's page: pdecode.cu's own loads and mmas (mma_vectors), one page ------------
// pdecode.cu is compiled into this file, so the probe times the kernel's code as it is in the
// tree it is built from (HEAD, or a variant with a patch applied: build_variants.sh).
template <bool FP8, int V>
__device__ __forceinline__ void mma_page(float (&acc)[8][4], const unsigned char *page, const unsigned char *xs) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    constexpr int kVecs = kRowBytes / 16; // 16-byte vectors of a page row
    mma_vectors<FP8, 4>(acc, page + g * row_stride(V), (const uint4 *)xs, warp * (kVecs / kWarps), kVecs, g, t);
}

// ---- the wgmma consumer's page -------------------------------------------------------------------
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
template <bool FP8> __device__ __forceinline__ void wgmma_n8(float (&d)[4], const uint32_t (&a)[4], uint64_t db, int scale_d) {
    if (FP8)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d)
                     : "memory");
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d)
                     : "memory");
}

// Warpgroup h takes atoms 8h..8h+7 (1024 bytes of each row). The input's row-0 fragment is held
// by lanes 0-3 of the warpgroup's first warp (two 16-byte loads an atom); every other A register
// is zero. bf16: one accumulator over everything. FP8: an atom's 4 wgmmas sum into one of two
// accumulators (from zero), added in fp32 to acc once the atom's group is done.
// One atom's 4 wgmmas (k-steps of 32 bytes) into d, from zero (FP8) or accumulating (bf16).
template <bool FP8>
__device__ __forceinline__ void wgmma_atom(float (&d)[4], int &first, uint32_t atom_addr, const unsigned char *xa,
                                           bool holder) {
    // every lane loads (4 addresses a warp: one wavefront) and all but the holders zero it: a
    // load under `if (holder)` made ptxas serialize the wgmmas (C7511, "insufficient register
    // resources for the wgmma pipeline")
    const uint4 *xw = (const uint4 *)xa;
    uint4 lo = xw[0], hi = xw[1];
    if (!holder) lo = hi = make_uint4(0u, 0u, 0u, 0u);
    const uint32_t words[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    vk_wgmma_fence();
#pragma unroll
    for (int s = 0; s < 4; s++) {
        const uint32_t a[4] = {words[2 * s], 0u, words[2 * s + 1], 0u};
        wgmma_n8<FP8>(d, a, vk_desc_k_major(atom_addr + s * 32), FP8 ? s > 0 : !first);
        first = 0;
    }
    vk_wgmma_commit();
}

// Warpgroup h takes atoms 8h..8h+7 (1024 bytes of each row). The input's row-0 fragment is held
// by lanes 0-3 of the warpgroup's first warp (two 16-byte loads an atom); every other A register
// is zero. bf16: one accumulator over everything. FP8: an atom's 4 wgmmas sum into one of two
// accumulators (from zero), added in fp32 to acc once the atom's group is done.
template <bool FP8>
__device__ __forceinline__ void wgmma_page(float (&acc)[4], float (&d)[2][4], int &first, uint32_t page_addr,
                                           const unsigned char *xs) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, j0 = 8 * (warp >> 2);
    const bool holder = (warp & 3) == 0 && lane < 4;
    const unsigned char *xa = xs + j0 * 128 + (lane & 3) * 32;
    if constexpr (FP8) {
        wgmma_atom<true>(d[0], first, page_addr + j0 * 1024, xa, holder);
#pragma unroll
        for (int j = 1; j < 8; j++) {
            wgmma_atom<true>(d[j & 1], first, page_addr + (j0 + j) * 1024, xa + j * 128, holder);
            vk_wgmma_wait<1>(); // atom j - 1 is done: add its sums
            vk_wgmma_pin(d[(j - 1) & 1]);
#pragma unroll
            for (int i = 0; i < 4; i++) acc[i] += d[(j - 1) & 1][i];
        }
        vk_wgmma_wait<0>(); // the page can go back to the producer only when its wgmmas are done
        vk_wgmma_pin(d[1]);
#pragma unroll
        for (int i = 0; i < 4; i++) acc[i] += d[1][i];
    } else {
#pragma unroll
        for (int j = 0; j < 8; j++) { // one group in flight besides (as pdecode-wgmma-consumer.patch's
            // wg_page_bf16: a wgmma's A registers stay in use until its group is done)
            wgmma_atom<false>(acc, first, page_addr + (j0 + j) * 1024, xa + j * 128, holder);
            if (j > 0) vk_wgmma_wait<1>();
        }
        vk_wgmma_wait<0>();
        vk_wgmma_pin(acc);
    }
}
#endif

// out[block][8 warps][8 rows]: each warp's (mma) or warpgroup's (wgmma, in warps 0 and 4) partial sums.
template <bool FP8, int V>
__global__ void __launch_bounds__(kProbeThreads, 1) consume(const unsigned char *w, const unsigned char *x, int passes,
                                                       float *out) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *smem = (unsigned char *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    unsigned char *xs = smem + kProbePages * page_stride(V);
    for (int i = threadIdx.x; i < kProbePages * kPageBytes; i += blockDim.x) {
        const int p = i / kPageBytes, r = (i / kRowBytes) % 8, b = i % kRowBytes;
        smem[p * page_stride(V) + page_offset(V, r, b)] = w[i];
    }
    for (int b = threadIdx.x; b < kRowBytes; b += blockDim.x) xs[x_offset(V, b)] = x[b];
    __syncthreads();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float sums[8] = {0, 0, 0, 0, 0, 0, 0, 0}; // lane-held sums, as the warp's rows 2t, 2t + 1 below
    if constexpr (V != WGMMA) {
        float acc[8][4] = {};
        for (int it = 0; it < passes; it++)
            for (int p = 0; p < kProbePages; p++) {
                mma_page<FP8, V>(acc, smem + p * page_stride(V), xs);
                __syncwarp();
            }
        for (int c = 0; c < 2; c++)
            sums[c] = ((acc[0][c] + acc[1][c]) + (acc[2][c] + acc[3][c])) + ((acc[4][c] + acc[5][c]) + (acc[6][c] + acc[7][c]));
    } else {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        float acc[4] = {0, 0, 0, 0}, d[2][4] = {};
        int first = 1;
#pragma unroll 1
        for (int it = 0; it < passes; it++)
#pragma unroll 1
            for (int p = 0; p < kProbePages; p++) wgmma_page<FP8>(acc, d, first, vk_smem_u32(smem + p * kPageBytes), xs);
        sums[0] = acc[0], sums[1] = acc[1]; // row 0 of D: columns 2t, 2t + 1 in lanes t < 4 of warp 0 of the group
#endif
    }
    const int g = lane >> 2, t = lane & 3;
    if (g == 0 && (V != WGMMA || (warp & 3) == 0)) {
        float *o = out + ((size_t)blockIdx.x * kWarps + warp) * 8;
        o[2 * t] = sums[0], o[2 * t + 1] = sums[1];
    }
}

// ---- host ------------------------------------------------------------------------------------------
static float e4m3_value(uint8_t c) {
    const int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
    const float v = e ? ldexpf(1.0f + m / 8.0f, e - 7) : ldexpf(m / 8.0f, -6);
    return s ? -v : v;
}
static float bf16_value(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

template <bool FP8, int V> static int run(const unsigned char *dw, const unsigned char *dx, const unsigned char *hw,
                                          const unsigned char *hx, float *dout, int sms) {
    auto k = consume<FP8, V>;
    const size_t smem = 1024 + (size_t)kProbePages * page_stride(V) + kRowBytes;
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    // check: one pass
    k<<<sms, kProbeThreads, smem>>>(dw, dx, 1, dout);
    float *out = (float *)malloc((size_t)sms * kWarps * 8 * sizeof(float));
    cudaError_t e = cudaMemcpy(out, dout, (size_t)sms * kWarps * 8 * sizeof(float), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        printf("%-18s %s: %s\n", kNames[V], FP8 ? "fp8 " : "bf16", cudaGetErrorString(e));
        return 1;
    }
    // the 8 rows' dot products over the pages, in double; bound: FP8 2^-12 (tensor cores' sums of
    // 128 products) and bf16 2^-16 of the sum of |products|
    double worst = 0.0;
    for (int r = 0; r < 8; r++) {
        double ref = 0.0, mag = 0.0;
        for (int p = 0; p < kProbePages; p++)
            for (int i = 0; i < (FP8 ? kRowBytes : kRowBytes / 2); i++) {
                const size_t wi = (size_t)p * kPageBytes + (size_t)r * kRowBytes;
                const double a = FP8 ? e4m3_value(hw[wi + i]) : bf16_value(((const uint16_t *)(hw + wi))[i]);
                const double b = FP8 ? e4m3_value(hx[i]) : bf16_value(((const uint16_t *)hx)[i]);
                ref += a * b, mag += fabs(a * b);
            }
        const double bound = mag * (FP8 ? 1.0 / 4096 : 1.0 / 65536);
        for (int b = 0; b < sms; b++) {
            double got = 0.0;
            for (int wp = 0; wp < kWarps; wp++)
                if (V != WGMMA || (wp & 3) == 0) got += out[((size_t)b * kWarps + wp) * 8 + r];
            worst = fmax(worst, fabs(got - ref) / bound);
        }
    }
    free(out);
    // time: many passes
    const int passes = 2000;
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    k<<<sms, kProbeThreads, smem>>>(dw, dx, 10, dout); // warm
    cudaEventRecord(a);
    k<<<sms, kProbeThreads, smem>>>(dw, dx, passes, dout);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, a, b);
    const double ns_page = ms * 1e6 / ((double)passes * kProbePages);
    printf("%-18s %s: %6.1f ns a page an SM (%5.1f TB/s of weights over %d SMs); check: worst |err| %.3f of the bound: %s\n",
           kNames[V], FP8 ? "fp8 " : "bf16", ns_page, kPageBytes * (double)sms / ns_page * 1e-3, sms, worst,
           worst <= 1.0 ? "ok" : "FAILED");
    return worst <= 1.0 ? 0 : 1;
}

int main(void) {
    int dev = 0, sms = 0, major = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (major != 9) {
        printf("SKIPPED: needs a compute capability 9.x GPU\n");
        return 0;
    }
    unsigned char *hw8 = (unsigned char *)malloc(kProbePages * kPageBytes), *hx8 = (unsigned char *)malloc(kRowBytes);
    unsigned char *hw16 = (unsigned char *)malloc(kProbePages * kPageBytes), *hx16 = (unsigned char *)malloc(kRowBytes);
    srand(12345);
    for (int i = 0; i < kProbePages * kPageBytes; i++) {
        uint8_t c = (uint8_t)(rand() & 0xff);
        if ((c & 0x7f) == 0x7f) c ^= 1; // no NaN codes
        hw8[i] = c;
    }
    for (int i = 0; i < kRowBytes; i++) {
        uint8_t c = (uint8_t)(rand() & 0xff);
        if ((c & 0x7f) == 0x7f) c ^= 1;
        hx8[i] = c;
    }
    for (int i = 0; i < kProbePages * kPageBytes / 2; i++) ((uint16_t *)hw16)[i] = (uint16_t)(0x3c00 + (rand() % 0x200) - 0x100) | (rand() & 1) << 15;
    for (int i = 0; i < kRowBytes / 2; i++) ((uint16_t *)hx16)[i] = (uint16_t)(0x3c00 + (rand() % 0x200) - 0x100) | (rand() & 1) << 15;
    unsigned char *dw8, *dx8, *dw16, *dx16;
    float *dout;
    cudaMalloc(&dw8, kProbePages * kPageBytes), cudaMalloc(&dx8, kRowBytes);
    cudaMalloc(&dw16, kProbePages * kPageBytes), cudaMalloc(&dx16, kRowBytes);
    cudaMalloc(&dout, (size_t)sms * kWarps * 8 * sizeof(float));
    cudaMemcpy(dw8, hw8, kProbePages * kPageBytes, cudaMemcpyHostToDevice), cudaMemcpy(dx8, hx8, kRowBytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dw16, hw16, kProbePages * kPageBytes, cudaMemcpyHostToDevice), cudaMemcpy(dx16, hx16, kRowBytes, cudaMemcpyHostToDevice);
    int failed = 0;
    failed += run<true, MMA>(dw8, dx8, hw8, hx8, dout, sms);
    failed += run<true, MMA_PAD>(dw8, dx8, hw8, hx8, dout, sms);
    failed += run<true, WGMMA>(dw8, dx8, hw8, hx8, dout, sms);
    failed += run<false, MMA>(dw16, dx16, hw16, hx16, dout, sms);
    failed += run<false, MMA_PAD>(dw16, dx16, hw16, hx16, dout, sms);
    failed += run<false, WGMMA>(dw16, dx16, hw16, hx16, dout, sms);
    printf("page budget at HBM speed: %.0f ns a page an SM (4.8 TB/s over %d SMs)\n", kPageBytes * (double)sms / 4.8e3, sms);
    return failed ? 1 : 0;
}
